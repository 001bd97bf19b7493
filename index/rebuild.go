package index

import (
	"bytes"

	"github.com/cespare/xxhash/v2"

	"github.com/proofledger/ledger/ledger"
)

// ForRebuild implements ledger.Rebuilder. A rebuild has cleared the
// projection keyspace and is its only writer while it runs, so a
// projection key it has not written is absent: a filter of the keys it
// wrote answers most reads of absent keys without a Pebble lookup, which
// would otherwise wade through the old, range-deleted projections still in
// the LSM. A filter hit (present, or a false positive) reads the store.
func (ix *Index) ForRebuild(events int64) ledger.Projector {
	return &rebuilding{written: newKeyFilter(events * rebuildKeysPerEvent)}
}

// rebuilding is the index as a rebuild runs it.
type rebuilding struct {
	written *keyFilter
}

func (*rebuilding) Name() string { return "index" }

func (r *rebuilding) Begin() ledger.ProjectionBatch {
	return &rebuildBatch{batch: &batch{cache: map[string]record{}, blind: map[string][]byte{}}, written: r.written}
}

// rebuildBatch is a batch whose reads and writes go through the filter.
type rebuildBatch struct {
	*batch
	written *keyFilter
}

func (b *rebuildBatch) Project(w ledger.Writer, ev *ledger.Event) error {
	return b.batch.Project(filteredWriter{w, b.written}, ev)
}

func (b *rebuildBatch) Flush(w ledger.Writer) error {
	// Keys never read need not be in the filter (they would only raise
	// its false positives).
	if err := b.batch.flushBlind(w); err != nil {
		return err
	}
	return b.batch.Flush(filteredWriter{w, b.written})
}

// filteredWriter answers reads of keys the rebuild has not written.
type filteredWriter struct {
	ledger.Writer
	written *keyFilter
}

func (w filteredWriter) Get(key []byte) ([]byte, error) {
	if bytes.HasPrefix(key, ledger.ProjectionPrefix) && !w.written.mayContain(key) {
		return nil, ledger.ErrNotFound
	}
	return w.Writer.Get(key)
}

func (w filteredWriter) Set(key, value []byte) error {
	w.written.add(key)
	return w.Writer.Set(key, value)
}

// maxKeyFilterBits caps a key filter at 64 MB (about 13M events at 4
// keys each and 10 bits a key).
const maxKeyFilterBits = 64 << 20 * 8

// rebuildKeysPerEvent sizes a rebuild's key filter: the index writes a few
// keys per event; more only raise the false-positive rate, which costs
// reads, never correctness.
const rebuildKeysPerEvent = 4

// keyFilter is a Bloom filter of keys (10 bits and 4 probes per expected
// key, about 1% false positives at that load), probed with xxhash64 split
// into two halves for double hashing. Its size is capped at
// maxKeyFilterBits: on bigger ledgers false positives rise, which costs
// reads, never correctness.
type keyFilter struct {
	bits []uint64
	m    uint64 // number of bits
}

func newKeyFilter(expected int64) *keyFilter {
	m := min(uint64(max(expected, 1024))*10, maxKeyFilterBits)
	m = (m + 63) &^ 63
	return &keyFilter{bits: make([]uint64, m/64), m: m}
}

func (f *keyFilter) probes(key []byte) (h1, h2 uint64) {
	h := xxhash.Sum64(key)
	return h & 0xffffffff, h>>32 | 1
}

func (f *keyFilter) add(key []byte) {
	h1, h2 := f.probes(key)
	for i := range uint64(4) {
		bit := (h1 + i*h2) % f.m
		f.bits[bit/64] |= 1 << (bit % 64)
	}
}

func (f *keyFilter) mayContain(key []byte) bool {
	h1, h2 := f.probes(key)
	for i := range uint64(4) {
		bit := (h1 + i*h2) % f.m
		if f.bits[bit/64]&(1<<(bit%64)) == 0 {
			return false
		}
	}
	return true
}
