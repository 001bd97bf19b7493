package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/proofledger/ledger/proof"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/codec"
)

// Problem is one divergence an audit found.
type Problem struct {
	// Seq is the event the problem is about, or -1.
	Seq int64 `json:"seq"`
	// What says what differs.
	What string `json:"what"`
}

// String renders the problem on one line.
func (p Problem) String() string { return p.What }

// AuditReport is what Audit found.
type AuditReport struct {
	// Events is the number of events the store says it holds.
	Events int64
	// Checkpoints is the number of signed sizes checked (each checkpoint
	// is kept in the store and in the checkpoint log).
	Checkpoints int64
	// Root is the tree root recomputed from the events' leaves.
	Root tlog.Hash
	// Problems lists the divergences found, up to AuditOptions.MaxProblems;
	// Omitted counts the rest.
	Problems []Problem
	Omitted  int64
}

// OK reports whether the audit found nothing wrong.
func (r *AuditReport) OK() bool { return len(r.Problems) == 0 && r.Omitted == 0 }

// AuditOptions configure Audit.
type AuditOptions struct {
	// MaxProblems bounds the problems listed (default 200); the rest are
	// counted.
	MaxProblems int
	// Progress, when set, is called now and then with the events checked.
	Progress func(done, total int64)
}

// auditor carries one audit's state; its memory is bounded whatever the
// ledger's size.
type auditor struct {
	l   *Ledger
	v   *view
	rep *AuditReport
	max int
}

func (a *auditor) problem(seq int64, format string, args ...any) {
	if len(a.rep.Problems) < a.max {
		a.rep.Problems = append(a.rep.Problems, Problem{Seq: seq, What: fmt.Sprintf(format, args...)})
	} else {
		a.rep.Omitted++
	}
}

// Audit checks the ledger from scratch, in memory bounded whatever its
// size: events are dense from 0 with nothing beyond the recorded size;
// each leaf parses and names its own sequence number, each document
// matches its leaf's digest and size, arrival times never go backwards and
// links point to earlier events of the right identity; the Merkle tree
// recomputed from the leaves matches every stored hash; every signed
// checkpoint, in the store and in the checkpoint log, verifies under the
// log key and matches the recomputed tree at its size (two different roots
// for one size is a fork); and the identity, digest, time, task and chain
// indexes hold exactly the entries the events imply. A damaged ledger
// (opened with AllowDamaged) is audited too, its damage the first problem.
func (l *Ledger) Audit(ctx context.Context, opts AuditOptions) (*AuditReport, error) {
	v, err := l.acquire()
	if err != nil {
		return nil, err
	}
	defer l.releaseView(v)
	a := &auditor{l: l, v: v, rep: &AuditReport{Events: v.size}, max: opts.MaxProblems}
	if a.max <= 0 {
		a.max = 200
	}
	if l.damage != nil {
		var de *DamageError
		if errors.As(l.damage, &de) {
			a.problem(-1, "%s", de.Reason)
		} else {
			a.problem(-1, "%v", l.damage)
		}
	}
	// Damaged bytes that stop a phase (a checksum failure, an unreadable
	// key) are a finding, not a failure of the audit.
	found := func(err error) error {
		if errors.Is(err, ErrCorrupt) {
			a.problem(-1, "%v", err)
			return nil
		}
		return err
	}
	ck, err := a.newCheckpointStreams()
	if err != nil {
		return a.rep, found(err)
	}
	defer ck.close()
	if err := a.events(ctx, ck, opts.Progress); err != nil {
		return a.rep, found(err)
	}
	if err := a.indexCounts(); err != nil {
		return a.rep, found(err)
	}
	return a.rep, nil
}

