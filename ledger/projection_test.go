package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/proofledger/ledger/proof"
)

// countProjector counts events under x/count; it fails in Project while
// fail is set.
type countProjector struct{ fail *bool }

func (countProjector) Name() string { return "count" }
func (p countProjector) Begin() ProjectionBatch {
	return &countBatch{fail: p.fail}
}

type countBatch struct {
	fail *bool
	n    int
	read bool
	base uint64
}

var countKey = []byte("x/count")

func (b *countBatch) Project(w Writer, ev *Event) error {
	if *b.fail {
		return errors.New("projector failed on purpose")
	}
	if !b.read {
		v, err := w.Get(countKey)
		switch {
		case err == nil && len(v) == 8:
			b.base, _ = be64(countKey, v)
		case err != nil && !errors.Is(err, ErrNotFound):
			return err
		}
		b.read = true
	}
	b.n++
	return nil
}

func (b *countBatch) Flush(w Writer) error {
	if b.n == 0 {
		return nil
	}
	return w.Set(countKey, u64(b.base+uint64(b.n)))
}

// TestInterruptedRebuildIsStale checks that a rebuild that fails leaves the
// projections marked stale, across a reopen: appends are refused with
// ErrStale and nothing is written, until a rebuild completes.
func TestInterruptedRebuildIsStale(t *testing.T) {
	fail := false
	opts := Options{Projectors: []Projector{countProjector{fail: &fail}}}
	l := newLedger(t, opts)
	dir := l.dir
	ctx := context.Background()
	if out, err := l.Append(ctx, []*Entry{rawEntry(0)}); err != nil || out[0].Status != StatusAppended {
		t.Fatalf("append: %v %+v", err, out)
	}
	if l.Stale() {
		t.Fatal("fresh ledger reports stale projections")
	}
	fail = true
	if err := l.Rebuild(ctx, nil); err == nil {
		t.Fatal("rebuild with a failing projector succeeded")
	}
	if !l.Stale() {
		t.Fatal("failed rebuild left the projections marked fresh")
	}
	fail = false
	before := dump(t, l)
	if _, err := l.Append(ctx, []*Entry{rawEntry(1)}); !errors.Is(err, ErrStale) {
		t.Fatalf("append over stale projections: %v, want ErrStale", err)
	}
	if after := dump(t, l); len(after) != len(before) {
		t.Fatalf("refused append changed the store: %d keys, was %d", len(after), len(before))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	if !l.Stale() {
		t.Fatal("stale mark lost on reopen")
	}
	if err := l.Rebuild(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if l.Stale() {
		t.Fatal("completed rebuild left the projections stale")
	}
	if out, err := l.Append(ctx, []*Entry{rawEntry(1)}); err != nil || out[0].Status != StatusAppended {
		t.Fatalf("append after rebuild: %v %+v", err, out)
	}
	if v, err := getCopy(l.db, countKey); err != nil || len(v) != 8 || binary.BigEndian.Uint64(v) != 2 {
		t.Fatalf("count projection: %v %v, want 2", v, err)
	}
}

// passRules admits everything and derives nothing: enough Rules for Open
// to rebuild stale derived entries.
type passRules struct{}

func (passRules) Begin() RuleBatch         { return passBatch{} }
func (passRules) Keyspaces() [][]byte      { return [][]byte{[]byte("r/")} }
func (passRules) Entries(*proof.Leaf) []KV { return nil }

type passBatch struct{}

func (passBatch) Admit(Reader, *Entry) (*Refusal, error) { return nil, nil }
func (passBatch) Appended(*proof.Leaf)                   {}

// TestOpenRebuildFailure checks that a write open whose rebuild of stale
// derived entries fails returns the rebuild's error, closed (it used to
// close the store twice, and Pebble panicked), and that the next open
// rebuilds.
func TestOpenRebuildFailure(t *testing.T) {
	fail := false
	opts := Options{Projectors: []Projector{countProjector{fail: &fail}}, Rules: passRules{}}
	l := newLedger(t, opts)
	dir := l.dir
	ctx := context.Background()
	appendRaw(t, l, 0, 3)
	fail = true
	if err := l.Rebuild(ctx, nil); err == nil {
		t.Fatal("rebuild with a failing projector succeeded")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err := Open(dir, opts); err == nil || !strings.Contains(err.Error(), "projector failed on purpose") {
		if l != nil {
			_ = l.Close()
		}
		t.Fatalf("open with a failing rebuild: %v, want the rebuild's error", err)
	}
	fail = false
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("open after a failed one: %v", err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	if l.Stale() {
		t.Fatal("the open's rebuild left the derived entries stale")
	}
	if v, err := getCopy(l.db, countKey); err != nil || len(v) != 8 || binary.BigEndian.Uint64(v) != 3 {
		t.Fatalf("count projection: %v %v, want 3", v, err)
	}
}

// TestZstdPayloadStillReads checks that a payload stored zstd-compressed
// (codec 1, as versions before 2026-11 wrote documents of 512 bytes or
// more) decodes to the original bytes, and that new payloads are raw.
func TestZstdPayloadStillReads(t *testing.T) {
	l := newLedger(t, Options{})
	doc := bytes.Repeat([]byte(`{"receipt_id":"x","details":[1,2,3]}`), 40)
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	old := enc.EncodeAll(doc, []byte{payloadZstd})
	_ = enc.Close() // EncodeAll only: nothing buffered to flush
	for name, v := range map[string][]byte{"zstd": old, "raw": encodePayload(doc)} {
		got, err := l.decodePayload(v)
		if err != nil || !bytes.Equal(got, doc) {
			t.Errorf("%s payload: %d bytes, %v; want the original %d bytes", name, len(got), err, len(doc))
		}
	}
	if v := encodePayload(doc); v[0] != payloadRaw {
		t.Errorf("new payload codec %d, want raw", v[0])
	}
}

// versionedCount is countProjector with a layout version.
type versionedCount struct {
	countProjector
	v int
}

func (p versionedCount) DerivedVersion() int { return p.v }

// TestDerivedVersions: derived entries written without a component, or
// by another version of it, are out of date: a read-only open reports
// them stale, a write open rebuilds them (and records the versions); an
// empty ledger needs no rebuild; a write open without a component drops
// it from the record, so the next open with it rebuilds.
func TestDerivedVersions(t *testing.T) {
	fail := false
	count := func(v int) Options {
		return Options{Projectors: []Projector{versionedCount{countProjector{fail: &fail}, v}}}
	}
	counted := func(l *Ledger) uint64 {
		t.Helper()
		v, err := getCopy(l.db, countKey)
		if errors.Is(err, ErrNotFound) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return binary.BigEndian.Uint64(v)
	}
	dir := t.TempDir()
	if err := Init(dir, InitOptions{Origin: "derived.test", Key: testKey(3)}); err != nil {
		t.Fatal(err)
	}
	open := func(opts Options, readOnly bool) *Ledger {
		t.Helper()
		opts.ReadOnly = readOnly
		l, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	closeL := func(l *Ledger) {
		t.Helper()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// An empty ledger: nothing derived yet, nothing stale.
	l := open(count(1), true)
	if l.Stale() {
		t.Error("an empty ledger opened read-only is stale")
	}
	closeL(l)
	// Events appended without the projector.
	l = open(Options{}, false)
	appendRaw(t, l, 0, 3)
	closeL(l)
	for _, tc := range []struct {
		name     string
		opts     Options
		readOnly bool
		stale    bool
		count    uint64 // the projection after the open
	}{
		{"read-only with a new projector", count(1), true, true, 0},
		{"write open rebuilds", count(1), false, false, 3},
		{"read-only, same version", count(1), true, false, 3},
		{"read-only, newer version", count(2), true, true, 3},
		{"write open, newer version", count(2), false, false, 3},
		{"write open without it", Options{}, false, false, 3},
		{"read-only with it again", count(2), true, true, 3},
		{"write open with it again", count(2), false, false, 3},
	} {
		l := open(tc.opts, tc.readOnly)
		if l.Stale() != tc.stale {
			t.Errorf("%s: stale %v, want %v", tc.name, l.Stale(), tc.stale)
		}
		if got := counted(l); got != tc.count {
			t.Errorf("%s: count %d, want %d", tc.name, got, tc.count)
		}
		closeL(l)
	}
	// An event appended without the projector is counted once a write
	// open with it rebuilds.
	l = open(Options{}, false)
	appendRaw(t, l, 3, 1)
	closeL(l)
	if l = open(count(2), true); !l.Stale() {
		t.Error("the projection missed an event but is not stale")
	}
	closeL(l)
	l = open(count(2), false)
	if l.Stale() || counted(l) != 4 {
		t.Errorf("after the write open: stale %v, count %d, want 4", l.Stale(), counted(l))
	}
	closeL(l)
}
