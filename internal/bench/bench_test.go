package bench

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

func TestOptionsCheck(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Options)
		bad     string // the error names this; "" for valid options
		bundles []int  // the bundle sizes of valid options after check
	}{
		{name: "full defaults", edit: func(*Options) {}, bundles: []int{10_000, 100_000, 1_000_000}},
		{name: "bundles sorted, repeats dropped", edit: func(o *Options) { o.Bundles = []int{1600, 400, 1600} }, bundles: []int{400, 1600}},
		{name: "16 events", edit: func(o *Options) { o.Events = 16 }, bundles: []int{10_000, 100_000, 1_000_000}},
		{name: "15 events", edit: func(o *Options) { o.Events = 15 }, bad: "events: 15 is below 16"},
		{name: "no appender", edit: func(o *Options) { o.Appenders = 0 }, bad: "appenders: 0 is below 1"},
		{name: "no bundle ledger", edit: func(o *Options) { o.Bundles = nil }, bad: "bundles: no bundle ledger size"},
		{name: "small bundle ledger", edit: func(o *Options) { o.Bundles = []int{1000, 99} }, bad: "bundles: 99 is below 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions(false)
			tt.edit(&o)
			got, err := o.check()
			if tt.bad != "" {
				if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tt.bad) {
					t.Fatalf("check: %v, want an ErrUsage naming %q", err, tt.bad)
				}
				return
			}
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			if !slices.Equal(got.Bundles, tt.bundles) {
				t.Errorf("bundles %v, want %v", got.Bundles, tt.bundles)
			}
		})
	}
	if q := DefaultOptions(true); !q.Quick || q.Events >= DefaultOptions(false).Events {
		t.Errorf("quick defaults %+v: want Quick and a smaller ledger", q)
	}
}

