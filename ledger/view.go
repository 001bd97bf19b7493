package ledger

import (
	"github.com/cockroachdb/pebble/v2"
)

// A view is what readers see: the log up to a durable size, read through
// a Pebble snapshot taken right after that size's batch was applied (so it
// holds exactly the events up to the size, their index entries and
// projections), published only once the batch's WAL sync and checkpoint-
// log sync have succeeded. Pebble makes a batch readable as soon as it is
// applied, before its sync (see Pebble's commit.go); reading through
// published views is how nothing a reader sees gets ahead of the disk.
//
// Views are reference counted: the current one holds a reference of its
// own, every reader one more; the snapshot is released with the last
// reference, and Close waits for every view.
type view struct {
	size  int64
	lastT int64
	ckpt  signedCheckpoint // the signed checkpoint for size
	// ckptOff is where ckpt's record starts in the checkpoint log (a
	// writer's views only).
	ckptOff int64
	r       pebble.Reader    // snap, or the store itself when read-only
	snap    *pebble.Snapshot // nil when read-only
	refs    int              // guarded by Ledger.pubMu
}

// acquire returns the current view with a reference for the caller, who
// must releaseView it. A view shows every batch whose callers were
// answered before acquire was called: it waits for the publisher to be
// done with them (one checkpoint-log sync at most). A batch the publisher
// could not publish (its sync failed, and the ledger with it) stays
// unseen until the store is reopened.
func (l *Ledger) acquire() (*view, error) {
	l.pubMu.Lock()
	defer l.pubMu.Unlock()
	for target := l.ackGen; l.pub != nil && l.doneGen < target; {
		l.pubCond.Wait()
	}
	if l.pub == nil {
		return nil, ErrClosed
	}
	l.pub.refs++
	return l.pub, nil
}

// acquireNow is acquire without the wait: the view published last. The
// admission's short cuts read it (a replay it misses, the sequencer still
// finds).
func (l *Ledger) acquireNow() (*view, error) {
	l.pubMu.Lock()
	defer l.pubMu.Unlock()
	if l.pub == nil {
		return nil, ErrClosed
	}
	l.pub.refs++
	return l.pub, nil
}

// releaseView drops one reference to v.
func (l *Ledger) releaseView(v *view) {
	l.pubMu.Lock()
	v.refs--
	last := v.refs == 0
	if last {
		l.views--
	}
	l.pubMu.Unlock()
	if last && v.snap != nil {
		_ = v.snap.Close() // Pebble's Snapshot.Close always returns nil
	}
	if last {
		l.pubCond.Broadcast()
	}
}

// publish makes t, read through snap, what readers see; gen, when not 0,
// is the generation of the batch that made it.
func (l *Ledger) publish(t tip, snap *pebble.Snapshot, gen int64) {
	nv := &view{size: t.size, lastT: t.lastT, ckpt: t.ckpt, ckptOff: t.ckptOff, r: snap, snap: snap, refs: 1}
	if snap == nil {
		nv.r = l.db
	}
	l.pubMu.Lock()
	old := l.pub
	l.pub = nv
	l.views++
	if gen > 0 {
		l.pubGen = gen
	}
	l.pubMu.Unlock()
	if old != nil {
		l.releaseView(old)
	}
	l.pubCond.Broadcast()
}

// handled records that the publisher is done with the batch of
// generation gen (0: a batch that wrote nothing).
func (l *Ledger) handled(gen int64) {
	if gen == 0 {
		return
	}
	l.pubMu.Lock()
	l.doneGen = gen
	l.pubMu.Unlock()
	l.pubCond.Broadcast()
}

// waitPublished blocks until everything applied is published (or the
// ledger failed). The caller holds seqMu, so nothing more is applied.
func (l *Ledger) waitPublished() error {
	l.pubMu.Lock()
	defer l.pubMu.Unlock()
	for l.fatal == nil && l.pub != nil && l.pubGen != l.applied {
		l.pubCond.Wait()
	}
	if l.fatal != nil {
		return l.fatal
	}
	if l.pub == nil {
		return ErrClosed
	}
	return nil
}

// fail records an error after which the ledger accepts no appends: a WAL
// or checkpoint-log sync failed, so what is durable is unknown until the
// store is reopened (and checked).
func (l *Ledger) fail(err error) {
	l.pubMu.Lock()
	if l.fatal == nil {
		l.fatal = err
	}
	l.pubMu.Unlock()
	l.pubCond.Broadcast()
}

// failed returns the error that stopped writes, if any.
func (l *Ledger) failed() error {
	l.pubMu.Lock()
	defer l.pubMu.Unlock()
	return l.fatal
}

// viewGet returns a copy of the value at key in v, or ErrNotFound.
func viewGet(v *view, key []byte) ([]byte, error) { return getCopy(v.r, key) }

// viewIter opens an iterator over [lower, upper) of v.
func viewIter(v *view, lower, upper []byte) (*pebble.Iterator, error) {
	it, err := v.r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, storeErr(err)
	}
	return it, nil
}

// closeIter closes it and keeps the first error.
func closeIter(it *pebble.Iterator, err *error) {
	if cerr := it.Close(); cerr != nil && *err == nil {
		*err = storeErr(cerr)
	}
}
