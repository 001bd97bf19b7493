package ledger

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/inspect"
)

// appendRequest is one Append call waiting for the sequencer.
type appendRequest struct {
	cands    []*candidate
	outcomes []Outcome
	err      error
	done     chan struct{}
}

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

// batchWriter writes into a batch and reads the store as of the batch's
// start (the sequencer is the only writer, and a ProjectionBatch keeps
// its own pending writes).
type batchWriter struct {
	l *Ledger
	b *pebble.Batch
}

func (w batchWriter) Get(key []byte) ([]byte, error) { return w.l.get(key) }
func (w batchWriter) Set(key, value []byte) error    { return w.b.Set(key, value, nil) }
func (w batchWriter) Delete(key []byte) error        { return w.b.Delete(key, nil) }

// sequence is the single goroutine that orders appends. It takes the first
// waiting request, drains more up to the batch limit, admits each document
// against the log (identity, chains, tasks), writes the events, their tree
// hashes, index entries and a signed checkpoint into one batch and applies
// it with a synchronous WAL write requested. It does not wait for that sync:
// the syncer goroutine waits for it and only then answers the batch's
// callers, while the sequencer already builds the next batch (Pebble's WAL
// is sequential, so batches become durable in order). Requests with nothing
// to write are answered through the syncer too, so that no answer (a
// replay of an event still being synced, say) overtakes a durable write.
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
		b, size, err := l.commitBatch(reqs)
		l.syncq <- &inflight{b: b, size: size, reqs: reqs, err: err}
	}
}

// inflight is a batch applied to the store whose WAL sync may still be
// pending, with the requests it answers.
type inflight struct {
	b    *pebble.Batch // nil when the requests wrote nothing
	size int64         // the tree size once b is durable
	reqs []*appendRequest
	err  error
}

