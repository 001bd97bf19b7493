package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/proof"
)

// The audit's scan is a pipeline (after scanView): one reader goroutine
// walks the leaf, document and tree-hash keyspaces in step, in chunks;
// Workers goroutines decode the leaves, check each document against its
// leaf, run the Verify hook (signatures: the costly part, so it gets
// every core) and check links; the calling goroutine consumes the chunks
// in log order: it recomputes the tree and compares it with the stored
// hashes and signed checkpoints, records problems in a deterministic
// order, and feeds the derived-entry recomputation.

const (
	auditChunkEvents = 256
	auditChunkBytes  = 4 << 20
	// auditProgressEvery is how often, in events, Progress is called.
	auditProgressEvery = 4096
)

// auditItem is one sequence number of the log as the store holds it, and
// what the workers found about it.
type auditItem struct {
	seq     int64
	leaf    string // the value under leaf/<seq> (format byte, leaf)
	hasLeaf bool
	doc     []byte // the value under doc/<seq> (codec byte, document), seq >= From only
	hasDoc  bool
	hashes  []byte // the stored hashes the event adds, 32 bytes each (seq >= From only)
	missing uint64 // bit i: stored hash i of the event is missing (or unreadable)
	notes   []string
	// Reads that failed a checksum: the event's problems.
	unread     []string
	docUnread  bool
	hashUnread uint64

	// Set by a worker.
	ev       *Event
	leafErr  error
	leafHash tlog.Hash
	docMsg   string
	check    DocCheck
	checked  bool
}

// auditChunk is a run of consecutive items, decoded by one worker.
type auditChunk struct {
	items []auditItem
	tail  []string // keys met after the last event (beyond the log)
	bytes int
	done  chan struct{}
}

// storedHashCount is the number of stored hashes leaf n adds: its own and
// one per perfect subtree it completes.
func storedHashCount(n int64) int { return 1 + bits.TrailingZeros64(^uint64(n)) }

// compactRange is the right edge of a Merkle tree being built leaf by
// leaf: the roots of its perfect subtrees, largest first. O(log n) memory.
// A peak can be unknown (an event whose leaf and tree hash are both gone):
// the tree is known again once a stored hash above it is read.
type compactRange struct {
	size    int64
	peaks   []tlog.Hash
	unknown []bool
}

// appendChecked adds a leaf hash (known false: none is available),
// building the stored hashes it adds in tlog's order (the leaf's hash,
// then each interior node it completes) and passing each to check with
// its position; check returns the hash to go on with: the stored one after
// a divergence it reported, so that one altered hash is reported once
// rather than at every ancestor and every later checkpoint, or after an
// unknown one.
func (c *compactRange) appendChecked(h tlog.Hash, known bool, check func(i int, h tlog.Hash, known bool) (tlog.Hash, bool)) {
	h, known = check(0, h, known)
	i := 1
	for s := c.size; s&1 == 1; s >>= 1 {
		last := len(c.peaks) - 1
		known = known && !c.unknown[last]
		if known {
			h = tlog.NodeHash(c.peaks[last], h)
		}
		h, known = check(i, h, known)
		c.peaks, c.unknown = c.peaks[:last], c.unknown[:last]
		i++
	}
	c.peaks, c.unknown = append(c.peaks, h), append(c.unknown, !known)
	c.size++
}

// root returns the root of the tree so far, and whether it is known.
func (c *compactRange) root() (tlog.Hash, bool) {
	if len(c.peaks) == 0 {
		return proof.EmptyRoot(), true
	}
	for _, u := range c.unknown {
		if u {
			return tlog.Hash{}, false
		}
	}
	h := c.peaks[len(c.peaks)-1]
	for i := len(c.peaks) - 2; i >= 0; i-- {
		h = tlog.NodeHash(c.peaks[i], h)
	}
	return h, true
}

