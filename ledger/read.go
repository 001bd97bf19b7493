package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// Event returns event seq; withData also loads the original document bytes.
func (l *Ledger) Event(seq int64, withData bool) (*Event, error) {
	if seq < 0 {
		return nil, fmt.Errorf("event %d: %w", seq, ErrNotFound)
	}
	v, err := l.get(eventKey(seq))
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", seq, err)
	}
	ev, err := decodeLeafValue(v)
	if err != nil || !withData {
		return ev, err
	}
	return ev, l.loadData(ev)
}

func decodeLeafValue(v []byte) (*Event, error) {
	leaf, err := leafOf(v)
	if err != nil {
		return nil, err
	}
	ev, err := ParseLeaf(leaf)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return ev, nil
}

// decodeLeafString is decodeLeafValue of a value held as a string, with a
// kept parser: the event's strings share the string's memory instead of a
// copy (scans read many leaves).
func decodeLeafString(ps *canonjson.Parser, v string) (*Event, error) {
	if len(v) < 1 || v[0] != leafFormat {
		return nil, fmt.Errorf("%w: event leaf format %v", ErrCorrupt, []byte(v[:min(1, len(v))]))
	}
	pv, err := ps.ParseString(v[1:])
	if err != nil {
		return nil, fmt.Errorf("%w: leaf: %v", ErrCorrupt, err)
	}
	ev, err := leafEvent(pv)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return ev, nil
}

// loadData reads an event's document bytes into ev.Data.
func (l *Ledger) loadData(ev *Event) error {
	v, err := l.get(dataKey(ev.Seq))
	if err != nil {
		return fmt.Errorf("event %d document: %w", ev.Seq, err)
	}
	ev.Data, err = l.decodePayload(v)
	return err
}

// Seen is the replay check an append makes, alone: whether a document
// identity of a kind is in the ledger and, if so, its event's sequence
// number. It is one point lookup of the identity index (Pebble bloom
// filters on every level keep it O(1) as the ledger grows) and reads
// no event.
func (l *Ledger) Seen(kind codec.Kind, id string) (seq int64, found bool, err error) {
	iv, found, err := l.lookupIdent(&overlay{}, kind, id)
	if err != nil || !found {
		return -1, false, err
	}
	return iv.seq, true, nil
}

// Lookup finds the event of a document identity (a receipt_id, an AVIR
// chain_hash or spec hash, a bundle's "<task uuid>@<created_ns>") in any kind.
func (l *Ledger) Lookup(id string) (*Event, error) {
	for _, kind := range lookupOrder {
		iv, found, err := l.lookupIdent(&overlay{}, kind, id)
		if err != nil {
			return nil, err
		}
		if found {
			return l.Event(iv.seq, false)
		}
	}
	return nil, fmt.Errorf("%s: %w", id, ErrNotFound)
}

// lookupOrder fixes the order Lookup tries the kinds in.
var lookupOrder = []codec.Kind{codec.KindVRF, codec.KindAVIRAttestation, codec.KindAVIRSpec, codec.KindRVWW, KindRollback}

// LookupKind finds the event of an identity within one kind.
func (l *Ledger) LookupKind(kind codec.Kind, id string) (*Event, error) {
	iv, found, err := l.lookupIdent(&overlay{}, kind, id)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%s %s: %w", kind, id, ErrNotFound)
	}
	return l.Event(iv.seq, false)
}

// Scan calls fn for events from seq `from` on, in order, until fn returns
// false or an error. withData loads document bytes. Leaves are decoded on
// several goroutines ahead of fn.
func (l *Ledger) Scan(from int64, withData bool, fn func(*Event) (bool, error)) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var dataIt *pebble.Iterator
	if withData {
		var err error
		if dataIt, err = l.db.NewIter(&pebble.IterOptions{LowerBound: dataKey(max(from, 0)), UpperBound: prefixEnd(prefixData)}); err != nil {
			return err
		}
		defer dataIt.Close()
		dataIt.First()
	}
	return l.scanLeaves(ctx, from, func(ev *Event) (bool, error) {
		if withData {
			k := dataKey(ev.Seq)
			if !dataIt.Valid() || !bytes.Equal(dataIt.Key(), k) {
				if !dataIt.SeekGE(k) || !bytes.Equal(dataIt.Key(), k) {
					return false, fmt.Errorf("%w: event %d has no document", ErrCorrupt, ev.Seq)
				}
			}
			d, err := l.decodePayload(dataIt.Value())
			if err != nil {
				return false, err
			}
			ev.Data = d
			dataIt.Next()
		}
		return fn(ev)
	})
}

