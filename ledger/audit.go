package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/proofledger/ledger/proof"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/mod/sumdb/tlog"
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
	l         *Ledger
	v         *view
	rep       *AuditReport
	max       int
	implCount map[string]int64 // implied entries per index keyspace (a handful of keys)
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
func (l *Ledger) Audit(ctx context.Context, opts AuditOptions) (_ *AuditReport, err error) {
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
	defer func() {
		if cerr := ck.close(); cerr != nil && err == nil {
			err = found(cerr)
		}
	}()
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
	dataIt, err := viewIter(v, prefixDoc, prefixEnd(prefixDoc))
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
		confirmed := false
		for kind := range kindCodes {
			iv, found, err := lookupIdent(a.v.r, identKey(kind, lk.ID))
			if err == nil && found && iv.seq == lk.Seq {
				confirmed = true
				break
			}
		}
		if !confirmed {
			a.problem(ev.Seq, "event %d: link %s names %s at event %d, which the identity index does not confirm", ev.Seq, lk.Rel, lk.ID, lk.Seq)
		}
	}
}

// implied returns the entries an event implies: the store's own and the
// rules' (storeEntries, Rules.Entries: the descriptions the writer uses).
func (a *auditor) implied(ev *Event) []KV {
	kvs := storeEntries(ev)
	if a.l.rules != nil {
		kvs = append(kvs, a.l.rules.Entries(&ev.Leaf)...)
	}
	return kvs
}

// entries checks that the store holds every entry an event implies, and
// counts them per keyspace for indexCounts.
func (a *auditor) entries(ev *Event) error {
	for _, kv := range a.implied(ev) {
		a.count(kv.Key)
		got, err := viewGet(a.v, kv.Key)
		switch {
		case errors.Is(err, ErrNotFound):
			a.problem(ev.Seq, "event %d: index entry %s is missing", ev.Seq, keyName(kv.Key))
		case err != nil:
			return err
		case !bytes.Equal(got, kv.Value):
			a.problem(ev.Seq, "event %d: index entry %s holds %s, the event implies %s", ev.Seq, keyName(kv.Key), shortHex(got), shortHex(kv.Value))
		}
	}
	return nil
}

// keyspaces are the index keyspaces whose entries the audit counts.
func (a *auditor) keyspaces() [][]byte {
	ks := [][]byte{prefixIdent, prefixDigest, prefixTime}
	if a.l.rules != nil {
		ks = append(ks, a.l.rules.Keyspaces()...)
	}
	return ks
}

// count adds an implied entry to its keyspace's count.
func (a *auditor) count(key []byte) {
	if a.implCount == nil {
		a.implCount = map[string]int64{}
	}
	for _, p := range a.keyspaces() {
		if bytes.HasPrefix(key, p) {
			a.implCount[string(p)]++
			return
		}
	}
	a.problem(-1, "an implied entry %s lies in no index keyspace", keyName(key))
}

// indexCounts checks that each index keyspace holds no entry beyond those
// the events imply: every implied entry was found, and the entries are
// distinct keys, so equal counts mean equal sets.
func (a *auditor) indexCounts() error {
	for _, p := range a.keyspaces() {
		var n int64
		err := func() (err error) {
			it, err := viewIter(a.v, p, prefixEnd(p))
			if err != nil {
				return err
			}
			defer closeIter(it, &err)
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			return storeErr(it.Error())
		}()
		if err != nil {
			return err
		}
		if want := a.implCount[string(p)]; n != want {
			a.problem(-1, "the %s index holds %d entries, the events imply %d", bytes.TrimSuffix(p, []byte("/")), n, want)
		}
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

// close closes both streams; the checkpoint iterator's error is returned
// (Pebble reports a failed read at Close too).
func (ck *checkpointStreams) close() error {
	ck.log.close()
	return storeErr(ck.it.Close())
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
	// A read copy's checkpoint log goes on past the copy: those are the
	// writer's later batches (opening the copy checked that it is not
	// ahead of the log); the store's own audit checks them.
	for ck.logNext != nil && a.l.copy == nil {
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
