package audit_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/audit"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

var benchReceipts = flag.Int("audit.receipts", 20000, "signed receipts in BenchmarkAudit's ledger")

// buildReceipts makes a ledger of n signed receipts in chains, of 1 to
// maxDetails checks each (0: the corpus generator's default, 20), appended
// in calls of 256, and compacts it.
func buildReceipts(b *testing.B, n, maxDetails int) string {
	b.Helper()
	ctx := context.Background()
	c, err := ledgertest.Generate(ledgertest.Config{Seed: 3, Receipts: n, MaxDetails: maxDetails})
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(b.TempDir(), "ledger")
	if err := ledger.Init(dir, ledger.InitOptions{Origin: origin, Key: testKey(1)}); err != nil {
		b.Fatal(err)
	}
	l, err := admit.Open(dir, ledger.Options{Projectors: []ledger.Projector{index.New()}})
	if err != nil {
		b.Fatal(err)
	}
	opts := admit.Options{TrustedSigners: c.Keys.TrustedSigners()}
	for i := 0; i < len(c.Docs); i += 256 {
		var subs []admit.Submission
		for _, d := range c.Docs[i:min(i+256, len(c.Docs))] {
			subs = append(subs, admit.Submission{Name: d.Name, Data: d.Data, Arrival: d.Arrival})
		}
		out, err := l.AppendWithRetry(ctx, subs, opts)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range out {
			if o.Status != ledger.StatusAppended {
				b.Fatalf("%s: %s %s", o.Name, o.Status, o.Reason)
			}
		}
	}
	if err := l.Compact(ctx); err != nil {
		b.Fatal(err)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	return dir
}

// bareVerifyRate runs bare Ed25519 verifications of a receipt-like message
// (the 64 hex digits of a content hash) on GOMAXPROCS goroutines for d and
// returns how many were done and in how long.
func bareVerifyRate(d time.Duration) (int64, time.Duration) {
	k := testKey(5)
	pub := k.Public().(ed25519.PublicKey)
	sum := sha256.Sum256([]byte("audit bench"))
	msg := []byte(hex.EncodeToString(sum[:]))
	sig := ed25519.Sign(k, msg)
	var n atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			c := int64(0)
			for time.Now().Before(deadline) {
				if !ed25519.Verify(pub, msg, sig) {
					panic("ed25519: a valid signature does not verify")
				}
				c++
			}
			n.Add(c)
		})
	}
	wg.Wait()
	return n.Load(), time.Since(start)
}

// BenchmarkAudit measures the full audit (every signature verified, the
// tree, checkpoints, index entries and projections recomputed and
// compared) of a ledger of signed receipts, in events per second, beside
// the bare Ed25519 verification rate on all cores measured in the same
// run: each iteration audits, then verifies bare signatures for as long as
// the audit took, so both meet the machine in the same state. The goal is
// a ratio (audit events/s over bare verifications/s) of at least 0.70.
// "receipts" are the corpus generator's (1 to 20 checks, about 1.6 KB);
// "small-receipts" have 1 to 3 checks, the size of the reference
// implementation's tier-0 vector, whose parse costs half as much.
//
//	go test ./ledger/audit -run '^$' -bench Audit -benchtime 3x [-audit.receipts N]
func BenchmarkAudit(b *testing.B) {
	for _, c := range []struct {
		name       string
		maxDetails int
	}{{"receipts", 0}, {"small-receipts", 3}} {
		b.Run(c.name, func(b *testing.B) { benchAudit(b, c.maxDetails) })
	}
}

func benchAudit(b *testing.B, maxDetails int) {
	n := *benchReceipts
	dir := buildReceipts(b, n, maxDetails)
	l, err := admit.Open(dir, ledger.Options{ReadOnly: true, Projectors: []ledger.Projector{index.New()}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = l.Close() }() // read-only: nothing to lose
	ctx := context.Background()
	var auditTime, bareTime time.Duration
	var events, bare int64
	for b.Loop() {
		start := time.Now()
		rep, err := audit.Run(ctx, l, ledger.AuditOptions{})
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		if !rep.OK() || rep.Verified != int64(n) {
			b.Fatalf("audit: verified %d of %d, problems %v", rep.Verified, n, rep.Problems)
		}
		auditTime += took
		events += rep.Events
		b.StopTimer()
		c, d := bareVerifyRate(took)
		bare += c
		bareTime += d
		b.StartTimer()
	}
	eps := float64(events) / auditTime.Seconds()
	bps := float64(bare) / bareTime.Seconds()
	b.ReportMetric(eps, "events/s")
	b.ReportMetric(bps, "ed25519/s")
	b.ReportMetric(eps/bps, "ratio")
}