// load sets the range to the tree of n leaves, from stored hashes; on an
// error every peak is unknown.
func (c *compactRange) load(n int64, hr tlog.HashReader) error {
	var idx []int64
	start := int64(0)
	for level := 62; level >= 0; level-- {
		if n&(1<<level) != 0 {
			idx = append(idx, tlog.StoredHashIndex(level, start>>level))
			start += 1 << level
		}
	}
	c.size = n
	c.unknown = make([]bool, len(idx))
	hs, err := hr.ReadHashes(idx)
	if err != nil {
		c.peaks = make([]tlog.Hash, len(idx))
		for i := range c.unknown {
			c.unknown[i] = true
		}
		return err
	}
	c.peaks = hs
	return nil
}

// keyStream walks one keyspace whose keys end in a big-endian number,
// taking the keys in order. A read that fails a checksum is the event's
// problem, not the end of the audit: the stream resumes with a new
// iterator from the next number it is asked for.
type keyStream struct {
	v      *view
	it     *pebble.Iterator
	prefix []byte
	what   string
	ok     bool
	broken error // the failed read that stopped it, until it resumes
}

func newKeyStream(v *view, prefix []byte, from int64, what string) (*keyStream, error) {
	k := &keyStream{v: v, prefix: prefix, what: what}
	return k, k.open(from)
}

// open starts an iterator at key number n.
func (k *keyStream) open(n int64) error {
	if k.it != nil {
		_ = k.it.Close() // it failed a read already: that is the error reported
	}
	it, err := viewIter(k.v, join(k.prefix, u64(uint64(n))), prefixEnd(k.prefix))
	if err != nil {
		return err
	}
	k.it, k.broken = it, nil
	k.ok = it.First()
	k.stopped()
	return nil
}

// stopped records why the iterator stopped, when it was a failed read.
func (k *keyStream) stopped() {
	if !k.ok && k.broken == nil {
		if err := k.it.Error(); err != nil {
			k.broken = storeErr(err)
		}
	}
}

func (k *keyStream) next() {
	k.ok = k.it.Next()
	k.stopped()
}

// take returns the value of the key numbered n (valid until the next
// call), false when it is absent, or the failed read (wrapping ErrCorrupt
// for a checksum failure) that kept it from being read. Keys before it
// that belong to no number (a key of another length) are reported to
// stray.
func (k *keyStream) take(n int64, stray func(string)) ([]byte, bool, error) {
	if k.broken != nil {
		if err := k.open(n); err != nil {
			return nil, false, err
		}
	}
	for k.ok {
		key := k.it.Key()
		if len(key) != len(k.prefix)+8 {
			stray(fmt.Sprintf("%s key %x belongs to no event", k.what, key))
			k.next()
			continue
		}
		kn := binary.BigEndian.Uint64(key[len(k.prefix):])
		switch {
		case kn == uint64(n):
			return k.it.Value(), true, nil
		case kn < uint64(n):
			stray(fmt.Sprintf("%s key %x belongs to no event", k.what, key))
			k.next()
		default:
			return nil, false, nil
		}
	}
	return nil, false, k.broken
}

// rest reports the keys left after the log's end.
func (k *keyStream) rest(size int64, note func(string)) {
	if k.broken != nil {
		if err := k.open(size); err != nil {
			note(fmt.Sprintf("the %s keys beyond the log cannot be read: %v", k.what, err))
			return
		}
	}
	for ; k.ok; k.next() {
		note(fmt.Sprintf("%s key %x lies beyond the log's %d events (a partial batch)", k.what, k.it.Key(), size))
	}
	if k.broken != nil {
		note(fmt.Sprintf("the %s keys beyond the log cannot be read: %v", k.what, k.broken))
	}
}

func (k *keyStream) close() {
	if k != nil && k.it != nil {
		_ = k.it.Close() // reads are checked as they are made
	}
}

