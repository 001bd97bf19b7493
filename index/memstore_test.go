package index

import (
	"bytes"
	"sort"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/index/attrs"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/proof"
)

// memStore is an in-memory Reader and ledger.Writer, for projecting
// crafted events and querying crafted (or corrupted) projections without
// a ledger.
type memStore map[string][]byte

func (m memStore) Get(k []byte) ([]byte, error) {
	v, ok := m[string(k)]
	if !ok {
		return nil, ledger.ErrNotFound
	}
	return bytes.Clone(v), nil
}

func (m memStore) Set(k, v []byte) error { m[string(k)] = bytes.Clone(v); return nil }

func (m memStore) Delete(k []byte) error { delete(m, string(k)); return nil }

func (m memStore) Range(lower, upper []byte, fn func(k, v []byte) (bool, error)) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k >= string(lower) && (upper == nil || k < string(upper)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		more, err := fn([]byte(k), m[k])
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// sampleTime is the document time of the sample events.
var sampleTime = time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC)

// sampleEvents returns events of every kind the index projects, with
// attributes as the ledger writes them: receipts of two agents and two
// signers, attestations, bundles of a task that is solved, then fails a
// day later (a regression), on several days, and a rollback.
func sampleEvents() []*ledger.Event {
	var evs []*ledger.Event
	add := func(kind codec.Kind, subject, signer string, at time.Time, a canonjson.Value) {
		evs = append(evs, &ledger.Event{Leaf: proof.Leaf{Seq: int64(len(evs)), Kind: kind, ID: "id-" + subject, Subject: subject, Signer: signer,
			Time: at, AppendedAt: at.Add(time.Second), Position: -1, Attrs: a}})
	}
	rc := []attrs.Receipt{
		{Verdict: "pass", Tier: 0, Total: 3, Passed: 3, TaskType: "refactor"},
		{Verdict: "partial", Tier: 1, Total: 4, Passed: 3, Failed: 1, TaskType: "bugfix"},
		{Verdict: "fail", Tier: 1, Total: 2, Failed: 2},
		{Verdict: "error", Tier: 2, Total: 2, Passed: 1, Errors: 1},
	}
	for i, r := range rc {
		add(codec.KindVRF, []string{"agent-1", "agent-2"}[i%2], []string{"ed25519:aa", ""}[i/2%2], sampleTime.Add(time.Duration(i)*30*time.Hour), r.Value())
	}
	add(codec.KindAVIRAttestation, "Memoria v1.0.0", "ed25519:bb", sampleTime, attrs.Attestation{Verdict: "VERIFIED", Level: "L2", Passed: 3, Total: 3, System: "Memoria", Version: "1.0.0"}.Value())
	add(codec.KindAVIRAttestation, "Memoria v1.0.0", "", sampleTime.Add(time.Hour), attrs.Attestation{Verdict: "PARTIAL", Passed: 2, Total: 3, System: "Memoria", Version: "1.0.0"}.Value())
	task := "966f548c-424c-4692-b71b-ca44b8628235"
	bs := []attrs.Bundle{
		{Outcome: rvww.OutcomeSolved, Mode: 2, Policy: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}, PolicyKnown: true, CostMicrodollars: 120, LatencyMS: 40, Tokens: 600, ToolCalls: 2, EvidenceComplete: true, Violations: []attrs.Violation{}},
		{Outcome: rvww.OutcomeFailed, Mode: 0, PolicyKnown: true, CostMicrodollars: 7, LatencyMS: 90, Tokens: 10, Retries: 1, ToolCalls: 3, Violations: []attrs.Violation{{Call: 1, Code: "denied_tool", Tool: "Bash"}}},
		{Outcome: 9, Mode: 7, Policy: [8]byte{9}, LatencyMS: 5},
		{Outcome: rvww.OutcomeSkipped, Mode: 1, PolicyKnown: true, LatencyMS: 0, Violations: []attrs.Violation{}},
	}
	for i, b := range bs {
		add(codec.KindRVWW, task, "hmac:k", sampleTime.Add(time.Duration(i)*26*time.Hour), b.Value())
	}
	add(ledger.KindRollback, task, "ed25519:cc", sampleTime.Add(27*time.Hour), attrs.Rollback{RestoredClean: true}.Value())
	return evs
}

// project projects evs into a new memStore, one batch per event.
func project(evs []*ledger.Event) (memStore, error) {
	m := memStore{}
	for _, ev := range evs {
		b := New().Begin()
		if err := b.Project(m, ev); err != nil {
			return m, err
		}
		if err := b.Flush(m); err != nil {
			return m, err
		}
	}
	return m, nil
}