// syncWait answers batches in order once their writes are durable.
func (l *Ledger) syncWait() {
	defer l.wg.Done()
	for f := range l.syncq {
		err := f.err
		if f.b != nil {
			if err = f.b.SyncWait(); err != nil {
				err = fmt.Errorf("sync batch: %w", err)
				l.fail(err)
			} else {
				l.durable.Store(f.size)
			}
			f.b.Close()
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

// fail records an error after which the ledger accepts no appends: a WAL
// sync failed, so what is durable is unknown until the store is reopened.
func (l *Ledger) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fatal == nil {
		l.fatal = err
	}
}

func (l *Ledger) failed() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.fatal
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

// overlay is the state of the batch being built, seen before the store.
type overlay struct {
	hashes map[int64]tlog.Hash
	ident  map[string]identValue
	tasks  map[string]taskHead // task → latest event in this batch
	succ   map[string]int64    // receipt id → successor seq in this batch
}

// identValue is an identity index entry: the event's sequence number and
// document digest and, for receipts, the chain position and agent that the
// next receipt of the chain is checked against.
type identValue struct {
	seq      int64
	digest   [32]byte
	position int64 // -1 for other kinds
	agent    string
}

func (v identValue) encode() []byte {
	out := append(u64(uint64(v.seq)), v.digest[:]...)
	if v.position < 0 {
		return out
	}
	out = binary.AppendUvarint(out, uint64(v.position))
	return append(out, v.agent...)
}

func decodeIdent(b []byte) (identValue, bool) {
	if len(b) < 40 {
		return identValue{}, false
	}
	v := identValue{seq: int64(be64(b)), position: -1}
	copy(v.digest[:], b[8:40])
	if len(b) > 40 {
		p, n := binary.Uvarint(b[40:])
		if n <= 0 {
			return identValue{}, false
		}
		v.position = int64(p)
		v.agent = string(b[40+n:])
	}
	return v, true
}

// taskHead is a task's latest event.
type taskHead struct {
	seq int64
	id  string
}

func (l *Ledger) commitBatch(reqs []*appendRequest) (*pebble.Batch, int64, error) {
	l.seqMu.Lock()
	defer l.seqMu.Unlock()
	if err := l.failed(); err != nil {
		return nil, 0, err
	}
	if len(l.proj) > 0 {
		if stale, err := l.projectionsStale(); err != nil {
			return nil, 0, err
		} else if stale {
			return nil, 0, ErrStaleProjections
		}
	}
	l.mu.RLock()
	size, lastT := l.size, l.lastT
	l.mu.RUnlock()
	ov := &overlay{hashes: map[int64]tlog.Hash{}, ident: map[string]identValue{},
		tasks: map[string]taskHead{}, succ: map[string]int64{}}
	b := l.db.NewBatch()
	pbs := l.beginProjections()
	startSize := size
	fail := func(err error) (*pebble.Batch, int64, error) {
		b.Close()
		return nil, 0, err
	}
	for _, r := range reqs {
		r.outcomes = make([]Outcome, len(r.cands))
		for i, c := range r.cands {
			o, ev, err := l.admit(c, ov, size)
			if err != nil {
				return fail(err)
			}
			if ev != nil {
				t := c.arrival.UnixNano()
				if t < lastT {
					t = lastT // never backwards along the log
				}
				lastT = t
				ev.AppendedAt = time.Unix(0, t).UTC()
				if err := l.writeEvent(b, ov, ev, c, pbs); err != nil {
					return fail(err)
				}
				o.Seq = ev.Seq
				o.Event = ev
				size++
			}
			r.outcomes[i] = o
		}
	}
	if size == startSize {
		b.Close()
		return nil, 0, nil // nothing to write: every submission was refused
	}
	if err := l.flushProjections(batchWriter{l, b}, pbs); err != nil {
		return fail(err)
	}
	root, err := tlog.TreeHash(size, hashReader{l: l, pending: ov.hashes})
	if err != nil {
		return fail(fmt.Errorf("tree hash: %w", err))
	}
	c := Checkpoint{Origin: l.origin, Size: size, Root: root}
	ckpt, err := l.signer.sign(c)
	if err != nil {
		return fail(err)
	}
	b.Set(checkpointKey(size), ckpt, nil)
	b.Set(keySize, u64(uint64(size)), nil)
	b.Set(keyLastTime, u64(uint64(lastT)), nil)
	if err := l.db.ApplyNoSyncWait(b, pebble.Sync); err != nil {
		return fail(fmt.Errorf("commit batch: %w", err))
	}
	l.mu.Lock()
	l.size, l.lastT = size, lastT
	l.latest = &signedCheckpoint{note: ckpt, c: c}
	l.mu.Unlock()
	return b, size, nil
}

// admit decides one candidate against the log and the batch so far. It
// returns the event to write (Seq and links set) or nil with the outcome of
// a refusal.
func (l *Ledger) admit(c *candidate, ov *overlay, next int64) (Outcome, *Event, error) {
	o := Outcome{Name: c.sub.Name, Kind: c.kind, ID: c.id, Seq: -1, Status: StatusRejected}
	iv, found, err := l.lookupIdent(ov, c.kind, c.id)
	if err != nil {
		return o, nil, err
	}
	if found {
		o.Seq = iv.seq
		if iv.digest == c.digest {
			o.Status = StatusReplay
			o.Reason = fmt.Sprintf("already in the ledger as event %d", iv.seq)
		} else {
			o.Status = StatusConflict
			o.Reason = fmt.Sprintf("a different document with this identity is event %d", iv.seq)
		}
		return o, nil, nil
	}
	s := c.res
	ev := &Event{Seq: next, Kind: c.kind, ID: c.id, Subject: s.Subject, Signer: s.Signer, Time: s.Time,
		Position: -1, Digest: c.digest, Size: int64(len(c.sub.Data)), Attrs: canonjson.MakeObject()}
	switch c.kind {
	case codec.KindVRF:
		reason, err := l.linkReceipt(c, ov, ev)
		if err != nil {
			return o, nil, err
		}
		if reason != "" {
			o.Class, o.Reason = RejectLink, reason
			return o, nil, nil
		}
	case codec.KindRVWW, KindRollback:
		ev.Subject = c.task
		prev, ok, err := l.taskHead(ov, c.task)
		if err != nil {
			return o, nil, err
		}
		if ok {
			ev.Links = append(ev.Links, Link{Rel: RelTaskPrevious, ID: prev.id, Seq: prev.seq})
		} else if c.kind == KindRollback {
			o.Class = RejectLink
			o.Reason = fmt.Sprintf("task_id: no witness bundle of task %s is in the ledger; a rollback follows its task", c.task)
			return o, nil, nil
		}
	}
	ev.Attrs = kindAttrs(s)
	o.Status = StatusAppended
	return o, ev, nil
}

// linkReceipt applies the chain rules to a receipt: a previous_receipt must
// be in the log (or earlier in the batch), have no successor yet, sit at
// chain_position - 1 (a receipt without chain_position counts as position
// 0), and speak for the same agent. The receipt's agent is its agent_id,
// else its predecessor's agent, else (a chain's first receipt) its own
// receipt_id when it carries chain fields, else its signer, else its own id.
func (l *Ledger) linkReceipt(c *candidate, ov *overlay, ev *Event) (string, error) {
	if c.prev == "" {
		ev.Subject = c.agent
		if ev.Subject == "" {
			switch {
			case c.position >= 0:
				ev.Subject = c.id
			case c.res.Signer != "":
				ev.Subject = c.res.Signer
			default:
				ev.Subject = c.id
			}
		}
		ev.Position = max(c.position, 0)
		return "", nil
	}
	iv, found, err := l.lookupIdent(ov, codec.KindVRF, c.prev)
	if err != nil {
		return "", err
	}
	if !found {
		return fmt.Sprintf("metadata.previous_receipt: receipt %s is not in the ledger (append it first, or in the same call)", c.prev), nil
	}
	if succ, ok, err := l.successor(ov, c.prev); err != nil {
		return "", err
	} else if ok {
		return fmt.Sprintf("metadata.previous_receipt: receipt %s already has a successor (event %d); a chain cannot fork", c.prev, succ), nil
	}
	predPos := max(iv.position, 0)
	if c.position != predPos+1 {
		return fmt.Sprintf("metadata.chain_position: %d, want %d (one more than receipt %s at position %d)", c.position, predPos+1, c.prev, predPos), nil
	}
	agent := c.agent
	if agent == "" {
		agent = iv.agent
	} else if agent != iv.agent {
		return fmt.Sprintf("agent_id: %q continues receipt %s of agent %q; a chain speaks for one agent", agent, c.prev, iv.agent), nil
	}
	ev.Subject = agent
	ev.Position = c.position
	ev.Links = append(ev.Links, Link{Rel: RelPreviousReceipt, ID: c.prev, Seq: iv.seq})
	return "", nil
}

// writeEvent adds the event, its tree hashes and the ledger's own index
// entries to the batch, then runs the projectors.
func (l *Ledger) writeEvent(b *pebble.Batch, ov *overlay, ev *Event, c *candidate, pbs []ProjectionBatch) error {
	leaf := ev.Leaf()
	hashes, err := tlog.StoredHashes(ev.Seq, leaf, hashReader{l: l, pending: ov.hashes})
	if err != nil {
		return fmt.Errorf("stored hashes for event %d: %w", ev.Seq, err)
	}
	base := tlog.StoredHashIndex(0, ev.Seq)
	for i, h := range hashes {
		ov.hashes[base+int64(i)] = h
		b.Set(hashKey(base+int64(i)), h[:], nil)
	}
	b.Set(eventKey(ev.Seq), encodeLeafValue(leaf), nil)
	b.Set(dataKey(ev.Seq), c.payload, nil)
	iv := identValue{seq: ev.Seq, digest: ev.Digest, position: ev.Position, agent: ev.Subject}
	if ev.Kind != codec.KindVRF {
		iv.position, iv.agent = -1, ""
	}
	b.Set(identKey(ev.Kind, ev.ID), iv.encode(), nil)
	ov.ident[string(identKey(ev.Kind, ev.ID))] = iv
	b.Set(digestKey(ev.Digest), digestValue(ev), nil)
	b.Set(timeKey(ev.AppendedAt.UnixNano(), ev.Seq), nil, nil)
	if c.task != "" {
		b.Set(taskKey(c.task, ev.Seq), nil, nil)
		b.Set(taskHeadKey(c.task), append(u64(uint64(ev.Seq)), ev.ID...), nil)
		ov.tasks[c.task] = taskHead{seq: ev.Seq, id: ev.ID}
	}
	for _, link := range ev.Links {
		if link.Rel == RelPreviousReceipt {
			b.Set(successorKey(link.ID), u64(uint64(ev.Seq)), nil)
			ov.succ[link.ID] = ev.Seq
		}
	}
	return l.project(batchWriter{l, b}, pbs, ev)
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

func (l *Ledger) lookupIdent(ov *overlay, kind codec.Kind, id string) (identValue, bool, error) {
	k := identKey(kind, id)
	if iv, ok := ov.ident[string(k)]; ok {
		return iv, true, nil
	}
	var iv identValue
	err := l.view(k, func(v []byte) error {
		var ok bool
		if iv, ok = decodeIdent(v); !ok { // decodeIdent copies what it keeps
			return fmt.Errorf("%w: identity entry of %s %s", ErrCorrupt, kind, id)
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return identValue{}, false, nil
	}
	if err != nil {
		return identValue{}, false, err
	}
	return iv, true, nil
}

func (l *Ledger) successor(ov *overlay, id string) (int64, bool, error) {
	if s, ok := ov.succ[id]; ok {
		return s, true, nil
	}
	v, err := l.get(successorKey(id))
	if errors.Is(err, ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return int64(be64(v)), true, nil
}

// taskHead returns the latest event of a task, from the batch or the log.
func (l *Ledger) taskHead(ov *overlay, task string) (taskHead, bool, error) {
	if h, ok := ov.tasks[task]; ok {
		return h, true, nil
	}
	v, err := l.get(taskHeadKey(task))
	if errors.Is(err, ErrNotFound) {
		return taskHead{}, false, nil
	}
	if err != nil {
		return taskHead{}, false, err
	}
	if len(v) < 8 {
		return taskHead{}, false, fmt.Errorf("%w: task head of %s", ErrCorrupt, task)
	}
	return taskHead{seq: int64(be64(v)), id: string(v[8:])}, true, nil
}

// kindAttrs records in the event the facts of a document that projections
// need, so that they (and `ledger rebuild`) read leaves only and never
// decode documents again. They are fixed at append time: a bundle's
// governance evaluation uses the policies known then.
func kindAttrs(res *inspect.Result) canonjson.Value {
	type m = canonjson.Member
	str, num := canonjson.MakeString, canonjson.MakeInt
	switch {
	case res.Receipt != nil:
		r := res.Receipt
		c := r.Counts()
		ms := []m{
			{Key: "verdict", Value: str(r.Verdict())},
			{Key: "tier", Value: num(int64(r.Tier()))},
			{Key: "total", Value: num(c.Total)},
			{Key: "passed", Value: num(c.Passed)},
			{Key: "failed", Value: num(c.Failed)},
			{Key: "errors", Value: num(c.Errors)},
		}
		if tt := r.TaskType(); tt != "" {
			ms = append(ms, m{Key: "task_type", Value: str(tt)})
		}
		return canonjson.MakeObject(ms...)
	case res.Attestation != nil:
		a := res.Attestation
		passed, total, _ := a.PassRate()
		sys := a.System()
		return canonjson.MakeObject(
			m{Key: "verdict", Value: str(a.Verdict())},
			m{Key: "level", Value: str(a.Level())},
			m{Key: "passed", Value: num(passed)},
			m{Key: "total", Value: num(total)},
			m{Key: "system", Value: str(sys.Name)},
			m{Key: "version", Value: str(sys.Version)},
		)
	case res.Rollback != nil:
		return canonjson.MakeObject(m{Key: "restored_clean", Value: canonjson.MakeBool(res.Rollback.RestoredClean)})
	case res.Bundle != nil:
		b := res.Bundle
		h := b.Header
		ms := []m{
			{Key: "outcome", Value: str(b.OutcomeName())},
			{Key: "mode", Value: num(int64(h.Mode))},
			{Key: "policy", Value: str(hex.EncodeToString(h.PolicyHash[:]))},
			{Key: "policy_known", Value: canonjson.MakeBool(res.Policy != nil)},
			{Key: "cost", Value: num(int64(h.TotalCostMicrodollars))},
			{Key: "latency_ms", Value: num(int64(h.TotalLatencyMS))},
			{Key: "tokens", Value: num(int64(h.TotalTokens))},
			{Key: "retries", Value: num(int64(h.RetryCount))},
			{Key: "tool_calls", Value: num(int64(h.ToolCallCount))},
			{Key: "evidence_complete", Value: canonjson.MakeBool(b.EvidenceComplete())},
		}
		if res.Policy != nil {
			vs := make([]canonjson.Value, len(res.Violations))
			for i, v := range res.Violations {
				vs[i] = canonjson.MakeObject(
					m{Key: "call", Value: num(int64(v.CallIndex))},
					m{Key: "code", Value: str(v.Code)},
					m{Key: "tool", Value: str(v.Tool)},
				)
			}
			ms = append(ms, m{Key: "violations", Value: canonjson.MakeArray(vs...)})
		}
		return canonjson.MakeObject(ms...)
	}
	return canonjson.MakeObject()
}
