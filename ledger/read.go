package ledger

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/proofledger/ledger/proof"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/codec"
)

// Every read goes through a published view (view.go): it sees the durable
// log, never a batch whose sync is pending. Reads that answer with stored
// bytes check them: a leaf against the tree, a document against its leaf.

// Event returns event seq; withData also loads the original document
// bytes. The leaf is checked against the tree hash stored for it and the
// document against the leaf's digest and size; a mismatch is an error
// wrapping ErrCorrupt that names the event.
func (l *Ledger) Event(seq int64, withData bool) (*Event, error) {
	v, err := l.acquire()
	if err != nil {
		return nil, err
	}
	defer l.releaseView(v)
	ev, _, err := l.eventAt(v, seq, withData)
	return ev, err
}

// VerifiedEvent is Event with the leaf proven included in the tree of the
// latest signed checkpoint (an inclusion proof computed from the stored
// hashes and checked against the signed root): what `get --raw` serves.
func (l *Ledger) VerifiedEvent(seq int64, withData bool) (*Event, error) {
	v, err := l.acquire()
	if err != nil {
		return nil, err
	}
	defer l.releaseView(v)
	ev, leaf, err := l.eventAt(v, seq, withData)
	if err != nil {
		return nil, err
	}
	if err := verifyIncluded(v, seq, leaf); err != nil {
		return nil, err
	}
	return ev, nil
}

// verifyIncluded proves leaf seq in the tree of v's signed checkpoint.
func verifyIncluded(v *view, seq int64, leaf []byte) error {
	if v.ckpt.note == nil {
		return fmt.Errorf("event %d: %w: no signed checkpoint to check it against", seq, ErrDamaged)
	}
	p, err := tlog.ProveRecord(v.size, seq, hashReader{r: v.r})
	if err != nil {
		return fmt.Errorf("event %d: prove inclusion: %w", seq, err)
	}
	if err := tlog.CheckRecord(p, v.size, v.ckpt.c.Root, seq, tlog.RecordHash(leaf)); err != nil {
		return fmt.Errorf("%w: event %d: its leaf is not the one the signed tree of size %d holds (altered on disk): %v", ErrCorrupt, seq, v.size, err)
	}
	return nil
}

// eventAt reads event seq from v and returns it with its leaf.
func (l *Ledger) eventAt(v *view, seq int64, withData bool) (*Event, []byte, error) {
	if seq < 0 || seq >= v.size {
		return nil, nil, fmt.Errorf("event %d: %w", seq, ErrNotFound)
	}
	raw, err := viewGet(v, eventKey(seq))
	if errors.Is(err, ErrNotFound) {
		return nil, nil, fmt.Errorf("%w: event %d is missing from a log of %d events", ErrCorrupt, seq, v.size)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("event %d: %w", seq, err)
	}
	leaf, err := leafOf(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("event %d: %w", seq, err)
	}
	h, err := viewGet(v, hashKey(tlog.StoredHashIndex(0, seq)))
	if err != nil {
		return nil, nil, fmt.Errorf("event %d: its tree hash: %w", seq, err)
	}
	if want := tlog.RecordHash(leaf); !bytes.Equal(h, want[:]) {
		return nil, nil, fmt.Errorf("%w: event %d: its leaf does not match the tree hash stored for it (altered on disk)", ErrCorrupt, seq)
	}
	var lp proof.LeafParser
	ev, err := parseLeafEvent(&lp, leaf)
	if err != nil {
		return nil, nil, fmt.Errorf("event %d: %w", seq, err)
	}
	if ev.Seq != seq {
		return nil, nil, fmt.Errorf("%w: event %d: its leaf says seq %d", ErrCorrupt, seq, ev.Seq)
	}
	if withData {
		if err := l.loadData(v, ev); err != nil {
			return nil, nil, err
		}
	}
	return ev, leaf, nil
}

// loadData reads an event's document bytes into ev.Data and checks them
// against the leaf's digest and size.
func (l *Ledger) loadData(v *view, ev *Event) error {
	raw, err := viewGet(v, dataKey(ev.Seq))
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: event %d has no document", ErrCorrupt, ev.Seq)
	}
	if err != nil {
		return fmt.Errorf("event %d document: %w", ev.Seq, err)
	}
	d, err := l.decodePayload(raw)
	if err != nil {
		return fmt.Errorf("event %d: %w", ev.Seq, err)
	}
	return setData(ev, d)
}

