package ledger

import (
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/proofledger/ledger/proof"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/inspect"
)

// Admission: the rules that decide, against the log, whether a decoded and
// verified document becomes an event: identity (replay, conflict), receipt
// chains and task histories. The sequencer calls admit for each candidate
// of a batch, in order; lookups see the batch being built (the overlay)
// before the store.

// overlay is the state of the batch being built, seen before the store.
type overlay struct {
	hashes map[int64]tlog.Hash
	ident  map[string]identValue
	tasks  map[string]taskHead // task → latest event in this batch
	succ   map[string]int64    // receipt id → successor seq in this batch
}

// admit decides one candidate against the log and the batch so far. It
// returns the event to write (Seq and links set) or nil with the outcome of
// a refusal.
func (l *Ledger) admit(c *candidate, ov *overlay, next int64) (Outcome, *Event, error) {
	o := Outcome{Name: c.sub.Name, Kind: c.kind, ID: c.id, Seq: -1, Status: StatusRejected}
	iv, found, err := lookupIdent(l.db, ov, c.kind, c.id)
	if err != nil {
		return o, nil, err
	}
	if found {
		o.Seq = iv.seq
		if iv.digest == c.digest {
			o.Status = StatusReplay
			o.Reason = fmt.Sprintf("already in the ledger as event %d", iv.seq)
		} else {
			o.Status = StatusConflict
			o.Reason = fmt.Sprintf("a different document with this identity is event %d", iv.seq)
		}
		return o, nil, nil
	}
	s := c.res
	ev := &Event{Leaf: proof.Leaf{Seq: next, Kind: c.kind, ID: c.id, Subject: s.Subject, Signer: s.Signer, Time: s.Time,
		Position: -1, Digest: c.digest, Size: int64(len(c.sub.Data)), Attrs: canonjson.MakeObject()}}
	switch c.kind {
	case codec.KindVRF:
		reason, err := l.linkReceipt(c, ov, ev)
		if err != nil {
			return o, nil, err
		}
		if reason != "" {
			o.Class, o.Reason = RejectLink, reason
			if _, found, _ := lookupIdent(l.db, ov, codec.KindVRF, c.prev); !found {
				o.Waiting = c.prev
			}
			return o, nil, nil
		}
	case codec.KindRVWW, KindRollback:
		ev.Subject = c.task
		prev, ok, err := lookupTaskHead(l.db, ov, c.task)
		if err != nil {
			return o, nil, err
		}
		if ok {
			ev.Links = append(ev.Links, Link{Rel: RelTaskPrevious, ID: prev.id, Seq: prev.seq})
		} else if c.kind == KindRollback {
			o.Class = RejectLink
			o.Reason = fmt.Sprintf("task_id: no witness bundle of task %s is in the ledger; a rollback follows its task", c.task)
			return o, nil, nil
		}
	}
	ev.Attrs = kindAttrs(s)
	o.Status = StatusAppended
	return o, ev, nil
}

// linkReceipt applies the chain rules to a receipt: a previous_receipt must
// be in the log (or earlier in the batch), have no successor yet, sit at
// chain_position - 1 (a receipt without chain_position counts as position
// 0), and speak for the same agent. The receipt's agent is its agent_id,
// else its predecessor's agent, else (a chain's first receipt) its own
// receipt_id when it carries chain fields, else its signer, else its own id.
func (l *Ledger) linkReceipt(c *candidate, ov *overlay, ev *Event) (string, error) {
	if c.prev == "" {
		ev.Subject = c.agent
		if ev.Subject == "" {
			switch {
			case c.position >= 0:
				ev.Subject = c.id
			case c.res.Signer != "":
				ev.Subject = c.res.Signer
			default:
				ev.Subject = c.id
			}
		}
		ev.Position = max(c.position, 0)
		return "", nil
	}
	iv, found, err := lookupIdent(l.db, ov, codec.KindVRF, c.prev)
	if err != nil {
		return "", err
	}
	if !found {
		return fmt.Sprintf("metadata.previous_receipt: receipt %s is not in the ledger (append it first, or in the same call)", c.prev), nil
	}
	if succ, ok, err := successor(l.db, ov, c.prev); err != nil {
		return "", err
	} else if ok {
		return fmt.Sprintf("metadata.previous_receipt: receipt %s already has a successor (event %d); a chain cannot fork", c.prev, succ), nil
	}
	predPos := max(iv.position, 0)
	if c.position != predPos+1 {
		return fmt.Sprintf("metadata.chain_position: %d, want %d (one more than receipt %s at position %d)", c.position, predPos+1, c.prev, predPos), nil
	}
	agent := c.agent
	if agent == "" {
		agent = iv.agent
	} else if agent != iv.agent {
		return fmt.Sprintf("agent_id: %q continues receipt %s of agent %q; a chain speaks for one agent", agent, c.prev, iv.agent), nil
	}
	ev.Subject = agent
	ev.Position = c.position
	ev.Links = append(ev.Links, Link{Rel: RelPreviousReceipt, ID: c.prev, Seq: iv.seq})
	return "", nil
}

