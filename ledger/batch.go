package ledger

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/proof"
)

// batchBuilder builds one batch of the sequencer: it admits entries in
// order (identity, then the Rules) and writes each appended event with
// everything it implies. Lookups see the store as the batch found it (its
// applied state, unsynced batches included: invariant 4 of sequencer.go)
// and, before that, the batch's own writes.
type batchBuilder struct {
	l      *Ledger
	b      *pebble.Batch
	size   int64 // the next sequence number
	lastT  int64
	hashes map[int64]tlog.Hash   // tree hashes written in the batch
	ident  map[string]identValue // identity entries written in the batch
	rb     RuleBatch
	pbs    []ProjectionBatch
	// refused are the batch's refusals for the journal.
	refused []refusal
}

// storeReader is the Reader the Rules get: the store's applied state.
type storeReader struct{ r pebble.Reader }

func (s storeReader) Get(key []byte) ([]byte, error) { return getCopy(s.r, key) }

func (s storeReader) Last(prefix []byte) (k, v []byte, err error) {
	it, err := s.r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, nil, storeErr(err)
	}
	defer closeIter(it, &err)
	if !it.Last() {
		if err := it.Error(); err != nil {
			return nil, nil, storeErr(err)
		}
		return nil, nil, ErrNotFound
	}
	return bytes.Clone(it.Key()), bytes.Clone(it.Value()), nil
}

// add decides one entry and, when it is admitted, writes its event; a
// refusal is kept for the journal (unless the caller retries it).
func (bb *batchBuilder) add(e *Entry) (Outcome, error) {
	o, err := bb.decide(e)
	if err == nil && o.Status != StatusAppended && !(e.RetryWaiting && o.Waiting != "") {
		bb.refused = append(bb.refused, refusal{e: e, o: o})
	}
	return o, err
}

// decide decides one entry and, when it is admitted, writes its event.
func (bb *batchBuilder) decide(e *Entry) (Outcome, error) {
	if e.Refused != nil {
		o := *e.Refused
		if o.Status == StatusAppended {
			return o, fmt.Errorf("entry %s: refused with status %q", e.Name, o.Status)
		}
		return o, nil
	}
	o := Outcome{Name: e.Name, Kind: e.Kind, ID: e.ID, Seq: -1, Status: StatusRejected}
	k := identKey(e.Kind, e.ID)
	iv, found := bb.ident[string(k)]
	if !found {
		var err error
		if iv, found, err = lookupIdent(bb.l.db, k); err != nil {
			return o, err
		}
	}
	if found {
		o.Seq = iv.seq
		if iv.digest == e.digest {
			o.Status = StatusReplay
			o.Reason = fmt.Sprintf("already in the ledger as event %d", iv.seq)
		} else {
			o.Status = StatusConflict
			o.Reason = fmt.Sprintf("a different document with this identity is event %d", iv.seq)
		}
		return o, nil
	}
	if bb.rb != nil {
		ref, err := bb.rb.Admit(storeReader{bb.l.db}, e)
		if err != nil {
			return o, err
		}
		if ref != nil {
			o.Class, o.Reason, o.Waiting = ref.Class, ref.Reason, ref.Waiting
			if ref.Status != "" {
				o.Status = ref.Status
			}
			return o, nil
		}
	}
	ev := &Event{Leaf: e.Leaf}
	ev.Seq, ev.Kind, ev.ID = bb.size, e.Kind, e.ID
	ev.Digest, ev.Size = e.digest, int64(len(e.Data))
	ns := e.Arrival.UnixNano()
	if ns < bb.lastT {
		ns = bb.lastT // never backwards along the log
	}
	bb.lastT = ns
	ev.AppendedAt = time.Unix(0, ns).UTC()
	if err := bb.write(ev, e.Data); err != nil {
		return o, err
	}
	if bb.rb != nil {
		bb.rb.Appended(&ev.Leaf)
	}
	bb.size++
	o.Status, o.Seq, o.Event = StatusAppended, ev.Seq, ev
	return o, nil
}

