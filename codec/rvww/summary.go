package rvww

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/proofledger/ledger/codec"
)

// Summary returns the kind-independent view of the bundle. Signer and
// SignatureChecked reflect the last Verify call: SignatureChecked is true
// only when a supplied key verified the HMAC, and Signer names that key.
func (b *Bundle) Summary() codec.Summary {
	s := codec.Summary{
		Kind:             codec.KindRVWW,
		ID:               b.ID(),
		Signed:           b.Signed(),
		SignatureChecked: b.sigChecked,
		Signer:           b.verifiedKey,
		Subject:          b.TaskUUID(),
		Time:             b.CreatedAt(),
	}
	fact := func(label, format string, args ...any) {
		s.Facts = append(s.Facts, codec.Fact{Label: label, Value: fmt.Sprintf(format, args...)})
	}
	if t := b.TaskText(); t != "" {
		fact("task id (text)", "%s", t)
	}
	fact("outcome", "%s", b.OutcomeName())
	fact("governance mode", "%s", b.ModeName())
	hash := hex.EncodeToString(b.Header.PolicyHash[:])
	if name := DefaultPolicyName(b.Header.PolicyHash); name != "" {
		fact("policy hash", "%s (default %s policy)", hash, name)
	} else {
		fact("policy hash", "%s (not a default policy)", hash)
	}
	fact("tool calls", "%d", b.Header.ToolCallCount)
	fact("total cost", "%d microdollars (%s)", b.Header.TotalCostMicrodollars, dollars(b.Header.TotalCostMicrodollars))
	fact("total latency", "%d ms", b.Header.TotalLatencyMS)
	fact("total tokens", "%d", b.Header.TotalTokens)
	fact("retries", "%d", b.Header.RetryCount)
	if names := b.SectionNames(); len(names) > 0 {
		fact("sections", "%s", strings.Join(names, ", "))
	} else {
		fact("sections", "none")
	}
	if b.EvidenceComplete() {
		fact("evidence complete", "yes")
	} else {
		var missing []string
		for _, m := range []struct {
			has  bool
			name string
		}{{b.HasSpec, "SPEC"}, {b.HasDiff, "DIFF"}, {b.HasTestLog, "TEST_LOG"}} {
			if !m.has {
				missing = append(missing, m.name)
			}
		}
		fact("evidence complete", "no (missing %s)", strings.Join(missing, ", "))
	}
	switch {
	case !b.Signed():
		fact("signature", "none (unsigned bundle)")
	case b.sigChecked:
		fact("signature", "HMAC-SHA256, verified with key %q", b.verifiedKey)
	default:
		fact("signature", "HMAC-SHA256, not verified")
	}
	return s
}

// dollars renders microdollars as "$0.000320".
func dollars(micro uint32) string {
	frac := strconv.FormatUint(uint64(micro%1e6), 10)
	return "$" + strconv.FormatUint(uint64(micro/1e6), 10) + "." + strings.Repeat("0", 6-len(frac)) + frac
}
