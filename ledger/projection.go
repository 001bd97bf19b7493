package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/proofledger/ledger/proof"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2"
)

// keyRebuilding marks a rebuild in progress; a crash leaves it set, and the
// projections must be rebuilt before they are trusted or extended.
var keyRebuilding = []byte("m/rebuilding")

// ErrStaleProjections: a rebuild was interrupted; run `ledger rebuild`.
var ErrStaleProjections = errors.New("projections are incomplete (a rebuild was interrupted): run ledger rebuild")

// Projector derives index entries from events. For every batch the
// sequencer calls Begin, then Project for each appended event in order, then
// Flush, all writing into the events' own Pebble batch: projections are
// committed (or lost) together with the events. A projection must be a
// function of the events alone (their leaves, see Event.Attrs): `ledger
// rebuild` recomputes it from the log, and must get the same keys and
// values whatever the batch boundaries were.
type Projector interface {
	// Name identifies the projector in errors.
	Name() string
	// Begin starts a batch. The returned ProjectionBatch may gather updates
	// in memory and write them in Flush; it is dropped when the batch fails.
	Begin() ProjectionBatch
}

// ProjectionBatch gathers one batch's projection updates.
type ProjectionBatch interface {
	// Project adds what ev implies.
	Project(w Writer, ev *Event) error
	// Flush writes everything gathered.
	Flush(w Writer) error
}

// Writer is the view of a batch a Projector gets. Reads see the store as
// of the batch's start, not the batch's own writes: a ProjectionBatch
// keeps what it has written itself (and writes each key once, in Flush).
type Writer interface {
	Get(key []byte) ([]byte, error) // ErrNotFound when absent
	Set(key, value []byte) error
	Delete(key []byte) error
}

// ProjectionPrefix is the keyspace reserved for projections; the ledger
// never writes under it itself.
var ProjectionPrefix = []byte("x/")

func (l *Ledger) beginProjections() []ProjectionBatch {
	pbs := make([]ProjectionBatch, len(l.proj))
	for i, p := range l.proj {
		pbs[i] = p.Begin()
	}
	return pbs
}

func (l *Ledger) project(w Writer, pbs []ProjectionBatch, ev *Event) error {
	for i, pb := range pbs {
		if err := pb.Project(w, ev); err != nil {
			return fmt.Errorf("projection %s, event %d: %w", l.proj[i].Name(), ev.Seq, err)
		}
	}
	return nil
}

func (l *Ledger) flushProjections(w Writer, pbs []ProjectionBatch) error {
	for i, pb := range pbs {
		if err := pb.Flush(w); err != nil {
			return fmt.Errorf("projection %s: %w", l.proj[i].Name(), err)
		}
	}
	return nil
}

// Snapshot is a consistent read-only view of the log's durable state, for
// queries over projections. Close it when done.
type Snapshot struct {
	l   *Ledger
	v   *view
	err error // why the snapshot could not be taken (the ledger is closed)
}

// Snapshot returns a view of the durable state as of now. When the ledger
// is closed, the snapshot's reads return ErrClosed.
func (l *Ledger) Snapshot() *Snapshot {
	v, err := l.acquire()
	return &Snapshot{l: l, v: v, err: err}
}

// Size is the number of events the snapshot holds.
func (s *Snapshot) Size() int64 {
	if s.v == nil {
		return 0
	}
	return s.v.size
}

// Get returns a copy of the value at key, or ErrNotFound.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	if s.v == nil {
		return nil, s.closedErr()
	}
	return getCopy(s.v.r, key)
}

func (s *Snapshot) closedErr() error {
	if s.err != nil {
		return s.err
	}
	return ErrClosed
}

// Range calls fn for each key in [lower, upper) in order until fn returns
// false or an error. k and v are only valid during the call.
func (s *Snapshot) Range(lower, upper []byte, fn func(k, v []byte) (bool, error)) (err error) {
	if s.v == nil {
		return s.closedErr()
	}
	it, err := viewIter(s.v, lower, upper)
	if err != nil {
		return err
	}
	defer closeIter(it, &err)
	for ok := it.First(); ok; ok = it.Next() {
		more, err := fn(it.Key(), it.Value())
		if err != nil || !more {
			return err
		}
	}
	return storeErr(it.Error())
}