// write adds the event, its tree hashes, the store's index entries, the
// Rules' entries and the projections to the batch.
func (bb *batchBuilder) write(ev *Event, data []byte) error {
	l := bb.l
	leaf := ev.Encode()
	hashes, err := tlog.StoredHashes(ev.Seq, leaf, hashReader{r: l.db, pending: bb.hashes})
	if err != nil {
		return fmt.Errorf("stored hashes for event %d: %w", ev.Seq, err)
	}
	var errs []error
	set := func(k, v []byte) { errs = append(errs, bb.b.Set(k, v, nil)) }
	base := tlog.StoredHashIndex(0, ev.Seq)
	for i, h := range hashes {
		bb.hashes[base+int64(i)] = h
		set(hashKey(base+int64(i)), h[:])
	}
	set(eventKey(ev.Seq), encodeLeafValue(leaf))
	// The document goes straight into the batch: one copy.
	dk := dataKey(ev.Seq)
	op := bb.b.SetDeferred(len(dk), 1+len(data))
	copy(op.Key, dk)
	op.Value[0] = payloadRaw
	copy(op.Value[1:], data)
	errs = append(errs, op.Finish())
	for _, kv := range storeEntries(ev) {
		set(kv.Key, kv.Value)
	}
	bb.ident[string(identKey(ev.Kind, ev.ID))] = identValue{seq: ev.Seq, digest: ev.Digest}
	if l.rules != nil {
		for _, kv := range l.rules.Entries(&ev.Leaf) {
			if isStoreKey(kv.Key) {
				return fmt.Errorf("rules wrote %s, a key of the store's own keyspaces", KeyName(kv.Key))
			}
			set(kv.Key, kv.Value)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("event %d: %w", ev.Seq, err)
	}
	return l.project(batchWriter{l.db, bb.b}, bb.pbs, ev)
}

// storeEntries is the one description of the store's own index entries
// for an event: the sequencer writes them, the audit checks them.
//
//	id/<kind code><id>      seq, SHA-256 of the document
//	digest/<sha256>         seq, kind code, id
//	time/<appended_at><seq> empty
func storeEntries(ev *Event) []KV {
	return []KV{
		{Key: identKey(ev.Kind, ev.ID), Value: identValue{seq: ev.Seq, digest: ev.Digest}.encode()},
		{Key: digestKey(ev.Digest), Value: digestValue(ev)},
		{Key: timeKey(ev.AppendedAt.UnixNano(), ev.Seq)},
	}
}

func isStoreKey(k []byte) bool {
	for _, p := range storePrefixes {
		if bytes.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// lookupIdent finds an identity entry in r.
func lookupIdent(r pebble.Reader, k []byte) (identValue, bool, error) {
	v, closer, err := r.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return identValue{}, false, nil
	}
	if err != nil {
		return identValue{}, false, storeErr(err)
	}
	iv, err := decodeIdent(k, v)
	// The closer is a Pebble iterator: Close reports a failed read too.
	if cerr := closer.Close(); err == nil && cerr != nil {
		return identValue{}, false, storeErr(cerr)
	}
	if err != nil {
		return identValue{}, false, err
	}
	return iv, true, nil
}

// prepareEntries computes what the store needs of each entry before the
// sequencer: its digest and its place in the caller's slice.
func prepareEntries(entries []*Entry) {
	for i, e := range entries {
		e.idx = i
		if !e.hasDigest {
			e.digest = sha256.Sum256(e.Data)
		}
		if e.Arrival.IsZero() {
			e.Arrival = time.Now()
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
// and 7 of sequencer.go). The returned inflight goes to the syncer.
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
			_ = b.Close() // releases memory; fails only for a batch closed twice
		}
	}()
	if err := l.failed(); err != nil {
		f.err = err
		return f
	}
	if l.stale.Load() {
		f.err = ErrStale
		return f
	}
	t := l.next
	b = l.db.NewBatch()
	bb := &batchBuilder{l: l, b: b, size: t.size, lastT: t.lastT,
		hashes: map[int64]tlog.Hash{}, ident: map[string]identValue{}, pbs: l.beginProjections()}
	if l.rules != nil {
		bb.rb = l.rules.Begin()
	}
	for _, r := range reqs {
		r.outcomes = make([]Outcome, len(r.entries))
		for i, e := range r.entries {
			o, err := bb.add(e)
			if err != nil {
				f.err = err
				return f
			}
			r.outcomes[i] = o
		}
	}
	if bb.size == t.size && len(bb.refused) == 0 {
		_ = b.Close() // releases memory; fails only for a batch closed twice
		b = nil
		return f // nothing to write (invariant 6)
	}
	next := t
	if len(bb.refused) > 0 {
		js, err := l.journal(b, t.journal, bb.refused)
		if err != nil {
			f.err = err
			return f
		}
		next.journal = js
	}
	if bb.size > t.size {
		if err := l.flushProjections(batchWriter{l.db, b}, bb.pbs); err != nil {
			f.err = err
			return f
		}
		size := bb.size
		root, err := tlog.TreeHash(size, hashReader{r: l.db, pending: bb.hashes})
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
			b.Set(keyLastTime, u64(uint64(bb.lastT)), nil),
		); err != nil {
			f.err = fmt.Errorf("build batch: %w", err)
			return f
		}
		next.size, next.lastT, next.ckpt = size, bb.lastT, signedCheckpoint{note: note, c: c}
		f.events = true
	}
	if err := l.db.ApplyNoSyncWait(b, pebble.Sync); err != nil {
		// Whether any of the batch reached the WAL is unknown.
		f.err = fmt.Errorf("%w: commit batch: %v", ErrFailed, err)
		l.fail(f.err)
		return f
	}
	f.b, f.snap = b, l.db.NewSnapshot()
	l.applied++
	f.gen = l.applied
	if len(bb.refused) > 0 {
		l.nonLogChange.Store(true) // the journal changed: a new read copy shows it
	}
	l.next = next
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
	s, err := l.signerOnDemand()
	if err != nil {
		return nil, err
	}
	return s.sign(c)
}

// signerOnDemand returns the log's signer. A read-only ledger reads the
// log key the first time it signs: only a checkpoint for an older size of
// the published tree, which it proves consistent with the signed one
// first (checkpointAt), so it signs nothing the writer would not.
func (l *Ledger) signerOnDemand() (*noteSigner, error) {
	l.signerMu.Lock()
	defer l.signerMu.Unlock()
	if l.signer != nil {
		return l.signer, nil
	}
	if l.damage != nil {
		return nil, l.damage
	}
	data, err := readSmallFile(l.fs, l.path(logKeyFile), maxSmallFile)
	if err != nil {
		return nil, fmt.Errorf("log key: %w", err)
	}
	priv, err := keys.ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("log key %s: %w", l.path(logKeyFile), err)
	}
	s, err := newNoteSigner(l.origin, priv)
	if err != nil {
		return nil, err
	}
	if s.vkey != l.vkey {
		return nil, fmt.Errorf("%w: log key %s is not the key of %s", ErrCorrupt, l.path(logKeyFile), l.path(logPubFile))
	}
	l.signer = s
	return s, nil
}
