package ledger

// The sequencer orders appends and makes them durable; the syncer publishes
// them. Their invariants, in the manner of Pebble's commit.go:
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
//     batch's WAL sync, appends its checkpoint to the checkpoint log
//     (ckptlog.go) and syncs that. Only then is the batch published: the
//     size, the latest checkpoint, the snapshot readers read through (which
//     serves events, proofs and the replay short cut), and the answers to
//     its callers. Visible means durable: nothing a reader or a caller is
//     shown is ahead of the disk.
//  4. Admission reads the store as it is, applied but unsynced batches
//     included: it must, to place the next batch's documents. If any batch
//     fails to become durable (a failed WAL or checkpoint-log sync, or a
//     fatal Pebble error), the ledger fails (ErrFailed): no later batch is
//     published or acknowledged, nothing more is applied, and the store is
//     checked again when it is reopened.
//  5. Every size is signed once. Open checks the store against the latest
//     signed checkpoints (in the store and in the checkpoint log) and
//     refuses to append to a store that falls short of them or disagrees
//     with their roots (ErrDamaged), so a lost tail is never re-signed with
//     other events. A checkpoint for an older size is signed on demand only
//     when that tree is proven consistent with the published one (read.go).
//  6. A request that writes nothing (every document refused) is still
//     answered through the syncer, after the batches before it: no answer
//     (a replay of an event still being synced) overtakes a durable write.
//  7. A batch that fails before it is applied (an admission read, a
//     projection, the signature) fails its requests and changes nothing:
//     the sequencer's state is only advanced once a batch is applied.

import (
	"errors"
	"fmt"
	"github.com/proofledger/ledger/proof"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/mod/sumdb/tlog"
)

// appendRequest is one Append call waiting for the sequencer.
type appendRequest struct {
	cands    []*candidate
	outcomes []Outcome
	err      error
	done     chan struct{}
}

// inflight is a batch applied to the store whose WAL sync may still be
// pending, with the requests it answers.
type inflight struct {
	b    *pebble.Batch    // nil when the requests wrote nothing
	snap *pebble.Snapshot // the store right after b was applied
	tip  tip              // the log's end once b is durable
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
		n := len(first.cands)
	drain:
		for n < l.maxB {
			select {
			case r := <-l.queue:
				reqs = append(reqs, r)
				n += len(r.cands)
			default:
				break drain
			}
		}
		l.syncq <- l.commitBatch(reqs)
	}
}

// syncWait answers batches in order once their writes are durable
// (invariant 3).
func (l *Ledger) syncWait() {
	defer l.wg.Done()
	for f := range l.syncq {
		err := f.err
		if f.b != nil {
			err = l.makeDurable(f)
			f.b.Close()
			if err == nil {
				l.publish(f.tip, f.snap)
			} else {
				f.snap.Close()
			}
		}
		if err == nil {
			err = l.failed()
		}
		for _, r := range f.reqs {
			if err != nil {
				r.err = err
				r.outcomes = nil
			}
			close(r.done)
		}
	}
}

