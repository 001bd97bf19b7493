package main

import (
	"fmt"

	"github.com/proofledger/ledger/ledger"
)

// writeAlreadyPresent reports a replay that --replay-ok accepts: the
// document is in the ledger already, byte for byte, which is what the
// caller wanted. JSON keeps the status replay and says so in the reason.
func writeAlreadyPresent(e *env, asJSON bool, o ledger.Outcome) error {
	o.Reason = fmt.Sprintf("already present, seq %d", o.Seq)
	if asJSON {
		return writeOutcome(e, true, o)
	}
	_, _ = fmt.Fprintf(e.stdout, "%s: already present, seq %d (%s %s)\n", o.Name, o.Seq, o.Kind, o.ID)
	return nil
}