func TestParseBundleSizes(t *testing.T) {
	tests := []struct {
		in   string
		want []int // nil: an error
	}{
		{"10000,100000,1000000", []int{10_000, 100_000, 1_000_000}},
		{" 1_600 , 400,400", []int{400, 1600}},
		{"100", []int{100}},
		{"99", nil},
		{"1000,x", nil},
		{"", nil},
		{"1000,", nil},
		{"-500", nil},
	}
	for _, tt := range tests {
		got, err := ParseBundleSizes(tt.in)
		if tt.want == nil {
			if !errors.Is(err, ErrUsage) {
				t.Errorf("ParseBundleSizes(%q) = %v, %v; want an ErrUsage", tt.in, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseBundleSizes(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// testBench is a bench whose sizes suit a toy ledger, writing in dir.
func testBench(t *testing.T) *bench {
	t.Helper()
	opts := DefaultOptions(true)
	discard := slog.New(slog.DiscardHandler)
	return &bench{sizes: opts.sizes(), work: t.TempDir(), log: discard, progress: discard, rep: &benchReport{}}
}

// appendCalls builds a ledger of the corpus's documents in dir, appending
// them in calls of the given sizes, one after the other, and leaves it
// open.
func appendCalls(t *testing.T, b *bench, corpus *ledgertest.Corpus, calls []int) *admit.Ledger {
	t.Helper()
	l, err := b.initLedger(filepath.Join(b.work, "ledger"), "bench.test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	})
	next := 0
	for _, n := range calls {
		var subs []admit.Submission
		for _, d := range corpus.Docs[next : next+n] {
			subs = append(subs, admit.Submission{Name: d.Name, Data: d.Data, Arrival: d.Arrival})
		}
		next += n
		out, err := l.Append(context.Background(), subs, trust(corpus.Keys))
		if err == nil {
			err = appended(out)
		}
		if err != nil {
			t.Fatalf("append: %v", err)
		}
	}
	return l
}

func generate(t *testing.T, cfg ledgertest.Config) *ledgertest.Corpus {
	t.Helper()
	c, err := ledgertest.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCommitSizes checks that the disk limits replay the batches the
// ledger committed: one per Append call made one after the other.
func TestCommitSizes(t *testing.T) {
	b := testBench(t)
	corpus := generate(t, ledgertest.Config{Seed: 3, Receipts: 20, Agents: 3})
	calls := []int{1, 5, 1, 13}
	l := appendCalls(t, b, corpus, calls)
	got, err := commitSizes(l.Ledger)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{1, 5, 1, 13}
	if !slices.Equal(got, want) {
		t.Errorf("commit sizes %v, want %v", got, want)
	}
}

// TestLimitStores checks that the limit stores hold the data their
// figures read, for every event of the ledger: the lookup store an
// identity and digest entry, a leaf and a document per event and every
// tree hash; the leaf store every leaf; the projection store every
// projection key.
func TestLimitStores(t *testing.T) {
	b := testBench(t)
	ctx := context.Background()
	corpus := generate(t, ledgertest.Config{Seed: 4, Receipts: 30, Bundles: 20, Attestations: 6, Agents: 4})
	l := appendCalls(t, b, corpus, []int{len(corpus.Docs)})
	n := l.Size()

	db, err := b.openLimitStore(filepath.Join(b.work, "lookups"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	}()
	st, err := b.fillLookupStore(ctx, l.Ledger, db, 16)
	if err != nil {
		t.Fatal(err)
	}
	if want := 4*n + tlog.StoredHashCount(n); st.keys != want {
		t.Errorf("lookup store: %d keys, want %d (4 per event and %d tree hashes)", st.keys, want, tlog.StoredHashCount(n))
	}
	if len(st.present) != 16 {
		t.Errorf("sample of %d keys, want 16", len(st.present))
	}
	for _, k := range append(st.present, identityKey(codec.KindVRF, corpus.Docs[0].ID), identityKey(codec.KindRVWW, lastOf(corpus, codec.KindRVWW).ID)) {
		v, closer, err := db.Get(k)
		if err != nil {
			t.Errorf("get %q: %v", k, err)
			continue
		}
		if len(v) == 0 && k[0] != tagDocument {
			t.Errorf("get %q: empty value", k)
		}
		if err := closer.Close(); err != nil {
			t.Errorf("get %q: close: %v", k, err)
		}
	}

	leaves, err := b.openLimitStore(filepath.Join(b.work, "leaves"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := leaves.Close(); err != nil {
			t.Error(err)
		}
	}()
	if err := copyLeaves(ctx, l.Ledger, leaves); err != nil {
		t.Fatal(err)
	}
	if _, err := scanLeaves(ctx, leaves, int(n)); err != nil {
		t.Error(err)
	}
	if _, err := scanLeaves(ctx, leaves, int(n)+1); err == nil {
		t.Error("scanLeaves accepted a store short of one leaf")
	}

	proj, err := b.openLimitStore(filepath.Join(b.work, "projections"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := proj.Close(); err != nil {
			t.Error(err)
		}
	}()
	snap := l.Snapshot()
	defer snap.Close()
	var want int64
	if err := snap.RangePrefix(ledger.ProjectionPrefix, func(_, _ []byte) (bool, error) { want++; return true, nil }); err != nil {
		t.Fatal(err)
	}
	got, err := copyProjections(ctx, snap, proj)
	if err != nil {
		t.Fatal(err)
	}
	if got != want || got == 0 {
		t.Errorf("copied %d projection keys, the ledger has %d", got, want)
	}
	// A query's recorded reads, made on the copy, find the same keys.
	ops, err := record(snap, func(r index.Reader) error {
		return r.Range(ledger.ProjectionPrefix, ledger.PrefixEnd(ledger.ProjectionPrefix), func(_, _ []byte) (bool, error) { return true, nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replayReads(proj, ops); err != nil {
		t.Errorf("replaying a full range on the copy: %v", err)
	}
}

// lastOf returns the corpus's last document of a kind.
func lastOf(c *ledgertest.Corpus, kind codec.Kind) ledgertest.Doc {
	for i := len(c.Docs) - 1; i >= 0; i-- {
		if c.Docs[i].Kind == kind {
			return c.Docs[i]
		}
	}
	return ledgertest.Doc{}
}
