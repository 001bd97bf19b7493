package index

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
)

func openTest(t *testing.T) *admit.Ledger {
	t.Helper()
	dir := t.TempDir()
	if err := ledger.Init(dir, ledger.InitOptions{Origin: "index.test"}); err != nil {
		t.Fatal(err)
	}
	l, err := admit.Open(dir, ledger.Options{Projectors: []ledger.Projector{New()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	})
	return l
}

func read(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../testdata", p))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestProjectionsOfSamples(t *testing.T) {
	l := openTest(t)
	key, err := keys.LoadHMACKey("../testdata/vectors/rvww/hmac_key.txt")
	if err != nil {
		t.Fatal(err)
	}
	var subs []admit.Submission
	for _, p := range []string{
		"vrf/chain_1.json", "vrf/chain_2.json", "vrf/chain_3.json", "vrf/ref_partial.json", "vrf/ref_fail.json",
		"vectors/avir/01_verified_L2.attestation.json", "avir/partial_signed.attestation.json",
		"rvww/valid_solved_autonomous_signed.rvww", "rvww/valid_failed_approved_signed.rvww",
		"rvww/policy_denied_tool_restricted.rvww", "rvww/policy_custom_hash.rvww",
	} {
		subs = append(subs, admit.Submission{Name: p, Data: read(t, p)})
	}
	out, err := l.Append(context.Background(), subs, admit.Options{HMACKeys: []keys.HMACKey{key}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Status != ledger.StatusAppended {
			t.Fatalf("%s: %s %s", o.Name, o.Status, o.Reason)
		}
	}
	snap := l.Snapshot()
	defer snap.Close()
	ag, err := Agent(snap, "agent-7f3a", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if ag.Pass != 3 || ag.Receipts() != 3 {
		t.Errorf("agent-7f3a: %+v", ag.Reputation)
	}
	now := ag.Last
	if s := ag.Score(now); s <= PriorSuccess || s >= 1 {
		t.Errorf("score of 3 fresh passes = %v, want between the prior and 1", s)
	}
	tot, err := Aggregate(snap, time.Time{}, time.Time{}, AnyBundle)
	if err != nil {
		t.Fatal(err)
	}
	if tot.Tasks() != 4 || tot.Solved+tot.Failed+tot.Skipped+tot.Errors != 4 {
		t.Errorf("totals %+v", tot)
	}
	if tot.PolicyUnknown != 1 {
		t.Errorf("policy unknown = %d, want 1 (the custom policy is not registered)", tot.PolicyUnknown)
	}
	if tot.Violations != 1 {
		t.Errorf("violations = %d, want 1 (the denied tool)", tot.Violations)
	}
	sys, err := Systems(snap)
	if err != nil || len(sys) != 2 {
		t.Fatalf("systems %v %v", sys, err)
	}
	tiers, err := TierVerdicts(snap)
	if err != nil {
		t.Fatal(err)
	}
	if tiers[0]["pass"] < 3 {
		t.Errorf("tier verdicts %v", tiers)
	}

	// Rebuilding gives the same keys and values.
	before := projections(t, l)
	if err := l.Rebuild(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	after := projections(t, l)
	if len(before) != len(after) {
		t.Fatalf("rebuild: %d keys, incremental %d", len(after), len(before))
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("rebuild changed %q", k)
		}
	}
}

func projections(t *testing.T, l *admit.Ledger) map[string]string {
	t.Helper()
	snap := l.Snapshot()
	defer snap.Close()
	out := map[string]string{}
	err := snap.Range(ledger.ProjectionPrefix, prefixEnd(ledger.ProjectionPrefix), func(k, v []byte) (bool, error) {
		out[string(k)] = string(v)
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPercentileMatchesReference(t *testing.T) {
	vals := []uint32{5, 1, 9, 3, 3, 7, 100, 2}
	tot := &Totals{}
	// Split across three histograms, as days would be.
	for _, part := range [][]uint32{vals[:3], vals[3:6], vals[6:]} {
		r := &rollup{}
		for _, v := range part {
			r.add(&bundleRec{latency: v})
		}
		_, lat, err := decodeRollup(r.encode())
		if err != nil {
			t.Fatal(err)
		}
		tot.addRollup(r, lat, true)
	}
	sorted := []uint32{1, 2, 3, 3, 5, 7, 9, 100}
	for _, p := range []int{0, 50, 95, 100} {
		idx := p * len(sorted) / 100
		if idx > len(sorted)-1 {
			idx = len(sorted) - 1
		}
		if got := tot.Percentile(p); got != sorted[idx] {
			t.Errorf("p%d = %d, want %d", p, got, sorted[idx])
		}
	}
}
