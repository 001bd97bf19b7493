package admit

import (
	"errors"
	"fmt"

	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/proof"
)

// Chain returns the receipt chain that receipt id belongs to, oldest
// first: back along previous_receipt links to the first receipt, then
// forward along successors to the latest.
func (l *Ledger) Chain(id string) ([]*ledger.Event, error) {
	s := l.Snapshot()
	defer s.Close()
	if l.Stale() {
		return nil, ledger.ErrStale
	}
	k := chainKey(id)
	v, err := s.Get(k)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, fmt.Errorf("receipt %s: %w", id, ledger.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	c, err := decodeChain(k, v)
	if err != nil {
		return nil, err
	}
	ev, err := s.Event(c.seq, false)
	if err != nil {
		return nil, err
	}
	var back []*ledger.Event
	for cur := ev; ; {
		back = append(back, cur)
		prev := linkOf(cur, proof.RelPreviousReceipt)
		if prev == nil {
			break
		}
		if prev.Seq >= cur.Seq {
			return nil, fmt.Errorf("%w: event %d links forward to event %d", ledger.ErrCorrupt, cur.Seq, prev.Seq)
		}
		if cur, err = s.Event(prev.Seq, false); err != nil {
			return nil, err
		}
	}
	out := make([]*ledger.Event, 0, len(back))
	for i := len(back) - 1; i >= 0; i-- {
		out = append(out, back[i])
	}
	for cur := ev; ; {
		nk := nextKey(cur.ID)
		v, err := s.Get(nk)
		if errors.Is(err, ledger.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		succ, err := decodeSeq(nk, v)
		if err != nil {
			return nil, err
		}
		if succ <= cur.Seq || succ >= s.Size() {
			return nil, fmt.Errorf("%w: receipt %s's successor entry names event %d", ledger.ErrCorrupt, cur.ID, succ)
		}
		if cur, err = s.Event(succ, false); err != nil {
			return nil, err
		}
		out = append(out, cur)
	}
	return out, nil
}

// TaskHistory returns a task's events (bundles and rollbacks) in log order.
func (l *Ledger) TaskHistory(task string) ([]*ledger.Event, error) {
	s := l.Snapshot()
	defer s.Close()
	if l.Stale() {
		return nil, ledger.ErrStale
	}
	p := taskPrefix(task)
	var out []*ledger.Event
	err := s.RangePrefix(p, func(k, _ []byte) (bool, error) {
		seq, err := decodeSeq(k, k[len(p):])
		if err != nil {
			return false, err
		}
		ev, err := s.Event(seq, false)
		if err != nil {
			return false, err
		}
		out = append(out, ev)
		return true, nil
	})
	return out, err
}

func linkOf(ev *ledger.Event, rel string) *proof.Link {
	for i := range ev.Links {
		if ev.Links[i].Rel == rel {
			return &ev.Links[i]
		}
	}
	return nil
}
