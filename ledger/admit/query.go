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

// Head is an agent's latest receipt: the receipt the agent's next receipt
// continues.
type Head struct {
	// ID is the receipt's receipt_id, Seq its event and Position its
	// chain position.
	ID       string
	Seq      int64
	Position int64
}

// AgentHead returns the latest receipt of agent in the published log: of
// the receipts that speak for it (the agent the chain rules decided: a
// receipt's agent_id, else its chain's), the one appended last; found is
// false when the agent has none. One point lookup and one reverse seek
// (the agent/ keyspace), whatever the ledger's size.
//
// The latest receipt of an agent has no successor, since a successor
// speaks for the same agent and comes later, so a receipt that names it
// as previous_receipt at Position+1 is admitted unless another append
// continues it first. A caller that must not lose that race appends from
// one goroutine while it holds the ledger for writing (a process holds
// the store exclusively), and carries the head forward itself.
func (l *Ledger) AgentHead(agent string) (h Head, found bool, err error) {
	s := l.Snapshot()
	defer s.Close()
	if l.Stale() {
		return Head{}, false, ledger.ErrStale
	}
	p := agentPrefix(agent)
	k, v, err := s.Last(p)
	if errors.Is(err, ledger.ErrNotFound) {
		return Head{}, false, nil
	}
	if err != nil {
		return Head{}, false, err
	}
	seq, err := decodeSeq(k, k[len(p):])
	if err != nil {
		return Head{}, false, err
	}
	ck := chainKey(string(v))
	cv, err := s.Get(ck)
	if err != nil {
		if errors.Is(err, ledger.ErrNotFound) {
			return Head{}, false, fmt.Errorf("%w: %s names receipt %s, which has no chain entry", ledger.ErrCorrupt, ledger.KeyName(k), v)
		}
		return Head{}, false, err
	}
	c, err := decodeChain(ck, cv)
	if err != nil {
		return Head{}, false, err
	}
	if c.seq != seq || c.agent != agent {
		return Head{}, false, fmt.Errorf("%w: %s names event %d of agent %q, the chain entry says event %d of agent %q", ledger.ErrCorrupt, ledger.KeyName(k), seq, agent, c.seq, c.agent)
	}
	return Head{ID: string(v), Seq: seq, Position: c.position}, true, nil
}