// events streams every event once: documents, leaves, tree hashes,
// checkpoints at their sizes and the index entries each event implies.
func (a *auditor) events(ctx context.Context, ck *checkpointStreams, progress func(done, total int64)) (err error) {
	v := a.v
	hashIt, err := viewIter(v, prefixHash, prefixEnd(prefixHash))
	if err != nil {
		return err
	}
	defer closeIter(hashIt, &err)
	hashIt.First()
	dataIt, err := viewIter(v, prefixData, prefixEnd(prefixData))
	if err != nil {
		return err
	}
	defer closeIter(dataIt, &err)
	dataIt.First()
	tree := &proof.TreeBuilder{}
	live := map[int64]tlog.Hash{} // the stored hashes later leaves still need
	var lastAppended int64
	var nextHash int64
	if err := ck.at(a, 0, tree); err != nil {
		return err
	}
	scanErr := a.l.scanView(ctx, v, 0, func(ev *Event, leaf string) (bool, error) {
		seq := ev.Seq
		// The document.
		dk := dataKey(seq)
		for dataIt.Valid() && bytes.Compare(dataIt.Key(), dk) < 0 {
			a.problem(-1, "document key %x belongs to no event", dataIt.Key())
			dataIt.Next()
		}
		if !dataIt.Valid() || !bytes.Equal(dataIt.Key(), dk) {
			a.problem(seq, "event %d has no document", seq)
		} else if d, err := a.l.decodePayload(dataIt.Value()); err != nil {
			a.problem(seq, "event %d: %v", seq, err)
		} else if int64(len(d)) != ev.Size || sha256Sum(d) != ev.Digest {
			a.problem(seq, "event %d: the document does not match the digest and size its leaf commits to", seq)
		}
		if dataIt.Valid() && bytes.Equal(dataIt.Key(), dk) {
			dataIt.Next()
		}
		// The leaf.
		if t := ev.AppendedAt.UnixNano(); t < lastAppended {
			a.problem(seq, "event %d: appended_at goes backwards", seq)
		} else {
			lastAppended = t
		}
		a.links(ev)
		// The tree: recompute the stored hashes this leaf adds and compare
		// them with the store's, in order.
		hashes, err := tlog.StoredHashes(seq, []byte(leaf), tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(idx))
			for i, x := range idx {
				h, ok := live[x]
				if !ok {
					return nil, fmt.Errorf("audit: hash %d not kept", x)
				}
				out[i] = h
			}
			return out, nil
		}))
		if err != nil {
			return false, err
		}
		for i, h := range hashes {
			idx := tlog.StoredHashIndex(0, seq) + int64(i)
			if idx != nextHash {
				return false, fmt.Errorf("audit: hash index %d, expected %d", idx, nextHash)
			}
			nextHash++
			hk := hashKey(idx)
			for hashIt.Valid() && bytes.Compare(hashIt.Key(), hk) < 0 {
				a.problem(-1, "tree hash key %x belongs to no event", hashIt.Key())
				hashIt.Next()
			}
			if !hashIt.Valid() || !bytes.Equal(hashIt.Key(), hk) {
				a.problem(seq, "event %d: tree hash %d is missing", seq, idx)
			} else {
				if !bytes.Equal(hashIt.Value(), h[:]) {
					if i == 0 {
						a.problem(seq, "event %d: its leaf does not match the tree hash stored for it", seq)
					} else {
						a.problem(seq, "event %d: stored tree hash %d differs from the one recomputed from the leaves", seq, idx)
					}
				}
				hashIt.Next()
			}
		}
		keepLive(live, seq+1, hashes, tlog.StoredHashIndex(0, seq))
		tree.Append(hashes[0])
		// Checkpoints at this size; index entries.
		if err := ck.at(a, seq+1, tree); err != nil {
			return false, err
		}
		if err := a.entries(ev); err != nil {
			return false, err
		}
		if progress != nil && (seq+1)%65536 == 0 {
			progress(seq+1, v.size)
		}
		return true, nil
	})
	if scanErr != nil {
		if errors.Is(scanErr, ErrCorrupt) {
			a.problem(-1, "%v", scanErr)
			return nil
		}
		return scanErr
	}
	a.rep.Root = tree.Root()
	for ; hashIt.Valid(); hashIt.Next() {
		a.problem(-1, "tree hash key %x lies beyond the tree of %d events (a partial batch)", hashIt.Key(), v.size)
	}
	for ; dataIt.Valid(); dataIt.Next() {
		a.problem(-1, "document key %x lies beyond the log's %d events (a partial batch)", dataIt.Key(), v.size)
	}
	if err := ck.rest(a); err != nil {
		return err
	}
	if progress != nil {
		progress(v.size, v.size)
	}
	return nil
}

// keepLive keeps in live the stored hashes of the perfect subtrees that
// make up a tree of n leaves (all that later leaves need), given the
// hashes the last leaf added (at stored index base).
func keepLive(live map[int64]tlog.Hash, n int64, added []tlog.Hash, base int64) {
	for i, h := range added {
		live[base+int64(i)] = h
	}
	need := map[int64]bool{}
	start := int64(0)
	for level := 63; level >= 0; level-- {
		if n&(1<<level) != 0 {
			need[tlog.StoredHashIndex(level, start>>level)] = true
			start += 1 << level
		}
	}
	for k := range live {
		if !need[k] {
			delete(live, k)
		}
	}
}