// makeDurable waits for a batch's WAL sync, then records its checkpoint in
// the checkpoint log. Any failure fails the ledger (invariant 4).
func (l *Ledger) makeDurable(f *inflight) (err error) {
	defer func() {
		if r := recover(); r != nil {
			fe, ok := r.(*FatalError)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%w: %v", ErrFailed, fe)
		}
		if err != nil {
			l.fail(err)
		}
	}()
	if err := l.failed(); err != nil {
		return err
	}
	if err := f.b.SyncWait(); err != nil {
		return fmt.Errorf("%w: sync the store's write-ahead log: %v", ErrFailed, err)
	}
	if err := l.ckpts.append(f.tip.ckpt.note); err != nil {
		return fmt.Errorf("%w: %v", ErrFailed, err)
	}
	return nil
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

// batchWriter is the view of a batch that projections get: writes go into
// the batch, reads see the store as of the batch's start (the sequencer is
// the only writer, and a ProjectionBatch keeps its own pending writes).
type batchWriter struct {
	r pebble.Reader
	b *pebble.Batch
}

func (w batchWriter) Get(key []byte) ([]byte, error) { return getCopy(w.r, key) }
func (w batchWriter) Set(key, value []byte) error    { return w.b.Set(key, value, nil) }
func (w batchWriter) Delete(key []byte) error        { return w.b.Delete(key, nil) }

// commitBatch builds one batch from reqs and applies it (invariants 1, 2
// and 7). The returned inflight goes to the syncer.
func (l *Ledger) commitBatch(reqs []*appendRequest) (f *inflight) {
	f = &inflight{reqs: reqs}
	l.seqMu.Lock()
	defer l.seqMu.Unlock()
	var b *pebble.Batch
	defer func() {
		if r := recover(); r != nil {
			fe, ok := r.(*FatalError)
			if !ok {
				panic(r)
			}
			f.err = fmt.Errorf("%w: %v", ErrFailed, fe)
			l.fail(f.err)
			f.b, f.snap = nil, nil
		}
		if f.err != nil && b != nil {
			b.Close()
		}
	}()
	if err := l.failed(); err != nil {
		f.err = err
		return f
	}
	if len(l.proj) > 0 && l.stale.Load() {
		f.err = ErrStaleProjections
		return f
	}
	t := l.next
	size, lastT := t.size, t.lastT
	ov := &overlay{hashes: map[int64]tlog.Hash{}, ident: map[string]identValue{},
		tasks: map[string]taskHead{}, succ: map[string]int64{}}
	b = l.db.NewBatch()
	pbs := l.beginProjections()
	for _, r := range reqs {
		r.outcomes = make([]Outcome, len(r.cands))
		for i, c := range r.cands {
			o, ev, err := l.admit(c, ov, size)
			if err != nil {
				f.err = err
				return f
			}
			if ev != nil {
				ns := c.arrival.UnixNano()
				if ns < lastT {
					ns = lastT // never backwards along the log
				}
				lastT = ns
				ev.AppendedAt = time.Unix(0, ns).UTC()
				if err := l.writeEvent(b, ov, ev, c, pbs); err != nil {
					f.err = err
					return f
				}
				o.Seq = ev.Seq
				o.Event = ev
				size++
			}
			r.outcomes[i] = o
		}
	}
	if size == t.size {
		b.Close()
		b = nil
		return f // nothing to write: every submission was refused (invariant 6)
	}
	if err := l.flushProjections(batchWriter{l.db, b}, pbs); err != nil {
		f.err = err
		return f
	}
	root, err := tlog.TreeHash(size, hashReader{r: l.db, pending: ov.hashes})
	if err != nil {
		f.err = fmt.Errorf("tree hash: %w", err)
		return f
	}
	c := proof.Checkpoint{Origin: l.origin, Size: size, Root: root}
	note, err := l.sign(c)
	if err != nil {
		f.err = err
		return f
	}
	if err := errors.Join(
		b.Set(checkpointKey(size), note, nil),
		b.Set(keySize, u64(uint64(size)), nil),
		b.Set(keyLastTime, u64(uint64(lastT)), nil),
	); err != nil {
		f.err = fmt.Errorf("build batch: %w", err)
		return f
	}
	if err := l.db.ApplyNoSyncWait(b, pebble.Sync); err != nil {
		// Whether any of the batch reached the WAL is unknown.
		f.err = fmt.Errorf("%w: commit batch: %v", ErrFailed, err)
		l.fail(f.err)
		return f
	}
	f.b, f.snap = b, l.db.NewSnapshot()
	l.next = tip{size: size, lastT: lastT, ckpt: signedCheckpoint{note: note, c: c}}
	f.tip = l.next
	return f
}

// sign signs a checkpoint with the log key.
func (l *Ledger) sign(c proof.Checkpoint) ([]byte, error) {
	if l.hooks != nil && l.hooks.sign != nil {
		if err := l.hooks.sign(c); err != nil {
			return nil, fmt.Errorf("sign checkpoint: %w", err)
		}
	}
	return l.signer.sign(c)
}

// writeEvent adds the event, its tree hashes and the ledger's own index
// entries to the batch, then runs the projectors.
func (l *Ledger) writeEvent(b *pebble.Batch, ov *overlay, ev *Event, c *candidate, pbs []ProjectionBatch) error {
	leaf := ev.Encode()
	hashes, err := tlog.StoredHashes(ev.Seq, leaf, hashReader{r: l.db, pending: ov.hashes})
	if err != nil {
		return fmt.Errorf("stored hashes for event %d: %w", ev.Seq, err)
	}
	var errs []error
	set := func(k, v []byte) { errs = append(errs, b.Set(k, v, nil)) }
	base := tlog.StoredHashIndex(0, ev.Seq)
	for i, h := range hashes {
		ov.hashes[base+int64(i)] = h
		set(hashKey(base+int64(i)), h[:])
	}
	set(eventKey(ev.Seq), encodeLeafValue(leaf))
	set(dataKey(ev.Seq), c.payload)
	for _, e := range indexEntries(ev) {
		set(e.key, e.value)
	}
	ov.ident[string(identKey(ev.Kind, ev.ID))] = identOf(ev)
	if task := eventTask(ev); task != "" {
		ov.tasks[task] = taskHead{seq: ev.Seq, id: ev.ID}
	}
	for _, link := range ev.Links {
		if link.Rel == RelPreviousReceipt {
			ov.succ[link.ID] = ev.Seq
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("event %d: %w", ev.Seq, err)
	}
	return l.project(batchWriter{l.db, b}, pbs, ev)
}
