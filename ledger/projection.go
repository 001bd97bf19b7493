package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2"
)

// keyRebuilding marks a rebuild in progress; a crash leaves it set, and the
// projections must be rebuilt before they are trusted or extended.
var keyRebuilding = []byte("m/rebuilding")

// ErrStaleProjections: a rebuild was interrupted; run `ledger rebuild`.
var ErrStaleProjections = errors.New("projections are incomplete (a rebuild was interrupted): run ledger rebuild")

// Snapshot is a consistent read-only view of the store, for queries over
// projections. Close it when done.
type Snapshot struct {
	s *pebble.Snapshot
}

// Snapshot returns a view of the store as of now.
func (l *Ledger) Snapshot() *Snapshot { return &Snapshot{s: l.db.NewSnapshot()} }

// Get returns a copy of the value at key, or ErrNotFound.
func (s *Snapshot) Get(key []byte) ([]byte, error) { return getCopy(s.s, key) }

// Range calls fn for each key in [lower, upper) in order until fn returns
// false or an error. k and v are only valid during the call.
func (s *Snapshot) Range(lower, upper []byte, fn func(k, v []byte) (bool, error)) error {
	it, err := s.s.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		more, err := fn(it.Key(), it.Value())
		if err != nil || !more {
			return err
		}
	}
	return it.Error()
}

// Close releases the snapshot.
func (s *Snapshot) Close() error { return s.s.Close() }

// projectionsStale reports whether a rebuild was interrupted. The flag is
// read from the store when the ledger opens and kept by Rebuild, the only
// writer of the mark (Pebble's lock keeps other processes out), so the
// sequencer checks it without a read per batch.
func (l *Ledger) projectionsStale() (bool, error) {
	return l.stale.Load(), nil
}

// loadStale reads the rebuild mark from the store.
func (l *Ledger) loadStale() error {
	_, err := l.get(keyRebuilding)
	if errors.Is(err, ErrNotFound) {
		l.stale.Store(false)
		return nil
	}
	if err != nil {
		return err
	}
	l.stale.Store(true)
	return nil
}

// ProjectionsStale reports whether an interrupted rebuild left the
// projections incomplete.
func (l *Ledger) ProjectionsStale() bool {
	stale, err := l.projectionsStale()
	return stale || err != nil
}

// RebuildChunk is how many events a rebuild projects per batch.
const RebuildChunk = 4096

// Rebuild drops every projection (the x/ keyspace) and recomputes it from
// the log with the ledger's projectors, in log order and in batches of
// RebuildChunk events. Appends wait while it runs. progress, when not nil,
// is called after each batch with the number of events projected so far.
// The result is identical, key for key, to what incremental appends built.
func (l *Ledger) Rebuild(ctx context.Context, progress func(done int64)) error {
	if l.queue == nil {
		return fmt.Errorf("ledger opened read-only: %w", ErrClosed)
	}
	l.seqMu.Lock()
	defer l.seqMu.Unlock()
	start := l.db.NewBatch()
	start.Set(keyRebuilding, []byte{1}, nil)
	start.DeleteRange(ProjectionPrefix, prefixEnd(ProjectionPrefix), nil)
	if err := start.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("rebuild: clear projections: %w", err)
	}
	l.stale.Store(true)
	size := l.Size()
	written := newKeyFilter(size * rebuildKeysPerEvent)
	var done int64
	var b *pebble.Batch
	var pbs []ProjectionBatch
	commit := func(last bool) error {
		if err := l.flushProjections(rebuildWriter{batchWriter{l, b}, written}, pbs); err != nil {
			return err
		}
		opt := pebble.NoSync
		if last {
			b.Delete(keyRebuilding, nil)
			opt = pebble.Sync
		}
		err := b.Commit(opt)
		b.Close()
		b = nil
		if err != nil {
			return fmt.Errorf("rebuild: commit: %w", err)
		}
		if last {
			l.stale.Store(false)
		}
		if progress != nil {
			progress(done)
		}
		return nil
	}
	err := l.Scan(0, false, func(ev *Event) (bool, error) {
		if ev.Seq >= size {
			return false, nil
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if b == nil {
			b = l.db.NewBatch()
			pbs = l.beginProjections()
		}
		if err := l.project(rebuildWriter{batchWriter{l, b}, written}, pbs, ev); err != nil {
			return false, err
		}
		done++
		if done%RebuildChunk == 0 {
			return true, commit(false)
		}
		return true, nil
	})
	if err != nil {
		if b != nil {
			b.Close()
		}
		return err
	}
	if b == nil {
		b = l.db.NewBatch()
		pbs = l.beginProjections()
	}
	return commit(true)
}

// rebuildWriter is the Writer of a rebuild's batches. The rebuild cleared
// the projection keyspace and is its only writer while it runs, so a
// projection key it has not written is absent: a filter of the keys it
// wrote answers most reads of absent keys without a Pebble lookup, which
// would otherwise wade through the old, range-deleted projections still in
// the LSM. A filter hit (present, or a false positive) reads the store.
type rebuildWriter struct {
	batchWriter
	written *keyFilter
}

func (w rebuildWriter) Get(key []byte) ([]byte, error) {
	if bytes.HasPrefix(key, ProjectionPrefix) && !w.written.mayContain(key) {
		return nil, ErrNotFound
	}
	return w.batchWriter.Get(key)
}

func (w rebuildWriter) Set(key, value []byte) error {
	w.written.add(key)
	return w.batchWriter.Set(key, value)
}

// maxKeyFilterBits caps a key filter at 64 MB (about 13M events at 4
// keys each and 10 bits a key).
const maxKeyFilterBits = 64 << 20 * 8

// rebuildKeysPerEvent sizes a rebuild's key filter: the index projections
// write a few keys per event; more only raise the false-positive rate,
// which costs reads, never correctness.
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
