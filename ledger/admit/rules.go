package admit

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/proof"
)

// The rules' keyspaces in the store (docs/FORMAT.md):
//
//	chain/<receipt id>          u64 seq ‖ uvarint chain position ‖ agent
//	next/<receipt id>           u64 seq of the receipt that continues it
//	task/<task>\0<seq>          id of the task's event (the last key is the task's latest event)
//	agent-chain/<agent>\0<seq>  id of the first receipt of one of the agent's chains
//	agent/<uvarint len><agent><seq>  receipt id (the last key of an agent is its latest receipt)
var (
	prefixChain      = []byte("chain/")
	prefixNext       = []byte("next/")
	prefixTask       = []byte("task/")
	prefixAgentChain = []byte("agent-chain/")
	prefixAgent      = []byte("agent/")
)

// DerivedVersion is the version of the rules' keyspaces
// (ledger.Versioned): 2 added agent-chain/, 3 agent/.
const DerivedVersion = 3

// DerivedVersion implements ledger.Versioned.
func (Rules) DerivedVersion() int { return DerivedVersion }

func agentChainPrefix(agent string) []byte {
	return append(append(append([]byte(nil), prefixAgentChain...), agent...), 0)
}
func agentChainKey(agent string, seq int64) []byte {
	return binary.BigEndian.AppendUint64(agentChainPrefix(agent), uint64(seq))
}

func chainKey(id string) []byte { return append(append([]byte(nil), prefixChain...), id...) }
func nextKey(id string) []byte  { return append(append([]byte(nil), prefixNext...), id...) }
func taskPrefix(task string) []byte {
	return append(append(append([]byte(nil), prefixTask...), task...), 0)
}
func taskKey(task string, seq int64) []byte {
	return binary.BigEndian.AppendUint64(taskPrefix(task), uint64(seq))
}

// agentPrefix is the prefix of an agent's receipts: the agent's length
// comes first, so that no agent's prefix is another agent's (an agent is
// any string, NUL bytes included).
func agentPrefix(agent string) []byte {
	p := binary.AppendUvarint(append([]byte(nil), prefixAgent...), uint64(len(agent)))
	return append(p, agent...)
}
func agentKey(agent string, seq int64) []byte {
	return binary.BigEndian.AppendUint64(agentPrefix(agent), uint64(seq))
}

// chainState is a receipt's place in its chain.
type chainState struct {
	seq      int64
	position int64
	agent    string
}

func (c chainState) encode() []byte {
	out := binary.BigEndian.AppendUint64(nil, uint64(c.seq))
	out = binary.AppendUvarint(out, uint64(c.position))
	return append(out, c.agent...)
}

func decodeChain(key, v []byte) (chainState, error) {
	if len(v) < 9 {
		return chainState{}, fmt.Errorf("%w: %s: chain entry of %d bytes", ledger.ErrCorrupt, ledger.KeyName(key), len(v))
	}
	c := chainState{seq: int64(binary.BigEndian.Uint64(v))}
	p, n := binary.Uvarint(v[8:])
	if n <= 0 || p > 1<<62 || c.seq < 0 {
		return chainState{}, fmt.Errorf("%w: %s: bad sequence number or chain position", ledger.ErrCorrupt, ledger.KeyName(key))
	}
	c.position, c.agent = int64(p), string(v[8+n:])
	return c, nil
}

