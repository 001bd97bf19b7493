package scorecard

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

var (
	benchSizes = flag.String("scorecard.sizes", "10000,100000", "comma-separated bundle counts of the scorecard and trend benchmarks (add 1000000 for the 1M figure; building it takes minutes)")
	benchCache = flag.String("scorecard.cache", "", "keep the generated benchmark ledgers in this directory and reuse them in later runs")
)

// benchSpan is how long the benchmark bundles' creation times spread over.
const benchSpan = 180 * 24 * time.Hour

func benchConfig(n int) ledgertest.Config {
	return ledgertest.Config{Seed: 35, Bundles: n, Span: benchSpan}
}

func sizeName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}

func sizes(b *testing.B) []int {
	var out []int
	for _, s := range strings.Split(*benchSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			b.Fatalf("-scorecard.sizes: %q is not a positive count", s)
		}
		out = append(out, n)
	}
	return out
}

// benchLedger returns a ledger of n generated bundles (in -scorecard.cache
// when set, built there once and reused), opened read-only, and the end of
// its bundle times.
func benchLedger(b *testing.B, n int) (*admit.Ledger, time.Time) {
	b.Helper()
	end := ledgertest.DefaultStart().Add(benchSpan)
	dir := filepath.Join(b.TempDir(), "ledger")
	if *benchCache != "" {
		dir = filepath.Join(*benchCache, "bundles-"+strconv.Itoa(n))
	}
	if l, err := admit.Open(dir, ledger.Options{ReadOnly: true}); err == nil {
		size := l.Size()
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		if size == int64(n) {
			return openReadOnly(b, dir), end
		}
		b.Fatalf("%s holds %d events, not %d bundles: remove it", dir, size, n)
	}
	build := dir + ".building"
	if err := os.RemoveAll(build); err != nil {
		b.Fatal(err)
	}
	if err := ledger.Init(build, ledger.InitOptions{Origin: "scorecard.bench"}); err != nil {
		b.Fatal(err)
	}
	l, err := admit.Open(build, ledger.Options{Projectors: []ledger.Projector{index.New()}})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := fillBundles(l, benchConfig(n)); err != nil {
		_ = l.Close() // b.Fatal below reports the failure
		b.Fatal(err)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("built a ledger of %d bundles in %v", n, time.Since(start).Round(time.Second))
	if err := os.Rename(build, dir); err != nil {
		b.Fatal(err)
	}
	return openReadOnly(b, dir), end
}

func openReadOnly(b *testing.B, dir string) *admit.Ledger {
	l, err := admit.Open(dir, ledger.Options{ReadOnly: true, Projectors: []ledger.Projector{index.New()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := l.Close(); err != nil {
			b.Error(err)
		}
	})
	return l
}

// fillBundles appends the corpus of cfg in calls of 4096 documents,
// generating the next call while the previous one appends.
func fillBundles(l *admit.Ledger, cfg ledgertest.Config) error {
	opts := admit.Options{HMACKeys: cfg.Keys().HMACKeys()}
	calls := make(chan []admit.Submission, 2)
	genErr := make(chan error, 1)
	go func() {
		defer close(calls)
		var subs []admit.Submission
		err := ledgertest.Stream(cfg, func(d ledgertest.Doc) error {
			subs = append(subs, admit.Submission{Name: d.Name, Data: d.Data, Arrival: d.Arrival})
			if len(subs) == ledger.RebuildChunk {
				calls <- subs
				subs = nil
			}
			return nil
		})
		if len(subs) > 0 {
			calls <- subs
		}
		genErr <- err
	}()
	var appendErr error
	for batch := range calls {
		if appendErr != nil {
			continue
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
		}
	}
	if err := <-genErr; err != nil {
		return err
	}
	return appendErr
}

// BenchmarkScorecard30d builds the scorecard of the last 30 days (from a
// "now" an hour after the last bundle, so the window starts mid-day) over
// ledgers of generated bundles spread over 180 days: what `ledger
// scorecard --since 30d` computes once the ledger is open.
func BenchmarkScorecard30d(b *testing.B) {
	for _, n := range sizes(b) {
		b.Run(sizeName(n), func(b *testing.B) {
			l, end := benchLedger(b, n)
			snap := l.Snapshot()
			defer snap.Close()
			now := end.Add(time.Hour)
			w := Window{Since: now.Add(-30 * 24 * time.Hour), Filter: index.AnyBundle}
			var rep *Report
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if rep, err = Build(snap, w, DefaultCriteria()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rep.Metrics.TotalTasks), "bundles_in_window")
			b.ReportMetric(float64(rep.DaysRead), "rollups_read")
			b.ReportMetric(float64(rep.BundlesRead), "bundles_read")
		})
	}
}

// BenchmarkTrend computes the whole trend by day, week and month over the
// same ledgers.
func BenchmarkTrend(b *testing.B) {
	for _, n := range sizes(b) {
		b.Run(sizeName(n), func(b *testing.B) {
			l, _ := benchLedger(b, n)
			snap := l.Snapshot()
			defer snap.Close()
			for _, g := range []Granularity{Day, Week, Month} {
				b.Run(g.String(), func(b *testing.B) {
					var rows []Row
					b.ReportAllocs()
					for b.Loop() {
						var err error
						if rows, _, err = Trend(snap, g, Window{Filter: index.AnyBundle}); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(len(rows)), "periods")
				})
			}
		})
	}
}
