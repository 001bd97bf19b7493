package index

import (
	"context"
	"flag"
	"runtime/pprof"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

var (
	benchEvents         = flag.Int("index.events", 100_000, "events in the ledger BenchmarkRebuild rebuilds")
	benchRebuildBundles = flag.Bool("index.bundles", false, "BenchmarkRebuild: a ledger of witness bundles only (as `ledger bench` rebuilds)")
	benchReceipts       = flag.Int("index.receipts", 100_000, "receipts in the ledger of BenchmarkReputationAgent")
)

// openBench makes an empty ledger with the index projections.
func openBench(tb testing.TB) *admit.Ledger {
	tb.Helper()
	dir := tb.TempDir()
	if err := ledger.Init(dir, ledger.InitOptions{Origin: "index.bench"}); err != nil {
		tb.Fatal(err)
	}
	l, err := admit.Open(dir, ledger.Options{Projectors: []ledger.Projector{New()}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := l.Close(); err != nil {
			tb.Error(err)
		}
	})
	return l
}

// BenchmarkRebuild rebuilds every projection of a generated ledger of
// -index.events events (45% receipts, 40% bundles, 15% attestations, a
// rollback every 50 bundles) and reports events per second. Building the
// ledger is not timed.
func BenchmarkRebuild(b *testing.B) {
	l := openBench(b)
	n := *benchEvents
	cfg := ledgertest.Config{Seed: 1, Receipts: n * 45 / 100, Bundles: n * 40 / 100, Attestations: n * 15 / 100,
		Span: 120 * 24 * time.Hour}
	if *benchRebuildBundles {
		cfg = ledgertest.Config{Seed: 1, Bundles: n, Span: 180 * 24 * time.Hour, TextScale: 0.05}
	}
	events := fill(b, l, cfg, 4096, 50)
	b.ReportAllocs()
	var cpu time.Duration
	for b.Loop() {
		before := cpuTime()
		// The label marks the rebuild's goroutines in a CPU profile
		// (go tool pprof -tagfocus phase=rebuild).
		pprof.Do(context.Background(), pprof.Labels("phase", "rebuild"), func(ctx context.Context) {
			if err := l.Rebuild(ctx, nil); err != nil {
				b.Fatal(err)
			}
		})
		cpu += cpuTime() - before
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(events*int64(b.N)), "cpu-µs/event")
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events), "events")
}

// BenchmarkReputationAgent looks up one agent's reputation in a ledger of
// -index.receipts receipts over 32 agents (the busiest agent has the most
// receipts): all time (one point read and the task types), and since 30
// days before the last receipt (per-day aggregates).
func BenchmarkReputationAgent(b *testing.B) {
	l := openBench(b)
	cfg := ledgertest.Config{Seed: 2, Receipts: *benchReceipts, Span: 120 * 24 * time.Hour}
	fill(b, l, cfg, 4096, 0)
	snap := l.Snapshot()
	defer snap.Close()
	now := ledgertest.DefaultStart().Add(cfg.Span)
	agents, err := Agents(snap, time.Time{}, now)
	if err != nil || len(agents) == 0 {
		b.Fatalf("agents: %v %v", len(agents), err)
	}
	busiest := agents[0]
	for _, a := range agents {
		if a.Receipts() > busiest.Receipts() {
			busiest = a
		}
	}
	for _, tc := range []struct {
		name  string
		since time.Time
	}{{"all_time", time.Time{}}, {"since_30d", now.Add(-30 * 24 * time.Hour)}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rep, err := Agent(snap, busiest.Subject, tc.since)
				if err != nil || rep.Receipts() == 0 {
					b.Fatal(rep, err)
				}
				_ = rep.Score(now)
			}
		})
	}
	b.Run("ranking", func(b *testing.B) {
		for b.Loop() {
			if _, err := Agents(snap, time.Time{}, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Logf("busiest agent %s: %d receipts of %d", busiest.Subject, busiest.Receipts(), *benchReceipts)
}

var (
	benchIngestDocs      = flag.Int("index.ingest", 20_000, "documents BenchmarkIngest appends per iteration")
	benchIngestAppenders = flag.Int("index.appenders", 64, "concurrent appenders of BenchmarkIngest")
)

// BenchmarkIngest appends -index.ingest documents of each kind, one per
// Append call, from -index.appenders goroutines into a fresh ledger with
// the index projections, as `ledger bench` does, and reports events per
// second. It exists to profile the append path
// (go test ./index -run '^$' -bench Ingest -cpuprofile cpu.out);
// `ledger bench` gives the figures against their limits.
func BenchmarkIngest(b *testing.B) {
	for _, kind := range []struct {
		name string
		cfg  ledgertest.Config
	}{
		{"vrf", ledgertest.Config{Seed: 3, Receipts: *benchIngestDocs, Agents: 8 * *benchIngestAppenders, AgentSkew: -1}},
		{"rvww", ledgertest.Config{Seed: 3, Bundles: *benchIngestDocs}},
	} {
		b.Run(kind.name, func(b *testing.B) {
			corpus, err := ledgertest.Generate(kind.cfg)
			if err != nil {
				b.Fatal(err)
			}
			opts := admit.Options{HMACKeys: corpus.Keys.HMACKeys(), TrustedSigners: corpus.Keys.TrustedSigners()}
			lanes := make([][]ledgertest.Doc, *benchIngestAppenders)
			for _, d := range corpus.Docs {
				k := d.Index % len(lanes)
				if d.Kind == codec.KindVRF {
					k = int(xxhash.Sum64String(d.Subject) % uint64(len(lanes)))
				}
				lanes[k] = append(lanes[k], d)
			}
			b.ReportAllocs()
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				l := openBench(b)
				before := cpuTime()
				b.StartTimer()
				var wg sync.WaitGroup
				for _, docs := range lanes {
					wg.Go(func() {
						for _, d := range docs {
							out, err := l.AppendWithRetry(context.Background(), []admit.Submission{{Name: d.Name, Data: d.Data, Arrival: d.Arrival}}, opts)
							if err != nil || out[0].Status != ledger.StatusAppended {
								b.Errorf("%s: %v %+v", d.Name, err, out)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				cpu += cpuTime() - before
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(len(corpus.Docs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(len(corpus.Docs)*b.N), "cpu-µs/event")
		})
	}
}

// cpuTime is the CPU time, user and system, the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