func decodeSeq(key, v []byte) (int64, error) {
	if len(v) != 8 || int64(binary.BigEndian.Uint64(v)) < 0 {
		return 0, fmt.Errorf("%w: %s: want an 8-byte sequence number", ledger.ErrCorrupt, ledger.KeyName(key))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// taskHead is a task's latest event.
type taskHead struct {
	seq int64
	id  string
}

// facts are what preparation learned of a document that the rules check
// in sequence order.
type facts struct {
	agent    string // a receipt's explicit agent_id
	prev     string // a receipt's previous_receipt
	position int64  // a receipt's chain_position, -1 when absent
	task     string // the task of a bundle or rollback
	// stale is the freshness rules' refusal (freshness.go), nil when the
	// document is fresh enough: decided in preparation, applied first in
	// sequence order.
	stale *ledger.Refusal
}

// Rules are the admission rules that need the log's order: receipt chains
// (a receipt continues the receipt it names, once, at the next position,
// for the same agent) and task histories (a bundle or rollback links to
// its task's latest event; a rollback needs one). They implement
// ledger.Rules.
type Rules struct{}

// Keyspaces implements ledger.Rules.
func (Rules) Keyspaces() [][]byte {
	return [][]byte{prefixChain, prefixNext, prefixTask, prefixAgentChain, prefixAgent}
}

// Entries implements ledger.Rules: the one description, for the writer,
// the audit and a rebuild, of the keys an event implies.
func (Rules) Entries(ev *proof.Leaf) []ledger.KV {
	switch ev.Kind {
	case codec.KindVRF:
		out := []ledger.KV{
			{Key: chainKey(ev.ID), Value: chainState{seq: ev.Seq, position: max(ev.Position, 0), agent: ev.Subject}.encode()},
			{Key: agentKey(ev.Subject, ev.Seq), Value: []byte(ev.ID)},
		}
		first := true
		for _, l := range ev.Links {
			if l.Rel == proof.RelPreviousReceipt {
				out = append(out, ledger.KV{Key: nextKey(l.ID), Value: binary.BigEndian.AppendUint64(nil, uint64(ev.Seq))})
				first = false
			}
		}
		if first {
			// A chain's first receipt: the chains of its agent.
			out = append(out, ledger.KV{Key: agentChainKey(ev.Subject, ev.Seq), Value: []byte(ev.ID)})
		}
		return out
	case codec.KindRVWW, proof.KindRollback:
		return []ledger.KV{{Key: taskKey(ev.Subject, ev.Seq), Value: []byte(ev.ID)}}
	}
	return nil
}

// Begin implements ledger.Rules.
func (Rules) Begin() ledger.RuleBatch {
	return &ruleBatch{chains: map[string]chainState{}, succ: map[string]int64{}, tasks: map[string]taskHead{}}
}

// ruleBatch admits one batch: what it admitted is seen before the store.
type ruleBatch struct {
	chains map[string]chainState
	succ   map[string]int64
	tasks  map[string]taskHead
}

// Admit implements ledger.RuleBatch.
func (b *ruleBatch) Admit(r ledger.Reader, e *ledger.Entry) (*ledger.Refusal, error) {
	f, _ := e.Facts.(*facts)
	if f == nil {
		return nil, nil
	}
	if f.stale != nil {
		return f.stale, nil
	}
	switch e.Kind {
	case codec.KindVRF:
		return b.linkReceipt(r, e, f)
	case codec.KindRVWW, proof.KindRollback:
		e.Leaf.Subject = f.task
		prev, ok, err := b.taskHead(r, f.task)
		if err != nil {
			return nil, err
		}
		if ok {
			e.Leaf.Links = append(e.Leaf.Links, proof.Link{Rel: proof.RelTaskPrevious, ID: prev.id, Seq: prev.seq})
		} else if e.Kind == proof.KindRollback {
			return &ledger.Refusal{Class: ledger.RejectLink,
				Reason: fmt.Sprintf("task_id: no witness bundle of task %s is in the ledger; a rollback follows its task", f.task)}, nil
		}
	}
	return nil, nil
}

// Appended implements ledger.RuleBatch.
func (b *ruleBatch) Appended(ev *proof.Leaf) {
	switch ev.Kind {
	case codec.KindVRF:
		b.chains[ev.ID] = chainState{seq: ev.Seq, position: max(ev.Position, 0), agent: ev.Subject}
		for _, l := range ev.Links {
			if l.Rel == proof.RelPreviousReceipt {
				b.succ[l.ID] = ev.Seq
			}
		}
	case codec.KindRVWW, proof.KindRollback:
		b.tasks[ev.Subject] = taskHead{seq: ev.Seq, id: ev.ID}
	}
}

// linkReceipt applies the chain rules to a receipt: a previous_receipt must
// be in the log (or earlier in the batch), have no successor yet, sit at
// chain_position - 1 (a receipt without chain_position counts as position
// 0), and speak for the same agent. The receipt's agent is its agent_id,
// else its predecessor's agent, else (a chain's first receipt) its own
// receipt_id when it carries chain fields, else its signer, else its own id.
func (b *ruleBatch) linkReceipt(r ledger.Reader, e *ledger.Entry, f *facts) (*ledger.Refusal, error) {
	refuse := func(format string, args ...any) (*ledger.Refusal, error) {
		return &ledger.Refusal{Class: ledger.RejectLink, Reason: fmt.Sprintf(format, args...)}, nil
	}
	if f.prev == "" {
		e.Leaf.Subject = f.agent
		if e.Leaf.Subject == "" {
			switch {
			case f.position >= 0:
				e.Leaf.Subject = e.ID
			case e.Leaf.Signer != "":
				e.Leaf.Subject = e.Leaf.Signer
			default:
				e.Leaf.Subject = e.ID
			}
		}
		e.Leaf.Position = max(f.position, 0)
		return nil, nil
	}
	pred, found, err := b.chain(r, f.prev)
	if err != nil {
		return nil, err
	}
	if !found {
		ref, _ := refuse("metadata.previous_receipt: receipt %s is not in the ledger (append it first, or in the same call)", f.prev)
		ref.Waiting = f.prev
		return ref, nil
	}
	if succ, ok, err := b.successor(r, f.prev); err != nil {
		return nil, err
	} else if ok {
		return refuse("metadata.previous_receipt: receipt %s already has a successor (event %d); a chain cannot fork", f.prev, succ)
	}
	if f.position != pred.position+1 {
		return refuse("metadata.chain_position: %d, want %d (one more than receipt %s at position %d)", f.position, pred.position+1, f.prev, pred.position)
	}
	agent := f.agent
	if agent == "" {
		agent = pred.agent
	} else if agent != pred.agent {
		return refuse("agent_id: %q continues receipt %s of agent %q; a chain speaks for one agent", agent, f.prev, pred.agent)
	}
	e.Leaf.Subject = agent
	e.Leaf.Position = f.position
	e.Leaf.Links = append(e.Leaf.Links, proof.Link{Rel: proof.RelPreviousReceipt, ID: f.prev, Seq: pred.seq})
	return nil, nil
}

func (b *ruleBatch) chain(r ledger.Reader, id string) (chainState, bool, error) {
	if c, ok := b.chains[id]; ok {
		return c, true, nil
	}
	k := chainKey(id)
	v, err := r.Get(k)
	if errors.Is(err, ledger.ErrNotFound) {
		return chainState{}, false, nil
	}
	if err != nil {
		return chainState{}, false, err
	}
	c, err := decodeChain(k, v)
	return c, err == nil, err
}

func (b *ruleBatch) successor(r ledger.Reader, id string) (int64, bool, error) {
	if s, ok := b.succ[id]; ok {
		return s, true, nil
	}
	k := nextKey(id)
	v, err := r.Get(k)
	if errors.Is(err, ledger.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	s, err := decodeSeq(k, v)
	return s, err == nil, err
}

// taskHead returns a task's latest event, from the batch or the log (the
// last key of its task/ entries).
func (b *ruleBatch) taskHead(r ledger.Reader, task string) (taskHead, bool, error) {
	if h, ok := b.tasks[task]; ok {
		return h, true, nil
	}
	p := taskPrefix(task)
	k, v, err := r.Last(p)
	if errors.Is(err, ledger.ErrNotFound) {
		return taskHead{}, false, nil
	}
	if err != nil {
		return taskHead{}, false, err
	}
	seq, err := decodeSeq(k, k[len(p):])
	if err != nil {
		return taskHead{}, false, err
	}
	return taskHead{seq: seq, id: string(v)}, true, nil
}
