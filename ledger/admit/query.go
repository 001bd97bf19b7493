package admit

import (
	"context"
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
	err = forward(context.Background(), s, ev, func(ev *ledger.Event) (bool, error) {
		out = append(out, ev)
		return true, nil
	})
	return out, err
}

// forward calls fn with the receipts that continue ev, in chain order,
// along the successor entries (next/).
func forward(ctx context.Context, s *ledger.Snapshot, ev *ledger.Event, fn func(*ledger.Event) (bool, error)) error {
	for cur := ev; ; {
		if err := ctx.Err(); err != nil {
			return err
		}
		nk := nextKey(cur.ID)
		v, err := s.Get(nk)
		if errors.Is(err, ledger.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		succ, err := decodeSeq(nk, v)
		if err != nil {
			return err
		}
		if succ <= cur.Seq || succ >= s.Size() {
			return fmt.Errorf("%w: receipt %s's successor entry names event %d", ledger.ErrCorrupt, cur.ID, succ)
		}
		if cur, err = s.Event(succ, false); err != nil {
			return err
		}
		if more, err := fn(cur); err != nil || !more {
			return err
		}
	}
}

// ChainEvent is one receipt of one of an agent's chains (AgentChains).
type ChainEvent struct {
	// Chain numbers the agent's chains from 0, in the order their first
	// receipts were appended; First is the id of the chain's first receipt.
	Chain int
	First string
	*ledger.Event
}

// AgentChains calls fn, until it returns false or an error, with every
// receipt of every receipt chain of agent (the chains whose receipts
// speak for it: their leaf subject), each chain from its first receipt to
// its latest, the chains in the order their first receipts were appended.
// It reads the agent's chain heads (agent-chain/) and walks each chain
// along its successors, so its cost grows with the agent's receipts, not
// with the log. An agent without receipts is ledger.ErrNotFound.
func (l *Ledger) AgentChains(ctx context.Context, agent string, fn func(ChainEvent) (bool, error)) error {
	s := l.Snapshot()
	defer s.Close()
	if l.Stale() {
		return ledger.ErrStale
	}
	p := agentChainPrefix(agent)
	chains := 0
	stop := false
	err := s.RangePrefix(p, func(k, v []byte) (bool, error) {
		if len(k) != len(p)+8 {
			return true, nil // a chain of an agent whose name continues this one past a NUL byte
		}
		seq, err := decodeSeq(k, k[len(p):])
		if err != nil {
			return false, err
		}
		head, err := s.Event(seq, false)
		if err != nil {
			return false, err
		}
		if head.ID != string(v) || head.Subject != agent || linkOf(head, proof.RelPreviousReceipt) != nil {
			return false, fmt.Errorf("%w: %s names receipt %q, event %d is %s %s of %q", ledger.ErrCorrupt, ledger.KeyName(k), v, seq, head.Kind, head.ID, head.Subject)
		}
		ce := ChainEvent{Chain: chains, First: head.ID}
		chains++
		emit := func(ev *ledger.Event) (bool, error) {
			ce.Event = ev
			more, err := fn(ce)
			stop = !more
			return more, err
		}
		if more, err := emit(head); err != nil || !more {
			return false, err
		}
		if err := forward(ctx, s, head, emit); err != nil || stop {
			return false, err
		}
		return true, nil
	})
	if err == nil && chains == 0 {
		return fmt.Errorf("agent %q: %w", agent, ledger.ErrNotFound)
	}
	return err
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