// links checks that an event's links point back to events of the right
// identity (through the identity index, itself checked against the events).
func (a *auditor) links(ev *Event) {
	for _, lk := range ev.Links {
		if lk.Seq >= ev.Seq || lk.Seq < 0 {
			a.problem(ev.Seq, "event %d: link %s points forward to event %d", ev.Seq, lk.Rel, lk.Seq)
			continue
		}
		kind := codec.KindVRF
		if lk.Rel == RelTaskPrevious {
			continue // the task index check covers task links
		}
		iv, found, err := lookupIdent(a.v.r, nil, kind, lk.ID)
		if err != nil || !found || iv.seq != lk.Seq {
			a.problem(ev.Seq, "event %d: link %s names %s at event %d, which the identity index does not confirm", ev.Seq, lk.Rel, lk.ID, lk.Seq)
		}
	}
}

// entries checks the index entries an event implies (indexEntries).
func (a *auditor) entries(ev *Event) error {
	for _, e := range indexEntries(ev) {
		got, err := viewGet(a.v, e.key)
		if e.latest {
			// A task head names the task's latest event; checked in
			// indexCounts.
			continue
		}
		switch {
		case errors.Is(err, ErrNotFound):
			a.problem(ev.Seq, "event %d: index entry %s is missing", ev.Seq, keyName(e.key))
		case err != nil:
			return err
		case !bytes.Equal(got, e.value):
			a.problem(ev.Seq, "event %d: index entry %s holds %s, the event implies %s", ev.Seq, keyName(e.key), shortHex(got), shortHex(e.value))
		}
	}
	return nil
}

