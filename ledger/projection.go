package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/proofledger/ledger/proof"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/cockroachdb/pebble/v2"
)

// ErrStale: the derived entries (the rules' keyspaces and the
// projections) are incomplete, because a rebuild was interrupted or
// because they were written without a component (or an older version of
// one) this ledger was opened with (Versioned); they must be rebuilt
// (Rebuild) before they are read or extended.
var ErrStale = errors.New("the derived entries are incomplete (a rebuild was interrupted, or they were written by an earlier version); rebuild them")

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

// A Rebuilder is a Projector that can be rebuilt faster than it is kept:
// Rebuild clears the projection keyspace and asks it for the projector to
// run over the whole log (which may, say, answer reads of keys it has not
// written yet without touching the store). Its tuning is the projector's.
type Rebuilder interface {
	ForRebuild(events int64) Projector
}

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

// Snapshot returns a view of the durable state as of now: it holds every
// batch whose appenders were answered before the call. When the ledger is
// closed, the snapshot's reads return ErrClosed.
func (l *Ledger) Snapshot() *Snapshot {
	v, err := l.acquire()
	return &Snapshot{l: l, v: v, err: err}
}

// Latest returns a view of the state published last, without waiting, as
// Snapshot does, for batches whose appenders were answered but whose
// checkpoints are not yet synced to the checkpoint log (one sync at most):
// for look-ups that may lag behind the appends, such as admission's short
// cuts (the sequencer decides against the applied state).
func (l *Ledger) Latest() *Snapshot {
	v, err := l.acquireNow()
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

// RangePrefix calls fn for each key under prefix, in order (see Range).
func (s *Snapshot) RangePrefix(prefix []byte, fn func(k, v []byte) (bool, error)) error {
	return s.Range(prefix, prefixEnd(prefix), fn)
}

// Last returns the greatest key under prefix and its value, or
// ErrNotFound.
func (s *Snapshot) Last(prefix []byte) (key, value []byte, err error) {
	if s.v == nil {
		return nil, nil, s.closedErr()
	}
	return storeReader{s.v.r}.Last(prefix)
}

// Event returns event seq of the snapshot (checked as Ledger.Event
// checks it).
func (s *Snapshot) Event(seq int64, withData bool) (*Event, error) {
	if s.v == nil {
		return nil, s.closedErr()
	}
	ev, _, err := s.l.eventAt(s.v, seq, withData)
	return ev, err
}

// Close releases the snapshot. It always returns nil (the error is there
// for io.Closer), so callers need not check it.
func (s *Snapshot) Close() error {
	if s.v != nil {
		s.l.releaseView(s.v)
		s.v = nil
	}
	return nil
}

// Stale reports whether the derived entries (rules' keyspaces and
// projections) are incomplete because a rebuild was interrupted.
func (l *Ledger) Stale() bool { return l.stale.Load() }

// RebuildChunk is how many events a rebuild projects per batch.
const RebuildChunk = 4096

// Rebuild drops the derived entries (the Rules' keyspaces and the
// projections) and recomputes them from the log, in log order and in
// batches of RebuildChunk events. Appends wait while it runs; readers keep
// seeing the entries as they were until it completes. progress, when not
// nil, is called after each batch with the number of events done. The
// result is identical, key for key, to what appends built. The leaves it
// reads are checked against the signed tree: a leaf altered on disk fails
// the rebuild (which leaves the entries marked stale) instead of changing
// what they say.
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
	keyspaces := [][]byte{ProjectionPrefix}
	if l.rules != nil {
		keyspaces = append(keyspaces, l.rules.Keyspaces()...)
	}
	start := l.db.NewBatch()
	errs := []error{start.Set(keyRebuilding, []byte{1}, nil)}
	for _, p := range keyspaces {
		errs = append(errs, start.DeleteRange(p, prefixEnd(p), nil))
	}
	err = errors.Join(errs...)
	if err == nil {
		err = start.Commit(pebble.Sync)
	}
	_ = start.Close() // releases memory; fails only for a batch closed twice
	if err != nil {
		return fmt.Errorf("rebuild: clear the derived entries: %w", err)
	}
	l.stale.Store(true)
	l.nonLogChange.Store(true)
	size := v.size
	projs := make([]Projector, len(l.proj))
	for i, p := range l.proj {
		projs[i] = p
		if r, ok := p.(Rebuilder); ok {
			projs[i] = r.ForRebuild(size)
		}
	}
	begin := func() []ProjectionBatch {
		pbs := make([]ProjectionBatch, len(projs))
		for i, p := range projs {
			pbs[i] = p.Begin()
		}
		return pbs
	}
	var done int64
	var b *pebble.Batch
	var pbs []ProjectionBatch
	tree := &proof.TreeBuilder{}
	commit := func(last bool) error {
		if err := l.flushProjections(batchWriter{l.db, b}, pbs); err != nil {
			return err
		}
		opt := pebble.NoSync
		if last {
			if err := errors.Join(b.Delete(keyRebuilding, nil), l.setDerived(b)); err != nil {
				return err
			}
			opt = pebble.Sync
		}
		err := b.Commit(opt)
		_ = b.Close() // releases memory; fails only for a batch closed twice
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
			pbs = begin()
		}
		if l.rules != nil {
			for _, kv := range l.rules.Entries(&ev.Leaf) {
				if err := b.Set(kv.Key, kv.Value, nil); err != nil {
					return false, err
				}
			}
		}
		if err := l.project(batchWriter{l.db, b}, pbs, ev); err != nil {
			// A leaf the projections refuse may have been altered on
			// disk: say so when its tree hash disagrees.
			if h, herr := viewGet(v, hashKey(tlog.StoredHashIndex(0, ev.Seq))); herr == nil {
				if want := leafHashString(leaf); !bytes.Equal(h, want[:]) {
					return false, fmt.Errorf("%w: rebuild: the leaf of event %d was altered on disk (%v)", ErrCorrupt, ev.Seq, err)
				}
			}
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
			_ = b.Close() // releases memory; fails only for a batch closed twice
		}
		return err
	}
	if root := tree.Root(); root != v.ckpt.c.Root {
		if b != nil {
			_ = b.Close() // releases memory; fails only for a batch closed twice
		}
		return l.leafMismatch(v, fmt.Sprintf("rebuild: the leaves give tree root %s for size %d, the signed checkpoint says %s", b64(root[:]), size, b64(v.ckpt.c.Root[:])))
	}
	if b == nil {
		b = l.db.NewBatch()
		pbs = begin()
	}
	if err := commit(true); err != nil {
		return err
	}
	l.stale.Store(false)
	// Readers see the rebuilt entries from now on.
	l.publish(l.next, l.db.NewSnapshot(), 0)
	return nil
}
