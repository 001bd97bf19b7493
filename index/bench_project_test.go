package index

import (
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

// benchStore is a map-backed ledger.Writer.
type benchStore map[string][]byte

func (m benchStore) Get(k []byte) ([]byte, error) {
	v, ok := m[string(k)]
	if !ok {
		return nil, ledger.ErrNotFound
	}
	return v, nil
}

func (m benchStore) Set(k, v []byte) error { m[string(k)] = append([]byte(nil), v...); return nil }

func (m benchStore) Delete(k []byte) error { delete(m, string(k)); return nil }

// BenchmarkProject projects the events of a generated ledger (20k events,
// mixed as BenchmarkRebuild's, read back from their leaves) in batches of
// ledger.RebuildChunk into an in-memory store: the index's share of a
// rebuild without Pebble's. It reports events per second and the CPU time
// per event (steadier than wall time on a busy machine).
func BenchmarkProject(b *testing.B) {
	l := openBench(b)
	n := 20_000
	cfg := ledgertest.Config{Seed: 1, Receipts: n * 45 / 100, Bundles: n * 40 / 100, Attestations: n * 15 / 100,
		Span: 120 * 24 * time.Hour}
	fill(b, l, cfg, 4096, 50)
	var evs []*ledger.Event
	if err := l.Scan(0, false, func(ev *ledger.Event) (bool, error) { evs = append(evs, ev); return true, nil }); err != nil {
		b.Fatal(err)
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].Seq < evs[j].Seq })
	// Pebble's background work must not count in the CPU time.
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	b.ReportAllocs()
	var cpu time.Duration
	for b.Loop() {
		before := cpuTime()
		w := benchStore{}
		for start := 0; start < len(evs); start += ledger.RebuildChunk {
			pb := New().Begin()
			for _, ev := range evs[start:min(start+ledger.RebuildChunk, len(evs))] {
				if err := pb.Project(w, ev); err != nil {
					b.Fatal(err)
				}
			}
			if err := pb.Flush(w); err != nil {
				b.Fatal(err)
			}
		}
		cpu += cpuTime() - before
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(len(evs)*b.N), "cpu-ns/event")
	b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
