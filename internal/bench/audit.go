package bench

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/audit"
)

// goalAuditShare is the goal for the full audit: at least this
// share of the bare Ed25519 verification rate on all cores.
const goalAuditShare = 0.70

// auditFigure measures the full audit (package ledger/audit: every
// signature verified, the tree, checkpoints, index entries and
// projections recomputed and compared) of the big ledger in dir, closed
// and compacted (the scratch store in the ledger's directory, as `ledger
// audit` makes it), as BenchmarkAudit in ledger/audit does: each of
// sizes.Trials attempts audits the ledger, then verifies bare Ed25519
// signatures on GOMAXPROCS goroutines for as long as the audit took, so
// that both meet the machine in the same state. The fastest audit is
// reported beside the bare rate measured right after it; the goal is 70%
// of that rate.
func (b *bench) auditFigure(ctx context.Context, dir string) error {
	l, err := admit.Open(dir, ledger.Options{ReadOnly: true, Logger: b.log, Projectors: []ledger.Projector{index.New()}})
	if err != nil {
		return err
	}
	defer func() { _ = l.Close() }() // read-only: nothing to lose
	var bestEPS, bestBare float64
	var best *ledger.AuditReport
	for trial := range b.sizes.Trials {
		b.progress.Info("auditing the big ledger", "events", b.sizes.Events, "trial", trial+1, "of", b.sizes.Trials)
		start := time.Now()
		rep, err := audit.Run(ctx, l, ledger.AuditOptions{})
		if err != nil {
			return err
		}
		took := time.Since(start)
		if !rep.OK() || rep.Verified != int64(b.sizes.Events) {
			return fmt.Errorf("the audit verified %d of %d documents and found %d problems (%v)", rep.Verified, b.sizes.Events, len(rep.Problems)+int(rep.Omitted), rep.Problems)
		}
		bare, err := rate(ctx, runtime.GOMAXPROCS(0), took, verifyOp(b.sizes.Seed))
		if err != nil {
			return err
		}
		if eps := float64(rep.Events) / took.Seconds(); eps > bestEPS {
			bestEPS, bestBare, best = eps, bare, rep
		}
	}
	b.add(figure{Name: fmt.Sprintf("audit.events=%d", b.sizes.Events), Value: bestEPS, Unit: "events/s", Limit: bestBare,
		LimitName: "cpu: 1 Ed25519 verification per receipt, measured right after the audit for as long",
		Goal:      goalAuditShare * bestBare,
		GoalName:  fmt.Sprintf("at least %.0f%% of bare Ed25519 verifications on all cores (%.0f/s, issue)", 100*goalAuditShare, bestBare),
		Note: fmt.Sprintf("audit.Run of the compacted big ledger: %d signatures verified, %d index and %d projection entries compared, %d checkpoints; cpu limit %.0f/s",
			best.Verified, best.Entries, best.Projections, best.Checkpoints, bestBare)})
	return nil
}