// setData sets ev.Data after checking it against the leaf.
func setData(ev *Event, d []byte) error {
	if int64(len(d)) != ev.Size || sha256Sum(d) != ev.Digest {
		return fmt.Errorf("%w: event %d: its document does not match the digest and size its leaf commits to (altered on disk)", ErrCorrupt, ev.Seq)
	}
	ev.Data = d
	return nil
}

// Seen is the replay check an append makes, alone: whether a document
// identity of a kind is in the durable log and, if so, its event's
// sequence number. It is one point lookup of the identity index (Pebble
// bloom filters on every level keep it O(1) as the ledger grows) and
// reads no event.
func (l *Ledger) Seen(kind codec.Kind, id string) (seq int64, found bool, err error) {
	v, err := l.acquire()
	if err != nil {
		return -1, false, err
	}
	defer l.releaseView(v)
	iv, found, err := lookupIdent(v.r, identKey(kind, id))
	if err != nil || !found {
		return -1, false, err
	}
	return iv.seq, true, nil
}

// LookupDigest finds the event in the snapshot whose document's SHA-256 is
// d: a byte-identical copy of a stored document is a replay, whatever it
// says.
func (s *Snapshot) LookupDigest(d [32]byte) (seq int64, kind codec.Kind, id string, found bool, err error) {
	if s.v == nil {
		return 0, "", "", false, s.closedErr()
	}
	k := digestKey(d)
	val, err := viewGet(s.v, k)
	if errors.Is(err, ErrNotFound) {
		return 0, "", "", false, nil
	}
	if err != nil {
		return 0, "", "", false, err
	}
	seq, kind, id, err = decodeDigest(k, val)
	if err != nil || seq >= s.v.size {
		return 0, "", "", false, err
	}
	return seq, kind, id, true, nil
}

// Lookup finds the event of a document identity (a receipt_id, an AVIR
// chain_hash or spec hash, a bundle's "<task uuid>@<created_ns>") in any kind.
func (l *Ledger) Lookup(id string) (*Event, error) {
	v, err := l.acquire()
	if err != nil {
		return nil, err
	}
	defer l.releaseView(v)
	for _, kind := range lookupOrder {
		iv, found, err := lookupIdent(v.r, identKey(kind, id))
		if err != nil {
			return nil, err
		}
		if found {
			ev, _, err := l.eventAt(v, iv.seq, false)
			return ev, err
		}
	}
	return nil, fmt.Errorf("%s: %w", id, ErrNotFound)
}

// lookupOrder fixes the order Lookup tries the kinds in.
var lookupOrder = []codec.Kind{codec.KindVRF, codec.KindAVIRAttestation, codec.KindAVIRSpec, codec.KindRVWW, KindRollback}

// LookupKind finds the event of an identity within one kind.
func (l *Ledger) LookupKind(kind codec.Kind, id string) (*Event, error) {
	v, err := l.acquire()
	if err != nil {
		return nil, err
	}
	defer l.releaseView(v)
	iv, found, err := lookupIdent(v.r, identKey(kind, id))
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%s %s: %w", kind, id, ErrNotFound)
	}
	ev, _, err := l.eventAt(v, iv.seq, false)
	return ev, err
}

// Scan calls fn for events from seq `from` on, in order, until fn returns
// false or an error. withData loads document bytes (checked against their
// leaves). Leaves are decoded on several goroutines ahead of fn; every
// goroutine and iterator is done before Scan returns.
func (l *Ledger) Scan(from int64, withData bool, fn func(*Event) (bool, error)) error {
	return l.ScanContext(context.Background(), from, withData, fn)
}

// ScanContext is Scan that stops when ctx is done.
func (l *Ledger) ScanContext(ctx context.Context, from int64, withData bool, fn func(*Event) (bool, error)) (err error) {
	v, err := l.acquire()
	if err != nil {
		return err
	}
	defer l.releaseView(v)
	if !withData {
		return l.scanView(ctx, v, from, func(ev *Event, _ string) (bool, error) { return fn(ev) })
	}
	dataIt, err := viewIter(v, dataKey(max(from, 0)), dataKey(v.size))
	if err != nil {
		return err
	}
	defer closeIter(dataIt, &err)
	dataIt.First()
	return l.scanView(ctx, v, from, func(ev *Event, _ string) (bool, error) {
		k := dataKey(ev.Seq)
		if !dataIt.Valid() || !bytes.Equal(dataIt.Key(), k) {
			if !dataIt.SeekGE(k) || !bytes.Equal(dataIt.Key(), k) {
				if err := dataIt.Error(); err != nil {
					return false, storeErr(err)
				}
				return false, fmt.Errorf("%w: event %d has no document", ErrCorrupt, ev.Seq)
			}
		}
		d, err := l.decodePayload(dataIt.Value())
		if err != nil {
			return false, fmt.Errorf("event %d: %w", ev.Seq, err)
		}
		if err := setData(ev, d); err != nil {
			return false, err
		}
		dataIt.Next()
		return fn(ev)
	})
}