// indexCounts checks that each index holds no entry beyond those the
// events imply (every implied entry was found, so equal counts mean equal
// sets), and that each task head names its task's latest event.
func (a *auditor) indexCounts() error {
	v := a.v
	count := func(prefix []byte, fn func(k, val []byte) error) (n int64, err error) {
		it, err := viewIter(v, prefix, prefixEnd(prefix))
		if err != nil {
			return 0, err
		}
		defer closeIter(it, &err)
		for ok := it.First(); ok; ok = it.Next() {
			n++
			if fn != nil {
				if err := fn(it.Key(), it.Value()); err != nil {
					return n, err
				}
			}
		}
		return n, storeErr(it.Error())
	}
	// Expected counts come from the events: one identity, digest and time
	// entry each; one task entry per bundle or rollback; one successor per
	// previous_receipt link; one head per task.
	var wantTask, wantSucc int64
	err := a.l.scanView(context.Background(), v, 0, func(ev *Event, _ string) (bool, error) {
		if eventTask(ev) != "" {
			wantTask++
		}
		if linkOf(ev, RelPreviousReceipt) != nil {
			wantSucc++
		}
		return true, nil
	})
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return nil // already reported by the event pass
		}
		return err
	}
	for _, c := range []struct {
		name   string
		prefix []byte
		want   int64
	}{
		{"identity", prefixIdent, v.size},
		{"digest", prefixDigest, v.size},
		{"time", prefixTime, v.size},
		{"task", prefixTask, wantTask},
		{"successor", prefixSucc, wantSucc},
	} {
		n, err := count(c.prefix, nil)
		if err != nil {
			return err
		}
		if n != c.want {
			a.problem(-1, "the %s index holds %d entries, the events imply %d", c.name, n, c.want)
		}
	}
	// Task heads: K/<task> names the last k/<task>\0<seq> entry, and every
	// task has one.
	var tasks int64
	var prevTask []byte
	_, err = count(prefixTask, func(k, _ []byte) error {
		i := bytes.IndexByte(k[len(prefixTask):], 0)
		if i < 0 {
			a.problem(-1, "task index key %s is malformed", keyName(k))
			return nil
		}
		task := k[len(prefixTask) : len(prefixTask)+i]
		if !bytes.Equal(task, prevTask) {
			tasks++
			prevTask = bytes.Clone(task)
		}
		return nil
	})
	if err != nil {
		return err
	}
	heads, err := count(prefixTaskHead, func(k, val []byte) error {
		task := string(k[len(prefixTaskHead):])
		h, err := decodeTaskHead(k, val)
		if err != nil {
			a.problem(-1, "%v", err)
			return nil
		}
		p := taskPrefix(task)
		_, last, err := edgeKeys(v.r, p)
		if err != nil {
			return err
		}
		if last == nil {
			a.problem(h.seq, "task head of %s names event %d, but the task has no events", task, h.seq)
			return nil
		}
		seq, err := decodeKeySeq(p, last)
		if err != nil {
			a.problem(-1, "%v", err)
			return nil
		}
		if seq != h.seq {
			a.problem(h.seq, "task head of %s names event %d, but its latest event is %d", task, h.seq, seq)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if heads != tasks {
		a.problem(-1, "the task head index holds %d entries for %d tasks", heads, tasks)
	}
	return nil
}

// checkpointStreams walks the signed checkpoints (the store's c/ entries
// and the checkpoint log's records), in size order, beside the events.
type checkpointStreams struct {
	it      *pebble.Iterator
	log     *ckptLogReader
	logNext *ckptRecord
	last    map[int64]tlog.Hash // sizes signed so far at the current size (fork check)
}

func (a *auditor) newCheckpointStreams() (*checkpointStreams, error) {
	it, err := viewIter(a.v, prefixCkpt, prefixEnd(prefixCkpt))
	if err != nil {
		return nil, err
	}
	it.First()
	ck := &checkpointStreams{it: it, last: map[int64]tlog.Hash{}}
	if a.l.format >= 2 {
		ck.log, err = openCkptLogReader(a.l.fs, a.l.path(ckptLogFile), a.l.openNote)
		if err != nil {
			a.problem(-1, "checkpoint log: %v", err)
			ck.log = nil
		}
	}
	ck.advanceLog(a)
	return ck, nil
}

func (ck *checkpointStreams) close() {
	ck.it.Close()
	ck.log.close()
}

func (ck *checkpointStreams) advanceLog(a *auditor) {
	ck.logNext = nil
	if ck.log == nil {
		return
	}
	rec, err := ck.log.next()
	if err != nil {
		a.problem(-1, "checkpoint log: %v", err)
		ck.log = nil
		return
	}
	ck.logNext = rec
}

// at checks every signed checkpoint for size n (the tree holds n leaves).
func (ck *checkpointStreams) at(a *auditor, n int64, tree *proof.TreeBuilder) error {
	var root *tlog.Hash
	rootAt := func() tlog.Hash {
		if root == nil {
			r := tree.Root()
			root = &r
		}
		return *root
	}
	check := func(source string, c proof.Checkpoint) {
		if _, ok := ck.last[n]; !ok {
			a.rep.Checkpoints++ // sizes signed, each counted once
		}
		if r := rootAt(); c.Root != r {
			a.problem(n-1, "the %s checkpoint for size %d has root %s, the events give %s", source, n, b64(c.Root[:]), b64(r[:]))
		}
		if prev, ok := ck.last[n]; ok && prev != c.Root {
			a.problem(n-1, "fork: two different roots were signed for size %d", n)
		}
		ck.last = map[int64]tlog.Hash{n: c.Root}
	}
	for ; ck.it.Valid(); ck.it.Next() {
		size, err := decodeKeySeq(prefixCkpt, ck.it.Key())
		if err != nil {
			a.problem(-1, "%v", err)
			continue
		}
		if size > n {
			break
		}
		if size < n {
			continue // reported when its size was passed (or below the first event)
		}
		c, err := a.l.openNote(ck.it.Value())
		if err != nil {
			a.problem(max(n-1, -1), "the stored checkpoint for size %d does not verify: %v", n, err)
			continue
		}
		if c.Size != size {
			a.problem(max(n-1, -1), "the stored checkpoint under size %d is for size %d", size, c.Size)
			continue
		}
		check("stored", c)
	}
	for ck.logNext != nil && ck.logNext.c.Size <= n {
		if ck.logNext.c.Size == n {
			check("checkpoint log's", ck.logNext.c)
		}
		ck.advanceLog(a)
	}
	return ck.it.Error()
}

// rest reports signed checkpoints for sizes beyond the log.
func (ck *checkpointStreams) rest(a *auditor) error {
	for ; ck.it.Valid(); ck.it.Next() {
		a.problem(-1, "a checkpoint is stored under key %x, beyond the log's %d events", ck.it.Key(), a.v.size)
	}
	for ck.logNext != nil {
		a.problem(-1, "the checkpoint log holds a checkpoint for size %d, beyond the store's %d events: events the ledger signed for are missing", ck.logNext.c.Size, a.v.size)
		ck.advanceLog(a)
	}
	return ck.it.Error()
}

// shortHex renders a value for a message, bounded.
func shortHex(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%x… (%d bytes)", b[:40], len(b))
	}
	return fmt.Sprintf("%x", b)
}
