package ledger

// The sequencer orders appends and makes them durable, the syncer answers
// them and the publisher shows them to readers. Their invariants, in the
// manner of Pebble's commit.go:
//
//  1. One goroutine (sequence) assigns sequence numbers. It takes the first
//     waiting request and drains more, up to MaxBatchEvents, admits each
//     document against the log (admit.go), and writes every accepted event
//     with everything it implies (leaf, document, tree hashes, index
//     entries, projections) and a checkpoint signed for the new size into
//     ONE Pebble batch. A crash keeps all of a batch or none of it.
//  2. The batch is applied with a synchronous WAL write requested
//     (ApplyNoSyncWait). Pebble makes it readable as soon as it is applied,
//     before its sync, so the sequencer takes a snapshot right after
//     applying it: the snapshot holds exactly the log up to the batch.
//  3. The syncer goroutine takes applied batches in order, waits for each
//     batch's WAL sync and writes its signed checkpoint to the checkpoint
//     log (ckptlog.go); batches applied meanwhile are taken together. Only
//     then are the batch's callers answered: an acknowledged append is in
//     the synced WAL, and its checkpoint is in the checkpoint log as far
//     as the operating system is concerned (a killed process loses
//     neither). The publisher goroutine then syncs the checkpoint log,
//     once for all the batches waiting (group commit, in order), and only
//     then publishes them: the size, the latest checkpoint and the
//     snapshot readers read through (which serves events, proofs and the
//     replay short cut). Visible means durable: nothing a reader is shown
//     is ahead of the disk, and no checkpoint is shown before the
//     checkpoint log holds it durably. A reader that starts after an
//     answer waits for the publisher to reach that batch (acquire), so a
//     caller reads its own appends. The one window this leaves: a power
//     loss between an answer and the checkpoint-log sync (one sync, about
//     0.1-0.2 ms) may lose the log's record of a checkpoint nobody was
//     shown; the store still holds it (open writes it to the log again),
//     unless the store's WAL is damaged in the same crash.
//  4. Admission reads the store as it is, applied but unsynced batches
//     included: it must, to place the next batch's documents. If any batch
//     fails to become durable (a failed WAL sync or checkpoint-log write
//     or sync, or a fatal Pebble error), the ledger fails (ErrFailed): no
//     later batch is published or acknowledged, nothing more is applied,
//     and the store is checked again when it is reopened. A failed
//     checkpoint-log sync comes after its batches were answered (their
//     events are in the synced WAL): they are not published by this
//     process, and reopening finds them and records their checkpoints.
//  5. No size is shown signed twice. Open checks the store against the latest
//     signed checkpoints (in the store and in the checkpoint log) and
//     refuses to append to a store that falls short of them or disagrees
//     with their roots (ErrDamaged), so a lost tail is never re-signed with
//     other events. A checkpoint for an older size is signed on demand only
//     when that tree is proven consistent with the published one (read.go).
//  6. Refusals are written too: each batch records its refusals in the
//     refusal journal (refusals.go), in the same Pebble batch as its
//     events, so that a refusal is acknowledged only once it is as durable
//     as they are. A batch that refuses everything writes only journal
//     records: it is synced and published like any other (the log's size
//     and checkpoint do not change, and nothing goes to the checkpoint
//     log). A request that writes nothing at all is still answered
//     through the syncer, after the batches before it: no answer (a
//     replay of an event still being synced) overtakes a durable write.
//  7. A batch that fails before it is applied (an admission read, a
//     projection, the signature) fails its requests and changes nothing:
//     the sequencer's state is only advanced once a batch is applied.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// appendRequest is one Append call waiting for the sequencer.
type appendRequest struct {
	entries  []*Entry
	outcomes []Outcome
	err      error
	done     chan struct{}
}