// lookupIdent finds an identity entry in the batch being built, then in r.
func lookupIdent(r pebble.Reader, ov *overlay, kind codec.Kind, id string) (identValue, bool, error) {
	k := identKey(kind, id)
	if ov != nil {
		if iv, ok := ov.ident[string(k)]; ok {
			return iv, true, nil
		}
	}
	v, closer, err := r.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return identValue{}, false, nil
	}
	if err != nil {
		return identValue{}, false, storeErr(err)
	}
	defer closer.Close()
	iv, err := decodeIdent(k, v) // copies what it keeps
	if err != nil {
		return identValue{}, false, err
	}
	return iv, true, nil
}

// successor returns the receipt that continues receipt id, if any.
func successor(r pebble.Reader, ov *overlay, id string) (int64, bool, error) {
	if ov != nil {
		if s, ok := ov.succ[id]; ok {
			return s, true, nil
		}
	}
	k := successorKey(id)
	v, err := getCopy(r, k)
	if errors.Is(err, ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	s, err := decodeSeq(k, v)
	return s, err == nil, err
}

// lookupTaskHead returns the latest event of a task, from the batch or r.
func lookupTaskHead(r pebble.Reader, ov *overlay, task string) (taskHead, bool, error) {
	if ov != nil {
		if h, ok := ov.tasks[task]; ok {
			return h, true, nil
		}
	}
	k := taskHeadKey(task)
	v, err := getCopy(r, k)
	if errors.Is(err, ErrNotFound) {
		return taskHead{}, false, nil
	}
	if err != nil {
		return taskHead{}, false, err
	}
	h, err := decodeTaskHead(k, v)
	return h, err == nil, err
}

// kindAttrs records in the event the facts of a document that projections
// need, so that they (and `ledger rebuild`) read leaves only and never
// decode documents again. They are fixed at append time: a bundle's
// governance evaluation uses the policies known then.
func kindAttrs(res *inspect.Result) canonjson.Value {
	type m = canonjson.Member
	str, num := canonjson.MakeString, canonjson.MakeInt
	switch {
	case res.Receipt != nil:
		r := res.Receipt
		c := r.Counts()
		ms := []m{
			{Key: "verdict", Value: str(r.Verdict())},
			{Key: "tier", Value: num(int64(r.Tier()))},
			{Key: "total", Value: num(c.Total)},
			{Key: "passed", Value: num(c.Passed)},
			{Key: "failed", Value: num(c.Failed)},
			{Key: "errors", Value: num(c.Errors)},
		}
		if tt := r.TaskType(); tt != "" {
			ms = append(ms, m{Key: "task_type", Value: str(tt)})
		}
		return canonjson.MakeObject(ms...)
	case res.Attestation != nil:
		a := res.Attestation
		passed, total, _ := a.PassRate()
		sys := a.System()
		return canonjson.MakeObject(
			m{Key: "verdict", Value: str(a.Verdict())},
			m{Key: "level", Value: str(a.Level())},
			m{Key: "passed", Value: num(passed)},
			m{Key: "total", Value: num(total)},
			m{Key: "system", Value: str(sys.Name)},
			m{Key: "version", Value: str(sys.Version)},
		)
	case res.Rollback != nil:
		return canonjson.MakeObject(m{Key: "restored_clean", Value: canonjson.MakeBool(res.Rollback.RestoredClean)})
	case res.Bundle != nil:
		b := res.Bundle
		h := b.Header
		ms := []m{
			{Key: "outcome", Value: str(b.OutcomeName())},
			{Key: "mode", Value: num(int64(h.Mode))},
			{Key: "policy", Value: str(hex.EncodeToString(h.PolicyHash[:]))},
			{Key: "policy_known", Value: canonjson.MakeBool(res.Policy != nil)},
			{Key: "cost", Value: num(int64(h.TotalCostMicrodollars))},
			{Key: "latency_ms", Value: num(int64(h.TotalLatencyMS))},
			{Key: "tokens", Value: num(int64(h.TotalTokens))},
			{Key: "retries", Value: num(int64(h.RetryCount))},
			{Key: "tool_calls", Value: num(int64(h.ToolCallCount))},
			{Key: "evidence_complete", Value: canonjson.MakeBool(b.EvidenceComplete())},
		}
		if res.Policy != nil {
			vs := make([]canonjson.Value, len(res.Violations))
			for i, v := range res.Violations {
				vs[i] = canonjson.MakeObject(
					m{Key: "call", Value: num(int64(v.CallIndex))},
					m{Key: "code", Value: str(v.Code)},
					m{Key: "tool", Value: str(v.Tool)},
				)
			}
			ms = append(ms, m{Key: "violations", Value: canonjson.MakeArray(vs...)})
		}
		return canonjson.MakeObject(ms...)
	}
	return canonjson.MakeObject()
}