// Close releases the snapshot.
func (s *Snapshot) Close() error {
	if s.v != nil {
		s.l.releaseView(s.v)
		s.v = nil
	}
	return nil
}

// ProjectionsStale reports whether an interrupted rebuild left the
// projections incomplete. The flag is read from the store when the ledger
// opens and kept by Rebuild, the only writer of the mark (the store's lock
// keeps other processes out).
func (l *Ledger) ProjectionsStale() bool { return l.stale.Load() }

// RebuildChunk is how many events a rebuild projects per batch.
const RebuildChunk = 4096

// Rebuild drops every projection (the x/ keyspace) and recomputes it from
// the log with the ledger's projectors, in log order and in batches of
// RebuildChunk events. Appends wait while it runs; readers keep seeing the
// projections as they were until it completes. progress, when not nil, is
// called after each batch with the number of events projected so far. The
// result is identical, key for key, to what incremental appends built.
// The leaves it reads are checked against the signed tree: a leaf altered
// on disk fails the rebuild (which leaves the projections marked stale)
// instead of changing what the projections say.
func (l *Ledger) Rebuild(ctx context.Context, progress func(done int64)) (err error) {
	if l.readOnly {
		return ErrReadOnly
	}
	l.seqMu.Lock()
	defer l.seqMu.Unlock()
	defer recoverFatal(&err)
	if err := l.waitPublished(); err != nil {
		return err
	}
	v, err := l.acquire()
	if err != nil {
		return err
	}
	defer l.releaseView(v)
	start := l.db.NewBatch()
	err = errors.Join(start.Set(keyRebuilding, []byte{1}, nil),
		start.DeleteRange(ProjectionPrefix, prefixEnd(ProjectionPrefix), nil))
	if err == nil {
		err = start.Commit(pebble.Sync)
	}
	start.Close()
	if err != nil {
		return fmt.Errorf("rebuild: clear projections: %w", err)
	}
	l.stale.Store(true)
	size := v.size
	written := newKeyFilter(size * rebuildKeysPerEvent)
	var done int64
	var b *pebble.Batch
	var pbs []ProjectionBatch
	tree := &proof.TreeBuilder{}
	commit := func(last bool) error {
		if err := l.flushProjections(rebuildWriter{batchWriter{l.db, b}, written}, pbs); err != nil {
			return err
		}
		opt := pebble.NoSync
		if last {
			if err := b.Delete(keyRebuilding, nil); err != nil {
				return err
			}
			opt = pebble.Sync
		}
		err := b.Commit(opt)
		b.Close()
		b = nil
		if err != nil {
			return fmt.Errorf("rebuild: commit: %w", err)
		}
		if progress != nil {
			progress(done)
		}
		return nil
	}
	err = l.scanView(ctx, v, 0, func(ev *Event, leaf string) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		tree.Append(leafHashString(leaf))
		if b == nil {
			b = l.db.NewBatch()
			pbs = l.beginProjections()
		}
		if err := l.project(rebuildWriter{batchWriter{l.db, b}, written}, pbs, ev); err != nil {
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
	if root := tree.Root(); root != v.ckpt.c.Root {
		if b != nil {
			b.Close()
		}
		return l.leafMismatch(v, fmt.Sprintf("rebuild: the leaves give tree root %s for size %d, the signed checkpoint says %s", b64(root[:]), size, b64(v.ckpt.c.Root[:])))
	}
	if b == nil {
		b = l.db.NewBatch()
		pbs = l.beginProjections()
	}
	if err := commit(true); err != nil {
		return err
	}
	l.stale.Store(false)
	// Readers see the rebuilt projections from now on.
	l.publish(l.next, l.db.NewSnapshot())
	return nil
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
