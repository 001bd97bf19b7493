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
