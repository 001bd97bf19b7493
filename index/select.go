package index

import (
	"errors"
	"fmt"
	"slices"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/proof"
)

// Investigation: which events an agent acted in, which are about a
// subject. Every event is indexed, in its own batch, under
//
//	x/agent-event/<agent>\0<seq 8>      value: the event's kind
//	x/subject-event/<subject>\0<seq 8>  value: the event's kind
//
// from its leaf alone. The agents of an event (AgentsOf) are the parties
// that did what it records: a receipt's agent (its leaf subject: agent_id,
// else its chain's agent, else its signer) and its signer, the verifier
// that checked the work; an attestation's signer, the replicator that ran
// the benchmarks (the attestation's verifier object is not in the leaf, so
// the replicator is named by its key); a bundle's or a rollback's signer
// (the HMAC key id, or the Ed25519 key, of the harness that witnessed the
// task: bundles name no agent). Specifications, unsigned, have none. The
// subject of an event is its leaf's: a receipt's agent, an attestation's
// or a specification's system ("<name> v<version>"), a bundle's or a
// rollback's task UUID.

// AgentsOf returns the agents of an event (see above): its subject for a
// receipt, and its signer; each once.
func AgentsOf(l *proof.Leaf) []string {
	var out []string
	if l.Kind == codec.KindVRF && l.Subject != "" {
		out = append(out, l.Subject)
	}
	if l.Signer != "" && (len(out) == 0 || out[0] != l.Signer) {
		out = append(out, l.Signer)
	}
	return out
}

// kindRec is the value of an investigation entry: the event's kind, a
// length-prefixed string.
type kindRec codec.Kind

func (k kindRec) encode() []byte { var e enc; e.s(string(k)); return e.b }

// decodeKindRec reads the value of an investigation entry.
func decodeKindRec(key, v []byte) (kindRec, error) {
	d := newDec(key, v)
	at := d.off()
	k := codec.Kind(d.s("kind"))
	if d.err == nil && !proof.KnownKind(k) {
		d.failAt(at, "kind", "%q is not a kind of event", k)
	}
	if err := d.done(); err != nil {
		return "", err
	}
	return kindRec(k), nil
}

// projectSelection indexes ev under its agents and its subject.
func (b *batch) projectSelection(ev *ledger.Event) {
	kind := kindRec(ev.Kind).encode()
	for _, a := range AgentsOf(&ev.Leaf) {
		b.blind[string(join(pAgentEvent, []byte(a), []byte{0}, seqKey(ev.Seq)))] = kind
	}
	if ev.Subject != "" {
		b.blind[string(join(pSubjectEvent, []byte(ev.Subject), []byte{0}, seqKey(ev.Seq)))] = kind
	}
}

// TaskKinds are the kinds of a task's events: its witness bundles and
// rollback records.
var TaskKinds = []codec.Kind{codec.KindRVWW, ledger.KindRollback}

// ErrNoSelection: a Selection that names no agent, subject or task.
var ErrNoSelection = errors.New("select events by an agent, a subject or a task")

// Selection selects events by who acted in them and what they are about.
// Set fields combine (all must hold); at least one of Agent, Subject and
// Task must be set.
type Selection struct {
	// Agent selects the events the agent acted in (AgentsOf).
	Agent string
	// Subject selects the events about the subject (the leaf's subject).
	Subject string
	// Task selects a task's bundles and rollbacks: the events of kinds
	// TaskKinds whose subject is the task UUID (lowercase 8-4-4-4-12).
	Task string
	// Kinds, when not empty, keeps only events of these kinds.
	Kinds []codec.Kind
}

// Events calls fn with the sequence numbers in [from, to) of the events
// sel selects, in increasing order, until fn returns false or an error.
// It reads the investigation keyspaces only: the entries of the subject
// (or task) when one is given, checking the agent's entry of each by a
// point lookup, else the agent's entries; its cost grows with those
// entries in the window, not with the log.
func Events(r Reader, sel Selection, from, to int64, fn func(seq int64) (bool, error)) error {
	subject := sel.Subject
	kinds := sel.Kinds
	if sel.Task != "" {
		if subject != "" && subject != sel.Task {
			return nil // one event has one subject
		}
		subject = sel.Task
		if len(kinds) == 0 {
			kinds = TaskKinds
		} else {
			kinds = slices.DeleteFunc(slices.Clone(kinds), func(k codec.Kind) bool { return !slices.Contains(TaskKinds, k) })
			if len(kinds) == 0 {
				return nil
			}
		}
	}
	if subject == "" && sel.Agent == "" {
		return ErrNoSelection
	}
	from = max(from, 0)
	if from >= to {
		return nil
	}
	keep := func(kind codec.Kind) bool { return len(kinds) == 0 || slices.Contains(kinds, kind) }
	if subject == "" {
		return entries(r, pAgentEvent, sel.Agent, from, to, func(seq int64, kind codec.Kind) (bool, error) {
			if !keep(kind) {
				return true, nil
			}
			return fn(seq)
		})
	}
	return entries(r, pSubjectEvent, subject, from, to, func(seq int64, kind codec.Kind) (bool, error) {
		if !keep(kind) {
			return true, nil
		}
		if sel.Agent != "" {
			k := join(pAgentEvent, []byte(sel.Agent), []byte{0}, seqKey(seq))
			v, err := r.Get(k)
			if errors.Is(err, ledger.ErrNotFound) {
				return true, nil
			}
			if err != nil {
				return false, err
			}
			if _, err := decodeEventKind(k, v); err != nil {
				return false, err
			}
		}
		return fn(seq)
	})
}

// entries calls fn for the entries of name under prefix with sequence
// numbers in [from, to), in order.
func entries(r Reader, prefix []byte, name string, from, to int64, fn func(seq int64, kind codec.Kind) (bool, error)) error {
	p := join(prefix, []byte(name), []byte{0})
	return r.Range(join(p, seqKey(from)), join(p, seqKey(to)), func(k, v []byte) (bool, error) {
		if len(k) != len(p)+8 {
			// An entry of a name that continues this one past a NUL byte.
			return true, nil
		}
		seq := seqFromKey(k[len(p):])
		if seq < 0 {
			return false, corrupt(k, "seq %d", seq)
		}
		kind, err := decodeEventKind(k, v)
		if err != nil {
			return false, err
		}
		return fn(seq, kind)
	})
}

// decodeEventKind reads the value of an investigation entry: a kind.
func decodeEventKind(k, v []byte) (codec.Kind, error) {
	r, err := decodeKindRec(k, v)
	return codec.Kind(r), err
}

// Selector returns sel as a ledger.Selector, for ledger.Query.Select: Log
// then reads only the events sel selects.
func (sel Selection) Selector() ledger.Selector {
	return func(s *ledger.Snapshot, from, to int64, fn func(seq int64) (bool, error)) error {
		if err := Events(s, sel, from, to, fn); err != nil {
			return fmt.Errorf("select events: %w", err)
		}
		return nil
	}
}
