package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/klauspost/compress/zstd"
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
	defer l.Close()
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
	enc.Close()
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
