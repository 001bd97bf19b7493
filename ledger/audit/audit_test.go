package audit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/ledger"
)

// TestSoundLedger audits a sound ledger: no problem, and every count says
// what was checked.
func TestSoundLedger(t *testing.T) {
	f := build(t, fixtureOptions{})
	rep := runAudit(t, f.dir, ledger.AuditOptions{})
	if !rep.OK() {
		t.Fatalf("problems in a sound ledger: %v", rep.Problems)
	}
	signed := int64(0)
	for _, ev := range f.events {
		if ev.Signer != "" {
			signed++
		}
	}
	if rep.Events != f.size || rep.Checked != f.size || rep.Verified != signed || rep.Unverifiable != 0 {
		t.Errorf("events %d, checked %d, verified %d, not verifiable %d; want %d, %d, %d, 0", rep.Events, rep.Checked, rep.Verified, rep.Unverifiable, f.size, f.size, signed)
	}
	if specs := int64(len(f.seqOf(codec.KindAVIRSpec))); rep.Unsigned != specs {
		t.Errorf("unsigned %d, want the %d specifications", rep.Unsigned, specs)
	}
	if rep.Checkpoints < 10 || rep.Entries < 3*f.size || rep.Projections == 0 {
		t.Errorf("checkpoints %d, entries %d, projections %d", rep.Checkpoints, rep.Entries, rep.Projections)
	}
}

// TestUnregisteredKeyNotADivergence: bundles appended with an HMAC key
// given per call, never registered, cannot be verified by the audit: they
// are counted as such, with the key's fingerprint, and the ledger is sound.
func TestUnregisteredKeyNotADivergence(t *testing.T) {
	f := build(t, fixtureOptions{unregistered: true})
	rep := runAudit(t, f.dir, ledger.AuditOptions{})
	if !rep.OK() {
		t.Fatalf("problems: %v", rep.Problems)
	}
	bundles := int64(len(f.seqOf(codec.KindRVWW)))
	if rep.Unverifiable != bundles || len(rep.UnverifiableReasons) != 1 ||
		!strings.HasPrefix(rep.UnverifiableReasons[0].Reason, "key hmac:") || !strings.HasSuffix(rep.UnverifiableReasons[0].Reason, " not registered") {
		t.Errorf("not verifiable %d %v, want the %d bundles, key hmac:… not registered", rep.Unverifiable, rep.UnverifiableReasons, bundles)
	}
}

// TestAuditFrom audits the events from a sequence number on: the prefix's
// tree comes from its stored hashes, checked against the signed
// checkpoints.
func TestAuditFrom(t *testing.T) {
	f := build(t, fixtureOptions{})
	for _, from := range []int64{0, 1, f.midSize, f.size - 1, f.size} {
		rep := runAudit(t, f.dir, ledger.AuditOptions{From: from})
		if !rep.OK() || rep.Checked != f.size-from {
			t.Errorf("from %d: checked %d, problems %v", from, rep.Checked, rep.Problems)
		}
	}
	if _, err := runAuditErr(f.dir, ledger.AuditOptions{From: f.size + 1}); err == nil {
		t.Error("from beyond the log: no error")
	}
}

func runAuditErr(dir string, opts ledger.AuditOptions) (*ledger.AuditReport, error) {
	return auditDir(context.Background(), dir, opts)
}
