package audit

import (
	"context"

	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
)

// Run audits l: ledger.Ledger.Audit with opts, where opts.Verify defaults
// to the admission layer's document check (l.AuditVerifier: signatures,
// HMACs with the registered keys, the leaves' facts) and opts.Projectors
// to the index's projections. The report counts the signatures verified,
// the documents that could not be (an HMAC key that is not registered:
// not a divergence), the checkpoints, index and projection entries
// compared, and lists every divergence with its event. Memory is bounded
// whatever the ledger's size (see ledger.Ledger.Audit).
func Run(ctx context.Context, l *admit.Ledger, opts ledger.AuditOptions) (*ledger.AuditReport, error) {
	if opts.Verify == nil && !opts.AgainstOnly {
		v, err := l.AuditVerifier()
		if err != nil {
			return nil, err
		}
		opts.Verify = v
	}
	if opts.Projectors == nil {
		opts.Projectors = []ledger.Projector{index.New()}
	}
	return l.Audit(ctx, opts)
}

// Dir opens the ledger in dir read-only (a damaged one too, for
// diagnosis), runs the full audit and closes it: what a program without a
// ledger open of its own (a benchmark, a cron job) calls.
func Dir(ctx context.Context, dir string, opts ledger.AuditOptions) (*ledger.AuditReport, error) {
	l, err := admit.Open(dir, ledger.Options{ReadOnly: true, AllowDamaged: true, Projectors: []ledger.Projector{index.New()}})
	if err != nil {
		return nil, err
	}
	defer func() { _ = l.Close() }() // read-only: nothing to lose
	return Run(ctx, l, opts)
}