// scanView reads the leaves of v from seq `from` on with one iterator,
// decodes them in chunks on GOMAXPROCS goroutines, and hands the events (and
// their leaves) to fn in order. Events must be dense: a missing or
// misplaced leaf is an error wrapping ErrCorrupt. The reader goroutine and
// the workers have stopped, and the iterator is closed, when it returns.
func (l *Ledger) scanView(ctx context.Context, v *view, from int64, fn func(*Event, string) (bool, error)) error {
	from = max(from, 0)
	if from >= v.size {
		return nil
	}
	const chunk = 512
	type job struct {
		first int64 // seq of raws[0]
		raws  []string
		evs   []*Event
		err   error
		done  chan struct{}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: every goroutine has returned
	defer cancel()
	workers := max(1, runtime.GOMAXPROCS(0))
	jobs := make(chan *job, workers)
	order := make(chan *job, 2*workers)
	var readErr error // written by the reader before it closes order
	wg.Add(1)
	go func() { // reader
		defer wg.Done()
		defer close(jobs)
		defer close(order)
		it, err := viewIter(v, eventKey(from), eventKey(v.size))
		if err != nil {
			readErr = err
			return
		}
		defer closeIter(it, &readErr)
		next := from
		j := &job{first: next, done: make(chan struct{})}
		send := func() bool {
			select {
			case order <- j:
			case <-ctx.Done():
				return false
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				return false
			}
			j = &job{first: next, done: make(chan struct{})}
			return true
		}
		for ok := it.First(); ok; ok = it.Next() {
			seq, err := decodeKeySeq(prefixLeaf, it.Key())
			if err == nil && seq != next {
				err = fmt.Errorf("%w: event %d is missing from a log of %d events (the next stored one is %d)", ErrCorrupt, next, v.size, seq)
			}
			if err != nil {
				readErr = err
				return
			}
			j.raws = append(j.raws, string(it.Value()))
			next++
			if len(j.raws) == chunk && !send() {
				return
			}
		}
		if err := it.Error(); err != nil {
			readErr = fmt.Errorf("reading the leaf of event %d: %w", next, storeErr(err))
			return
		}
		if next != v.size {
			readErr = fmt.Errorf("%w: event %d is missing from a log of %d events", ErrCorrupt, next, v.size)
			return
		}
		if len(j.raws) > 0 {
			send()
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ps proof.LeafParser
			for j := range jobs {
				j.evs = make([]*Event, len(j.raws))
				for i, raw := range j.raws {
					seq := j.first + int64(i)
					ev, err := decodeLeafString(&ps, raw)
					if err == nil && ev.Seq != seq {
						err = fmt.Errorf("%w: its leaf says seq %d", ErrCorrupt, ev.Seq)
					}
					if err != nil {
						j.err = fmt.Errorf("event %d: %w", seq, err)
						break
					}
					j.evs[i] = ev
				}
				close(j.done)
			}
		}()
	}
	for j := range order {
		select {
		case <-j.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if j.err != nil {
			return j.err
		}
		for i, ev := range j.evs {
			more, err := fn(ev, j.raws[i][1:])
			if err != nil || !more {
				return err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return readErr
}

// decodeLeafString decodes a value stored under e/ held as a string, with
// a kept parser: the event's strings share the string's memory instead of
// a copy (scans read many leaves).
func decodeLeafString(ps *proof.LeafParser, v string) (*Event, error) {
	if len(v) < 1 || v[0] != leafFormat {
		return nil, fmt.Errorf("%w: event leaf format %v", ErrCorrupt, []byte(v[:min(1, len(v))]))
	}
	l, err := ps.ParseString(v[1:])
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return &Event{Leaf: *l}, nil
}

// FirstAt returns the sequence number of the first event appended at or
// after t (Size() when none), using the time index.
func (l *Ledger) FirstAt(t time.Time) (seq int64, err error) {
	v, err := l.acquire()
	if err != nil {
		return 0, err
	}
	defer l.releaseView(v)
	return firstAt(v, t)
}

// firstAt is FirstAt in v.
func firstAt(v *view, t time.Time) (seq int64, err error) {
	it, err := viewIter(v, timeKey(t.UnixNano(), 0), prefixEnd(prefixTime))
	if err != nil {
		return 0, err
	}
	defer closeIter(it, &err)
	if !it.First() {
		return v.size, storeErr(it.Error())
	}
	_, seq, err = decodeTimeKey(it.Key())
	if err != nil {
		return 0, err
	}
	return min(seq, v.size), nil
}

// Checkpoint returns the latest signed checkpoint.
func (l *Ledger) Checkpoint() ([]byte, error) {
	v, err := l.acquire()
	if err != nil {
		return nil, err
	}
	defer l.releaseView(v)
	if v.ckpt.note == nil {
		return nil, fmt.Errorf("%w: no verified checkpoint", ErrDamaged)
	}
	return bytes.Clone(v.ckpt.note), nil
}

// Checkpoints calls fn, in size order, for every checkpoint the ledger
// signed and kept, up to the durable size: the history a witness checks
// consistency against (and the batch sizes the log was committed in).
func (l *Ledger) Checkpoints(fn func(size int64, note []byte) (bool, error)) (err error) {
	v, err := l.acquire()
	if err != nil {
		return err
	}
	defer l.releaseView(v)
	it, err := viewIter(v, prefixCkpt, checkpointKey(v.size+1))
	if err != nil {
		return err
	}
	defer closeIter(it, &err)
	for ok := it.First(); ok; ok = it.Next() {
		size, err := decodeKeySeq(prefixCkpt, it.Key())
		if err != nil {
			return err
		}
		more, err := fn(size, bytes.Clone(it.Value()))
		if err != nil || !more {
			return err
		}
	}
	return storeErr(it.Error())
}

// TreeHash returns the root of the tree of the first n durable events.
func (l *Ledger) TreeHash(n int64) (tlog.Hash, error) {
	v, err := l.acquire()
	if err != nil {
		return tlog.Hash{}, err
	}
	defer l.releaseView(v)
	if n < 0 || n > v.size {
		return tlog.Hash{}, fmt.Errorf("tree size %d: the ledger has %d events", n, v.size)
	}
	return tlog.TreeHash(n, hashReader{r: v.r})
}

// checkpointAt returns the signed checkpoint for tree size n of v (0: the
// latest). For an older size it returns the checkpoint the ledger kept, or
// signs one now; either way only after proving that tree consistent with
// the latest signed one, so that stored hashes altered on disk can never
// make the ledger serve or sign a root it did not publish.
func (l *Ledger) checkpointAt(v *view, n int64) ([]byte, proof.Checkpoint, error) {
	if v.ckpt.note == nil {
		return nil, proof.Checkpoint{}, fmt.Errorf("%w: no verified checkpoint", ErrDamaged)
	}
	if n == 0 || n == v.size {
		return v.ckpt.note, v.ckpt.c, nil
	}
	if n < 0 || n > v.size {
		return nil, proof.Checkpoint{}, fmt.Errorf("tree size %d: the ledger has %d events", n, v.size)
	}
	hr := hashReader{r: v.r}
	root, err := tlog.TreeHash(n, hr)
	if err != nil {
		return nil, proof.Checkpoint{}, err
	}
	p, err := tlog.ProveTree(v.size, n, hr)
	if err != nil {
		return nil, proof.Checkpoint{}, err
	}
	if err := tlog.CheckTree(p, v.size, v.ckpt.c.Root, n, root); err != nil {
		return nil, proof.Checkpoint{}, fmt.Errorf("%w: the stored tree of size %d is not consistent with the signed tree of size %d (altered on disk): %v", ErrCorrupt, n, v.size, err)
	}
	c := proof.Checkpoint{Origin: l.origin, Size: n, Root: root}
	if note, err := viewGet(v, checkpointKey(n)); err == nil {
		kept, err := l.openNote(note)
		if err != nil || kept != c {
			return nil, proof.Checkpoint{}, fmt.Errorf("%w: the checkpoint kept for size %d does not verify or does not match the tree", ErrCorrupt, n)
		}
		return note, c, nil
	} else if !errors.Is(err, ErrNotFound) {
		return nil, proof.Checkpoint{}, err
	}
	note, err := l.sign(c)
	return note, c, err
}

// MinPrefix is the shortest prefix of a document identity or digest
// FindPrefix takes.
const MinPrefix = 8

// ErrShortPrefix: a prefix shorter than MinPrefix characters.
var ErrShortPrefix = errors.New("prefix too short")

// PrefixMatch is an event whose document identity or digest starts with
// a prefix.
type PrefixMatch struct {
	Seq    int64
	Kind   codec.Kind
	ID     string
	Digest [32]byte
}

// FindPrefix returns, by sequence number, the durable events whose
// document identity (of any kind) or digest starts with prefix: a digest
// prefix is hex, in either case, with or without "sha256:", and counts its
// hex digits. At most max matches are returned (max < 1 means 10); more
// says there were others. A prefix shorter than MinPrefix is an error
// wrapping ErrShortPrefix. It reads the identity and digest indexes, never
// the log.
func (l *Ledger) FindPrefix(prefix string, max int) (matches []PrefixMatch, more bool, err error) {
	if max < 1 {
		max = 10
	}
	hexPart, isHex := digestPrefix(prefix)
	n := len(prefix)
	if isHex && !idLike(prefix) {
		n = len(hexPart) // "sha256:" and its hex digits
	}
	if n < MinPrefix {
		return nil, false, fmt.Errorf("%w: %.80q has %d characters, want at least %d", ErrShortPrefix, prefix, n, MinPrefix)
	}
	v, err := l.acquire()
	if err != nil {
		return nil, false, err
	}
	defer l.releaseView(v)
	found := map[int64]PrefixMatch{}
	scan := func(lower, upper []byte, match func(k, val []byte) (PrefixMatch, error)) (err error) {
		it, err := viewIter(v, lower, upper)
		if err != nil {
			return err
		}
		defer closeIter(it, &err)
		n := 0
		for ok := it.First(); ok && n <= max; ok = it.Next() {
			m, err := match(it.Key(), it.Value())
			if err != nil {
				return err
			}
			if m.Seq >= v.size {
				continue
			}
			found[m.Seq] = m
			n++
		}
		return storeErr(it.Error())
	}
	for _, kind := range lookupOrder {
		p := identKey(kind, prefix)
		err := scan(p, prefixEnd(p), func(k, val []byte) (PrefixMatch, error) {
			iv, err := decodeIdent(k, val)
			if err != nil {
				return PrefixMatch{}, err
			}
			return PrefixMatch{Seq: iv.seq, Kind: kind, ID: string(k[len(prefixIdent)+1:]), Digest: iv.digest}, nil
		})
		if err != nil {
			return nil, false, err
		}
	}
	if isHex && len(hexPart) >= MinPrefix {
		lower, upper := digestRange(hexPart)
		err := scan(lower, upper, func(k, val []byte) (PrefixMatch, error) {
			if len(k) != len(prefixDigest)+32 {
				return PrefixMatch{}, fmt.Errorf("%w: %s: digest key of %d bytes", ErrCorrupt, keyName(k), len(k))
			}
			seq, kind, id, err := decodeDigest(k, val)
			m := PrefixMatch{Seq: seq, Kind: kind, ID: id}
			copy(m.Digest[:], k[len(prefixDigest):])
			return m, err
		})
		if err != nil {
			return nil, false, err
		}
	}
	for _, m := range found {
		matches = append(matches, m)
	}
	sort.Slice(matches, func(i, j int) bool { return matches[i].Seq < matches[j].Seq })
	if len(matches) > max {
		return matches[:max], true, nil
	}
	return matches, false, nil
}

// digestPrefix returns the hex digits of a digest prefix ("sha256:" cut,
// lower case) and whether prefix is one.
func digestPrefix(prefix string) (string, bool) {
	h := prefix
	if len(h) >= 7 && strings.EqualFold(h[:7], "sha256:") {
		h = h[7:]
	}
	if h == "" || len(h) > 64 {
		return "", false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return "", false
		}
	}
	return strings.ToLower(h), true
}

// idLike reports whether a prefix is taken as an identity's prefix alone:
// it does not start with "sha256:".
func idLike(prefix string) bool {
	return !(len(prefix) >= 7 && strings.EqualFold(prefix[:7], "sha256:"))
}

// digestRange is the range of digest/ keys whose digest starts with the
// lowercase hex digits h.
func digestRange(h string) (lower, upper []byte) {
	even := h[:len(h)/2*2]
	b, _ := hex.DecodeString(even) // h is hex
	lower = join(prefixDigest, b)
	if len(h)%2 == 0 {
		return lower, prefixEnd(lower)
	}
	nib, _ := strconv.ParseUint(h[len(h)-1:], 16, 8)
	lower = append(lower, byte(nib<<4))
	return lower, prefixEnd(append(bytes.Clone(lower[:len(lower)-1]), byte(nib<<4|0x0f)))
}