// scanLeaves reads leaves in order with one iterator, decodes them in
// chunks on GOMAXPROCS goroutines, and hands the events to fn in order.
func (l *Ledger) scanLeaves(ctx context.Context, from int64, fn func(*Event) (bool, error)) error {
	const chunk = 512
	type job struct {
		raws []string
		evs  []*Event
		err  error
		done chan struct{}
	}
	workers := max(1, runtime.GOMAXPROCS(0))
	jobs := make(chan *job, workers)
	order := make(chan *job, 2*workers)
	var readErr error
	go func() { // reader
		defer close(jobs)
		defer close(order)
		it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: eventKey(max(from, 0)), UpperBound: prefixEnd(prefixEvent)})
		if err != nil {
			readErr = err
			return
		}
		defer it.Close()
		j := &job{done: make(chan struct{})}
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
			j = &job{done: make(chan struct{})}
			return true
		}
		for ok := it.First(); ok; ok = it.Next() {
			j.raws = append(j.raws, string(it.Value()))
			if len(j.raws) == chunk && !send() {
				return
			}
		}
		readErr = it.Error()
		if len(j.raws) > 0 {
			send()
		}
	}()
	for w := 0; w < workers; w++ {
		go func() {
			var ps canonjson.Parser
			for j := range jobs {
				j.evs = make([]*Event, len(j.raws))
				for i, raw := range j.raws {
					if j.evs[i], j.err = decodeLeafString(&ps, raw); j.err != nil {
						break
					}
				}
				j.raws = nil
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
		for _, ev := range j.evs {
			more, err := fn(ev)
			if err != nil || !more {
				return err
			}
		}
	}
	return readErr
}

// FirstAt returns the sequence number of the first event appended at or
// after t (Size() when none), using the time index.
func (l *Ledger) FirstAt(t time.Time) (int64, error) {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: timeKey(t.UnixNano(), 0), UpperBound: prefixEnd(prefixTime)})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	if !it.First() {
		return l.Size(), it.Error()
	}
	k := it.Key()
	return int64(be64(k[len(prefixTime)+8:])), nil
}

// taskSeqs returns the sequence numbers of a task's events in log order.
func (l *Ledger) taskSeqs(task string) ([]int64, error) {
	p := taskPrefix(task)
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []int64
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, int64(be64(it.Key()[len(p):])))
	}
	return out, it.Error()
}

// TaskHistory returns a task's events (bundles and rollbacks) in log order.
func (l *Ledger) TaskHistory(task string) ([]*Event, error) {
	seqs, err := l.taskSeqs(task)
	if err != nil {
		return nil, err
	}
	out := make([]*Event, 0, len(seqs))
	for _, s := range seqs {
		ev, err := l.Event(s, false)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// Chain returns the receipt chain that id belongs to, oldest first: back
// along previous_receipt links to the first receipt, then forward along
// successors to the latest.
func (l *Ledger) Chain(id string) ([]*Event, error) {
	ev, err := l.LookupKind(codec.KindVRF, id)
	if err != nil {
		return nil, err
	}
	var back []*Event
	for cur := ev; ; {
		back = append(back, cur)
		prev := linkOf(cur, RelPreviousReceipt)
		if prev == nil {
			break
		}
		if cur, err = l.Event(prev.Seq, false); err != nil {
			return nil, err
		}
		if len(back) > int(l.Size()) {
			return nil, fmt.Errorf("%w: receipt chain loops", ErrCorrupt)
		}
	}
	out := make([]*Event, 0, len(back))
	for i := len(back) - 1; i >= 0; i-- {
		out = append(out, back[i])
	}
	for cur := ev; ; {
		succ, ok, err := l.successor(&overlay{}, cur.ID)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if cur, err = l.Event(succ, false); err != nil {
			return nil, err
		}
		out = append(out, cur)
		if len(out) > int(l.Size()) {
			return nil, fmt.Errorf("%w: receipt chain loops", ErrCorrupt)
		}
	}
	return out, nil
}

func linkOf(ev *Event, rel string) *Link {
	for i := range ev.Links {
		if ev.Links[i].Rel == rel {
			return &ev.Links[i]
		}
	}
	return nil
}

// Checkpoint returns the latest signed checkpoint.
func (l *Ledger) Checkpoint() ([]byte, error) {
	c, _, err := l.checkpointAt(0)
	return c, err
}

// checkpointAt returns the signed checkpoint for tree size n (0: the
// latest), signing one now when the ledger kept none for n.
func (l *Ledger) checkpointAt(n int64) ([]byte, Checkpoint, error) {
	l.mu.RLock()
	size, latest := l.size, l.latest
	l.mu.RUnlock()
	if n == 0 {
		n = size
	}
	if n < 0 || n > size {
		return nil, Checkpoint{}, fmt.Errorf("tree size %d: the ledger has %d events", n, size)
	}
	if latest != nil && latest.c.Size == n {
		return latest.note, latest.c, nil
	}
	if v, err := l.get(checkpointKey(n)); err == nil {
		c, err := l.parseOwnCheckpoint(v)
		return v, c, err
	} else if !errors.Is(err, ErrNotFound) {
		return nil, Checkpoint{}, err
	}
	if l.signer == nil {
		return nil, Checkpoint{}, fmt.Errorf("no checkpoint kept for size %d and the ledger is open read-only", n)
	}
	root, err := l.TreeHash(n)
	if err != nil {
		return nil, Checkpoint{}, err
	}
	c := Checkpoint{Origin: l.origin, Size: n, Root: root}
	signed, err := l.signer.sign(c)
	return signed, c, err
}

// parseOwnCheckpoint reads a checkpoint the ledger stored itself. Audit
// verifies stored signatures; serving one needs only its body.
func (l *Ledger) parseOwnCheckpoint(signed []byte) (Checkpoint, error) {
	text, _, ok := bytes.Cut(signed, []byte("\n\n"))
	if !ok {
		return Checkpoint{}, fmt.Errorf("%w: stored checkpoint has no signature block", ErrCorrupt)
	}
	return parseCheckpointText(string(text) + "\n")
}
