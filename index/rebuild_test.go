package index

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/rollback"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

// fill appends the corpus of cfg to l through the real append path, in
// calls of random sizes (1 to maxCall documents), with a rollback record
// after every rollbackEvery-th bundle (clean two times in three). The
// corpus is generated on other goroutines while earlier calls append. It
// returns the number of events appended.
func fill(tb testing.TB, l *admit.Ledger, cfg ledgertest.Config, maxCall, rollbackEvery int) int64 {
	tb.Helper()
	keys := cfg.Keys()
	opts := admit.Options{HMACKeys: keys.HMACKeys()}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x66696c6c))
	rbKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	calls := make(chan []admit.Submission, 4)
	genErr := make(chan error, 1)
	go func() {
		defer close(calls)
		var subs, pending []admit.Submission // rollbacks go in a call after their bundles
		bundles, next := 0, 1+rng.IntN(maxCall)
		send := func() {
			for _, batch := range [][]admit.Submission{subs, pending} {
				if len(batch) > 0 {
					calls <- batch
				}
			}
			subs, pending, next = nil, nil, 1+rng.IntN(maxCall)
		}
		err := ledgertest.Stream(cfg, func(d ledgertest.Doc) error {
			subs = append(subs, admit.Submission{Name: d.Name, Data: d.Data, Arrival: d.Arrival})
			if d.Kind == codec.KindRVWW {
				bundles++
				if rollbackEvery > 0 && bundles%rollbackEvery == 0 {
					at := d.Time.Add(time.Duration(1+rng.IntN(3600)) * time.Second)
					doc, err := rollback.Sign(d.Subject, rng.IntN(3) != 0, at, "automatic rollback", rbKey)
					if err != nil {
						return err
					}
					pending = append(pending, admit.Submission{Name: "rollback-" + d.Name, Data: doc, Arrival: d.Arrival})
				}
			}
			if len(subs) >= next {
				send()
			}
			return nil
		})
		send()
		genErr <- err
	}()
	var n int64
	var appendErr error
	for batch := range calls {
		if appendErr != nil {
			continue // drain
		}
		out, err := l.Append(context.Background(), batch, opts)
		if err != nil {
			appendErr = err
			continue
		}
		for _, o := range out {
			if o.Status != ledger.StatusAppended && appendErr == nil {
				appendErr = fmt.Errorf("%s: %s %s", o.Name, o.Status, o.Reason)
			}
			n++
		}
	}
	if err := <-genErr; err != nil {
		tb.Fatal(err)
	}
	if appendErr != nil {
		tb.Fatal(appendErr)
	}
	return n
}

// digestProjections returns every projection key and a digest of its
// value, in key order.
func digestProjections(t *testing.T, l *admit.Ledger) ([]string, [][32]byte) {
	t.Helper()
	snap := l.Snapshot()
	defer snap.Close()
	var keys []string
	var sums [][32]byte
	err := snap.Range(ledger.ProjectionPrefix, prefixEnd(ledger.ProjectionPrefix), func(k, v []byte) (bool, error) {
		keys = append(keys, string(k))
		sums = append(sums, sha256.Sum256(v))
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys, sums
}

// TestRebuildEqualsIncremental appends a generated ledger of more than 100k
// events (receipts, bundles, attestations with their specifications, and
// rollback records) in calls of random sizes, then rebuilds the
// projections from the log and demands the same keys with the same values.
func TestRebuildEqualsIncremental(t *testing.T) {
	if testing.Short() {
		t.Skip("appends 100k+ generated events; skipped under -short")
	}
	l := openTest(t)
	cfg := ledgertest.Config{Seed: 20260105, Receipts: 45_000, Bundles: 40_000, Attestations: 15_000, Specs: true,
		Span: 120 * 24 * time.Hour}
	start := time.Now()
	n := fill(t, l, cfg, 2000, 50)
	if n < 100_000 {
		t.Fatalf("only %d events", n)
	}
	built := time.Since(start)
	keys, sums := digestProjections(t, l)
	start = time.Now()
	if err := l.Rebuild(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	rebuilt := time.Since(start)
	keys2, sums2 := digestProjections(t, l)
	t.Logf("%d events appended in %v; %d projection keys; rebuilt in %v", n, built.Round(time.Millisecond), len(keys), rebuilt.Round(time.Millisecond))

	for i, j := 0, 0; i < len(keys) || j < len(keys2); {
		switch {
		case j >= len(keys2) || i < len(keys) && keys[i] < keys2[j]:
			t.Errorf("rebuild lost %q", keys[i])
			i++
		case i >= len(keys) || keys2[j] < keys[i]:
			t.Errorf("rebuild added %q", keys2[j])
			j++
		default:
			if sums[i] != sums2[j] {
				t.Errorf("rebuild changed the value of %q", keys[i])
			}
			i++
			j++
		}
	}
	// Every kind of projection is there.
	kinds := map[string]int{}
	all := [][]byte{pAgent, pAgentDay, pAgentTask, pSigner, pSignerDay, pTier, pSystem, pVerifier, pRollup, pBundle, pRollback, pTask, pTaskBundle, pRegression,
		pAgentEvent, pSubjectEvent}
	for _, k := range keys {
		for _, p := range all {
			if strings.HasPrefix(k, string(p)) {
				kinds[string(p)]++
			}
		}
	}
	for _, p := range all {
		if kinds[string(p)] == 0 {
			t.Errorf("no %s keys", p)
		}
	}
}