// Append appends the entries in the order given: each is checked against
// the identities in the log (replay, conflict) and the Rules, and becomes
// an event when it passes. It returns one Outcome per entry, in order.
// Appended events are durable (their batch's WAL sync returned, and its
// signed checkpoint is written to the checkpoint log) before Append
// returns; reads that start after it returns see them (invariant 3). The
// error is non-nil only when the ledger itself failed (or ctx ended), not
// when an entry was refused; ErrPushback means the sequencer's queue is
// full.
func (l *Ledger) Append(ctx context.Context, entries []*Entry) ([]Outcome, error) {
	if l.readOnly {
		if l.damage != nil {
			return nil, l.damage
		}
		return nil, ErrReadOnly
	}
	if len(entries) == 0 {
		return nil, nil
	}
	prepareEntries(entries)
	req := &appendRequest{entries: entries, done: make(chan struct{})}
	select {
	case l.queue <- req:
	case <-l.closed:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	default:
		return nil, ErrPushback
	}
	if err := waitCtx(ctx, req.done); err != nil {
		return nil, err
	}
	if req.err != nil {
		return nil, req.err
	}
	return req.outcomes, nil
}

// AppendWithRetry is Append that waits and retries, with capped
// exponential backoff, while the sequencer pushes back.
func (l *Ledger) AppendWithRetry(ctx context.Context, entries []*Entry) ([]Outcome, error) {
	delay := time.Millisecond
	for {
		out, err := l.Append(ctx, entries)
		if !errors.Is(err, ErrPushback) {
			return out, err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// inflight is a batch applied to the store whose WAL sync may still be
// pending, with the requests it answers.
type inflight struct {
	b    *pebble.Batch    // nil when the requests wrote nothing
	snap *pebble.Snapshot // the store right after b was applied
	tip  tip              // the log's end once b is durable
	// events: b appends events (and signs a checkpoint); a batch of
	// refusals alone signs nothing.
	events bool
	// gen numbers the batches that wrote something, in the order applied
	// (Ledger.applied): readers wait for the publisher to reach the
	// generation last acknowledged (acquire).
	gen  int64
	reqs []*appendRequest
	err  error
}

// sequence is the single goroutine that orders appends (invariant 1).
func (l *Ledger) sequence() {
	defer l.wg.Done()
	defer close(l.syncq)
	for {
		var first *appendRequest
		select {
		case first = <-l.queue:
		case <-l.closed:
			l.drainClosed()
			return
		}
		reqs := []*appendRequest{first}
		n := len(first.entries)
	drain:
		for n < l.maxB {
			select {
			case r := <-l.queue:
				reqs = append(reqs, r)
				n += len(r.entries)
			default:
				break drain
			}
		}
		l.syncq <- l.commitBatch(reqs)
	}
}

// syncWait answers batches in order once their writes are durable
// (invariant 3) and hands them to the publisher.
func (l *Ledger) syncWait() {
	defer l.wg.Done()
	defer close(l.pubq)
	group := make([]*inflight, 0, maxSyncGroup)
	for f := range l.syncq {
		// Batches applied while the previous group was synced wait here
		// and are answered together.
		group = append(group[:0], f)
	gather:
		for len(group) < maxSyncGroup {
			select {
			case g, ok := <-l.syncq:
				if !ok {
					break gather
				}
				group = append(group, g)
			default:
				break gather
			}
		}
		l.complete(group)
	}
}

// maxSyncGroup bounds the applied batches answered together, and the
// batches published together after one checkpoint-log sync.
const maxSyncGroup = 16

// complete makes a group of applied batches durable, in order: each
// batch's WAL sync, then one write of all their checkpoints to the
// checkpoint log. Then their callers are answered, in order, and the
// batches go to the publisher, which syncs the checkpoint log before it
// shows them to anyone (invariant 3). The first failure fails the ledger
// (invariant 4): that batch and every later one are answered with it and
// none of them is published.
func (l *Ledger) complete(group []*inflight) {
	errs := make([]error, len(group))
	var failure error
	var notes [][]byte
	var withNote []int
	for i, f := range group {
		errs[i] = f.err
		if f.b == nil {
			continue
		}
		if failure == nil {
			failure = l.syncBatch(f)
		}
		if failure != nil {
			// Pebble's WAL writer holds the batch until its sync ends:
			// wait for that before the batch is closed below.
			_ = f.b.SyncWait() // the group already failed with failure
			errs[i] = failure
			continue
		}
		if f.events {
			notes = append(notes, f.tip.ckpt.note)
			withNote = append(withNote, i)
		}
	}
	if len(notes) > 0 {
		starts, err := l.writeCheckpoints(notes)
		if err != nil {
			for i, f := range group {
				if f.b != nil && errs[i] == nil {
					errs[i] = err
				}
			}
		} else {
			for k, i := range withNote {
				group[i].tip.ckptOff = starts[k]
			}
		}
	}
	var acked int64
	for i, f := range group {
		if f.b == nil {
			continue
		}
		_ = f.b.Close() // releases memory; fails only for a batch closed twice
		f.b = nil
		if errs[i] == nil {
			acked = f.gen
		}
	}
	if acked > 0 {
		// Readers from now on see at least these batches: they wait for
		// the publisher (acquire).
		l.pubMu.Lock()
		l.ackGen = acked
		l.pubMu.Unlock()
	}
	for i, f := range group {
		err := errs[i]
		if err == nil {
			err = l.failed()
		}
		f.err = err
		for _, r := range f.reqs {
			if err != nil {
				r.err = err
				r.outcomes = nil
			}
			close(r.done)
		}
		f.reqs = nil
	}
	l.pubq <- slices.Clone(group)
}

// publishLoop is the publisher goroutine: it takes answered batches in
// order, syncs the checkpoint log once for all the batches waiting, and
// only then publishes them (invariant 3). A failed sync fails the ledger
// and publishes none of them.
func (l *Ledger) publishLoop() {
	defer l.wg.Done()
	var batches []*inflight
	for g := range l.pubq {
		batches = append(batches[:0], g...)
	gather:
		for len(batches) < maxSyncGroup {
			select {
			case g, ok := <-l.pubq:
				if !ok {
					break gather
				}
				batches = append(batches, g...)
			default:
				break gather
			}
		}
		var err error
		for _, f := range batches {
			if f.snap != nil && f.err == nil && f.events {
				err = l.syncCheckpoints()
				break
			}
		}
		for _, f := range batches {
			if f.snap == nil {
				continue
			}
			if f.err == nil && err == nil {
				l.publish(f.tip, f.snap, f.gen)
			} else {
				_ = f.snap.Close() // Pebble's Snapshot.Close always returns nil
			}
			l.handled(f.gen)
		}
	}
}

// syncBatch waits for a batch's WAL sync. Any failure fails the ledger
// (invariant 4).
func (l *Ledger) syncBatch(f *inflight) (err error) {
	defer l.failOnError(&err)
	// Always wait: Pebble's WAL writer holds the batch until its sync ends,
	// and the caller closes it next.
	serr := f.b.SyncWait()
	if err := l.failed(); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("%w: sync the store's write-ahead log: %v", ErrFailed, serr)
	}
	return nil
}

// writeCheckpoints writes signed checkpoints to the checkpoint log (not
// synced yet: the publisher syncs it). Any failure fails the ledger
// (invariant 4).
func (l *Ledger) writeCheckpoints(notes [][]byte) (starts []int64, err error) {
	defer l.failOnError(&err)
	if err := l.failed(); err != nil {
		return nil, err
	}
	if starts, err = l.ckpts.write(notes...); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFailed, err)
	}
	return starts, nil
}

// syncCheckpoints syncs the checkpoint log. Any failure fails the ledger
// (invariant 4).
func (l *Ledger) syncCheckpoints() (err error) {
	defer l.failOnError(&err)
	if err := l.failed(); err != nil {
		return err
	}
	if err := l.ckpts.sync(); err != nil {
		return fmt.Errorf("%w: %v", ErrFailed, err)
	}
	return nil
}

// failOnError turns a fatal Pebble error raised as a panic into *err and
// fails the ledger on any error.
func (l *Ledger) failOnError(err *error) {
	if r := recover(); r != nil {
		fe, ok := r.(*FatalError)
		if !ok {
			panic(r)
		}
		*err = fmt.Errorf("%w: %v", ErrFailed, fe)
	}
	if *err != nil {
		l.fail(*err)
	}
}

func (l *Ledger) drainClosed() {
	for {
		select {
		case r := <-l.queue:
			r.err = ErrClosed
			close(r.done)
		default:
			return
		}
	}
}