// scan runs the pipeline over every event.
func (a *auditor) scan(ctx context.Context, ck *checkpointStreams) error {
	if a.from == 0 {
		if err := a.startTree(ck); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: every goroutine has returned
	defer cancel()
	workers := a.opts.Workers
	jobs := make(chan *auditChunk, workers)
	order := make(chan *auditChunk, workers+2)
	var readErr error // written by the reader before it closes order
	wg.Go(func() {
		defer close(jobs)
		defer close(order)
		readErr = a.read(ctx, jobs, order)
	})
	for range workers {
		wg.Go(func() {
			var lp proof.LeafParser
			for c := range jobs {
				a.work(c, &lp)
			}
		})
	}
	for c := range order {
		select {
		case <-c.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		for i := range c.items {
			if err := a.consume(&c.items[i], ck); err != nil {
				return err
			}
		}
		for _, n := range c.tail {
			a.problem(-1, "%s", n)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if readErr != nil {
		return readErr
	}
	if err := a.derive.finish(); err != nil {
		return err
	}
	if r, ok := a.tree.root(); ok {
		a.rep.Root = r
	}
	if err := ck.rest(a); err != nil {
		return err
	}
	if a.opts.Progress != nil {
		a.opts.Progress(a.v.size, a.v.size)
	}
	return nil
}

// read walks the store's leaf, document and tree-hash keyspaces in step
// and sends chunks of items, in order, to the workers and the consumer.
func (a *auditor) read(ctx context.Context, jobs, order chan<- *auditChunk) error {
	v, from := a.v, a.from
	leaves, err := newKeyStream(v, prefixLeaf, 0, "leaf")
	if err != nil {
		return err
	}
	defer leaves.close()
	docs, err := newKeyStream(v, prefixDoc, from, "document")
	if err != nil {
		return err
	}
	defer docs.close()
	hashes, err := newKeyStream(v, prefixHash, tlog.StoredHashIndex(0, from), "tree hash")
	if err != nil {
		return err
	}
	defer hashes.close()

	c := &auditChunk{done: make(chan struct{})}
	send := func() bool {
		select {
		case order <- c:
		case <-ctx.Done():
			return false
		}
		select {
		case jobs <- c:
		case <-ctx.Done():
			return false
		}
		c = &auditChunk{done: make(chan struct{})}
		return true
	}
	var notes []string
	stray := func(s string) { notes = append(notes, s) }
	// unreadable notes a failed read as the event's problem; a failure
	// that is not damaged data ends the audit.
	unreadable := func(it *auditItem, what string, err error) error {
		if !errors.Is(err, ErrCorrupt) {
			return err
		}
		it.unread = append(it.unread, fmt.Sprintf("event %d: its %s cannot be read: %v", it.seq, what, err))
		return nil
	}
	for seq := int64(0); seq < v.size; seq++ {
		if len(c.items) == 0 {
			c.items = make([]auditItem, 0, min(auditChunkEvents, v.size-seq))
		}
		c.items = append(c.items, auditItem{seq: seq})
		it := &c.items[len(c.items)-1]
		val, ok, err := leaves.take(seq, stray)
		if err != nil {
			if err := unreadable(it, "leaf", err); err != nil {
				return err
			}
		} else if ok {
			it.leaf, it.hasLeaf = string(val), true
			c.bytes += len(val)
			leaves.next()
		}
		if seq >= from {
			val, ok, err := docs.take(seq, stray)
			if err != nil {
				if err := unreadable(it, "document", err); err != nil {
					return err
				}
				it.docUnread = true
			} else if ok {
				it.doc, it.hasDoc = bytes.Clone(val), true
				c.bytes += len(val)
				docs.next()
			}
			n := storedHashCount(seq)
			base := tlog.StoredHashIndex(0, seq)
			it.hashes = make([]byte, 0, n*tlog.HashSize)
			for i := range n {
				val, ok, err := hashes.take(base+int64(i), stray)
				if err != nil {
					if err := unreadable(it, fmt.Sprintf("tree hash %d", base+int64(i)), err); err != nil {
						return err
					}
					it.hashUnread |= 1 << i
				}
				if ok && len(val) == tlog.HashSize {
					it.hashes = append(it.hashes, val...)
					hashes.next()
					continue
				}
				if ok { // a stored hash of another size: damaged
					hashes.next()
				}
				it.hashes = append(it.hashes, make([]byte, tlog.HashSize)...)
				it.missing |= 1 << i
			}
		}
		it.notes, notes = notes, nil
		if len(c.items) == auditChunkEvents || c.bytes >= auditChunkBytes {
			if !send() {
				return ctx.Err()
			}
		}
	}
	note := func(s string) { c.tail = append(c.tail, s) }
	c.tail = append(c.tail, notes...)
	leaves.rest(v.size, note)
	docs.rest(v.size, note)
	hashes.rest(v.size, note)
	if len(c.items) > 0 || len(c.tail) > 0 {
		send()
	}
	return ctx.Err()
}

// work decodes a chunk's leaves and checks its documents and links.
func (a *auditor) work(c *auditChunk, lp *proof.LeafParser) {
	defer close(c.done)
	for i := range c.items {
		it := &c.items[i]
		if it.hasLeaf {
			it.ev, it.leafErr = decodeLeafString(lp, it.leaf)
			if it.seq >= a.from {
				it.leafHash = leafHashString(it.leaf[min(1, len(it.leaf)):])
			}
		}
		if it.seq < a.from || it.ev == nil {
			it.doc = nil
			continue
		}
		a.checkDoc(it)
		it.doc = nil
	}
}

// checkDoc checks an item's document against its leaf and, with the
// Verify hook, what the document says.
func (a *auditor) checkDoc(it *auditItem) {
	ev := it.ev
	if it.docUnread {
		return // reported
	}
	if !it.hasDoc {
		it.docMsg = fmt.Sprintf("event %d has no document", it.seq)
		return
	}
	var d []byte
	switch {
	case len(it.doc) < 1:
		it.docMsg = fmt.Sprintf("event %d: its document is empty (no payload codec byte)", it.seq)
		return
	case it.doc[0] == payloadRaw:
		d = it.doc[1:]
	default:
		var err error
		if d, err = a.l.decodePayload(it.doc); err != nil {
			it.docMsg = fmt.Sprintf("event %d: %v", it.seq, err)
			return
		}
	}
	if int64(len(d)) != ev.Size || sha256Sum(d) != ev.Digest {
		it.docMsg = fmt.Sprintf("event %d: the document does not match the digest and size its leaf commits to", it.seq)
		return
	}
	if a.opts.Verify != nil {
		ev.Data = d
		it.check = a.opts.Verify(ev)
		it.checked = true
		ev.Data = nil
	}
}

// linkKinds lists, for each relation, the kinds its target may have, the
// likeliest first.
var linkKinds = map[string][]codec.Kind{
	RelPreviousReceipt: {codec.KindVRF},
	RelTaskPrevious:    {codec.KindRVWW, KindRollback},
}

// recentIDs is how many of the latest events' identities the audit keeps
// to check links against (links mostly point to recent events: a chain's
// previous receipt, a task's previous bundle); older targets are looked
// up in the identity index. 65,536 identities of up to a few hundred bytes.
const recentIDs = 1 << 16

// idRing holds the identities of the latest recentIDs events, by seq.
type idRing struct {
	seq []int64
	id  []string
}

func (r *idRing) put(seq int64, id string) {
	if r.seq == nil {
		r.seq, r.id = make([]int64, recentIDs), make([]string, recentIDs)
		for i := range r.seq {
			r.seq[i] = -1
		}
	}
	// A copy: the leaf's strings share its memory, which must not stay.
	r.seq[seq%recentIDs], r.id[seq%recentIDs] = seq, strings.Clone(id)
}

func (r *idRing) get(seq int64) (string, bool) {
	if r.seq == nil || seq < 0 || r.seq[seq%recentIDs] != seq {
		return "", false
	}
	return r.id[seq%recentIDs], true
}

// checkLinks checks that an event's links point back to events of the
// identity they name: the identity of the leaf stored at that place (kept
// for recent events), else the identity index (itself compared with the
// events).
func (a *auditor) checkLinks(s int64, ev *Event) {
	for _, lk := range ev.Links {
		if lk.Seq >= ev.Seq || lk.Seq < 0 {
			a.problem(s, "event %d: link %s points forward to event %d", s, lk.Rel, lk.Seq)
			continue
		}
		if id, ok := a.ids.get(lk.Seq); ok {
			if id != lk.ID {
				a.problem(s, "event %d: link %s names %s at event %d, which is %s", s, lk.Rel, lk.ID, lk.Seq, id)
			}
			continue
		}
		kinds := linkKinds[lk.Rel]
		if kinds == nil {
			kinds = lookupOrder
		}
		confirmed := false
		for _, kind := range kinds {
			iv, found, err := lookupIdent(a.v.r, identKey(kind, lk.ID))
			if err == nil && found && iv.seq == lk.Seq {
				confirmed = true
				break
			}
		}
		if !confirmed {
			a.problem(s, "event %d: link %s names %s at event %d, which the identity index does not confirm", s, lk.Rel, lk.ID, lk.Seq)
		}
	}
}

// consume takes one item, in log order.
func (a *auditor) consume(it *auditItem, ck *checkpointStreams) error {
	s := it.seq
	for _, n := range it.notes {
		a.problem(-1, "%s", n)
	}
	for _, u := range it.unread {
		a.problem(s, "%s", u)
	}
	ev := it.ev
	switch {
	case !it.hasLeaf && len(it.unread) > 0 && strings.Contains(it.unread[0], "its leaf cannot be read"):
		// reported
	case !it.hasLeaf:
		a.problem(s, "event %d is missing: no leaf is stored for it", s)
	case it.leafErr != nil:
		a.problem(s, "event %d: its leaf does not decode: %v", s, it.leafErr)
	case ev.Seq != s:
		a.problem(s, "the leaf stored as event %d says it is event %d (events moved or swapped)", s, ev.Seq)
	}
	if s >= a.from {
		if err := a.treeStep(it, ck); err != nil {
			return err
		}
		if it.docMsg != "" {
			a.problem(s, "%s", it.docMsg)
		}
		if it.checked {
			c := &it.check
			switch {
			case c.Verified:
				a.rep.Verified++
			case c.Unverifiable != "":
				a.unverifiable(c.Unverifiable)
			case !c.Signed:
				a.rep.Unsigned++
			}
			for _, p := range c.Problems {
				a.problem(s, "event %d: %s", s, p)
			}
		}
		if ev != nil && it.leafErr == nil {
			a.checkLinks(s, ev)
		}
	}
	if ev != nil && it.leafErr == nil {
		if ev.Seq == s {
			a.ids.put(s, ev.ID) // a misplaced leaf's time says nothing of this place
			t := ev.AppendedAt.UnixNano()
			if a.haveLastAt && t < a.lastAt && s >= a.from {
				a.problem(s, "event %d: appended_at goes backwards", s)
			}
			a.lastAt, a.haveLastAt = max(t, a.lastAt), true
		}
		if err := a.derive.add(a, s, ev); err != nil {
			return err
		}
	}
	if s+1 == a.from {
		if err := a.startTree(ck); err != nil {
			return err
		}
	}
	if a.opts.Progress != nil && (s+1)%auditProgressEvery == 0 {
		a.opts.Progress(s+1, a.v.size)
	}
	return nil
}

// startTree begins the tree: empty at 0, or, with From > 0, the tree of the
// first From events from its stored hashes, checked against what the
// ledger signed for that size.
func (a *auditor) startTree(ck *checkpointStreams) error {
	if a.from == 0 {
		return ck.at(a, 0)
	}
	if err := ck.skipTo(a, a.from); err != nil {
		return err
	}
	if err := a.tree.load(a.from, hashReader{r: a.v.r}); err != nil {
		a.problem(a.from-1, "the stored hashes of the tree of the first %d events are unreadable: %v", a.from, err)
	}
	return ck.at(a, a.from)
}

// treeStep recomputes the stored hashes an event adds, compares them with
// the store's and checks the signed checkpoints at the new size.
func (a *auditor) treeStep(it *auditItem, ck *checkpointStreams) error {
	s := it.seq
	var h tlog.Hash
	known := true
	switch {
	case it.hasLeaf:
		h = it.leafHash
	case it.missing&1 == 0:
		copy(h[:], it.hashes[:tlog.HashSize]) // the leaf is missing (reported): go on with its stored hash
	default:
		known = false
		a.problem(s, "event %d: neither its leaf nor its tree hash is stored: the tree is unknown above it until a stored hash covers it", s)
	}
	base := tlog.StoredHashIndex(0, s)
	a.tree.appendChecked(h, known, func(i int, hh tlog.Hash, known bool) (tlog.Hash, bool) {
		idx := base + int64(i)
		stored := it.hashes[i*tlog.HashSize : (i+1)*tlog.HashSize]
		switch {
		case it.missing&(1<<i) != 0:
			if (i > 0 || known) && it.hashUnread&(1<<i) == 0 {
				a.problem(s, "event %d: tree hash %d is missing", s, idx)
			}
			return hh, known
		case !known:
			return tlog.Hash(stored), true // nothing to compare it with: take it
		case !bytes.Equal(stored, hh[:]):
			if i == 0 {
				a.problem(s, "event %d: its leaf does not match the tree hash stored for it", s)
			} else {
				a.problem(s, "event %d: stored tree hash %d differs from the one recomputed from the leaves", s, idx)
			}
			return tlog.Hash(stored), true
		}
		return hh, true
	})
	return ck.at(a, s+1)
}

// checkpointStreams walks the signed checkpoints (the store's checkpoint/
// entries and the checkpoint log's records), in size order, beside the
// events.
type checkpointStreams struct {
	it      *pebble.Iterator
	ok      bool
	log     *ckptLogReader
	logNext *ckptRecord
	run     checkpointRun
}

func (a *auditor) newCheckpointStreams() (*checkpointStreams, error) {
	it, err := viewIter(a.v, prefixCkpt, prefixEnd(prefixCkpt))
	if err != nil {
		return nil, err
	}
	ck := &checkpointStreams{it: it, ok: it.First()}
	if a.l.format >= 2 {
		// Records below From are read without checking their signatures:
		// the audit does not cover them.
		from := a.from
		open := func(note []byte) (proof.Checkpoint, error) {
			if c, err := parseNoteUnverified(note); err == nil && c.Size < from {
				return c, nil
			}
			return a.l.openNote(note)
		}
		ck.log, err = openCkptLogReader(a.l.fs, a.l.path(ckptLogFile), open)
		if err != nil {
			a.problem(-1, "checkpoint log: %v", err)
			ck.log = nil
		}
	}
	ck.advanceLog(a)
	return ck, nil
}

// parseNoteUnverified reads a signed note's checkpoint without checking
// its signatures.
func parseNoteUnverified(note []byte) (proof.Checkpoint, error) {
	i := bytes.Index(note, []byte("\n\n"))
	if i < 0 {
		return proof.Checkpoint{}, fmt.Errorf("checkpoint: no blank line before the signatures")
	}
	return proof.ParseCheckpoint(string(note[:i+1]))
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

// skipTo passes the checkpoints of sizes below n unchecked.
func (ck *checkpointStreams) skipTo(a *auditor, n int64) error {
	for ; ck.ok; ck.ok = ck.it.Next() {
		size, err := decodeKeySeq(prefixCkpt, ck.it.Key())
		if err == nil && size >= n {
			break
		}
	}
	for ck.logNext != nil && ck.logNext.c.Size < n {
		ck.advanceLog(a)
	}
	return storeErr(ck.it.Error())
}

// at checks every signed checkpoint for size n against the tree recomputed
// so far (which holds n leaves), and the saved checkpoint when it is for n.
func (ck *checkpointStreams) at(a *auditor, n int64) error {
	seq := max(n-1, -1)
	var sources []string
	var roots []tlog.Hash
	for ; ck.ok; ck.ok = ck.it.Next() {
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
			a.problem(seq, "the stored checkpoint for size %d does not verify: %s", n, noteProblem(ck.it.Value(), a.l.vkey, err))
			continue
		}
		if c.Size != size {
			a.problem(seq, "the stored checkpoint under size %d is for size %d", size, c.Size)
			continue
		}
		sources, roots = append(sources, "in the store"), append(roots, c.Root)
	}
	for ck.logNext != nil && ck.logNext.c.Size <= n {
		if ck.logNext.c.Size == n {
			sources, roots = append(sources, "in the checkpoint log"), append(roots, ck.logNext.c.Root)
		}
		ck.advanceLog(a)
	}
	var root *tlog.Hash
	rootKnown := true
	rootAt := func() tlog.Hash {
		if root == nil {
			r, ok := a.tree.root()
			root, rootKnown = &r, ok
		}
		return *root
	}
	if len(roots) > 0 {
		a.rep.Checkpoints++ // sizes signed, each counted once
		if len(roots) == 2 && roots[0] != roots[1] {
			a.problem(seq, "fork: two different roots were signed for size %d (%s in the store, %s in the checkpoint log)", n, b64(roots[0][:]), b64(roots[1][:]))
		}
		if rootAt(); rootKnown {
			var bad []string
			var badRoot tlog.Hash
			for i, r := range roots {
				if r != rootAt() {
					bad, badRoot = append(bad, sources[i]), r
				}
			}
			if len(bad) > 0 {
				ck.disagree(a, n, strings.Join(bad, " and "), badRoot, rootAt())
			} else {
				ck.agree(a)
			}
		}
	}
	if ag := a.against; ag != nil && !ag.done && ag.parsed && ag.c.Size == n {
		if r := rootAt(); rootKnown {
			a.againstByTree(r)
		}
	}
	return storeErr(ck.it.Error())
}

// disagree reports a signed root that differs from the tree's, once per
// run of consecutive signed sizes that disagree (the run's length is
// reported when it ends).
func (ck *checkpointStreams) disagree(a *auditor, n int64, where string, signed, tree tlog.Hash) {
	if ck.run.active {
		ck.run.more++
		ck.run.last = n
		return
	}
	ck.run = checkpointRun{active: true, last: n}
	if a.from > 0 && n == a.from {
		a.problem(n-1, "the checkpoint signed for size %d (%s) has root %s, the stored hashes of the first %d events give %s", n, where, b64(signed[:]), n, b64(tree[:]))
		return
	}
	a.problem(n-1, "the checkpoint signed for size %d (%s) has root %s, the events give %s", n, where, b64(signed[:]), b64(tree[:]))
}

// agree ends a run of disagreeing signed sizes.
func (ck *checkpointStreams) agree(a *auditor) {
	if ck.run.active && ck.run.more > 0 {
		a.problem(ck.run.last-1, "the checkpoints signed for the %d sizes after it, up to %d, disagree with the tree too", ck.run.more, ck.run.last)
	}
	ck.run = checkpointRun{}
}

// checkpointRun is a run of consecutive signed sizes whose roots disagree
// with the tree.
type checkpointRun struct {
	active bool
	more   int
	last   int64
}

// rest reports signed checkpoints for sizes beyond the log.
func (ck *checkpointStreams) rest(a *auditor) error {
	ck.agree(a)
	for ; ck.ok; ck.ok = ck.it.Next() {
		a.problem(-1, "a checkpoint is stored under key %x, beyond the log's %d events", ck.it.Key(), a.v.size)
	}
	// A read copy's checkpoint log goes on past the copy: those are the
	// writer's later batches (opening the copy checked that it is not
	// ahead of the log); the store's own audit checks them.
	if ck.logNext != nil && a.l.copy == nil {
		// Events the ledger signed for are gone: name the first of them.
		first, more := ck.logNext.c.Size, 0
		for ck.advanceLog(a); ck.logNext != nil; ck.advanceLog(a) {
			more++
		}
		also := ""
		if more > 0 {
			also = fmt.Sprintf(" (and %d more beyond it)", more)
		}
		a.problem(a.v.size, "the checkpoint log holds a checkpoint for size %d%s, but the store holds %d events: events from %d on, which the ledger signed for, are missing", first, also, a.v.size, a.v.size)
	}
	return storeErr(ck.it.Error())
}
