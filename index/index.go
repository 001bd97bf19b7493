package index

import (
	"errors"
	"fmt"
	"sort"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/index/attrs"
	"github.com/proofledger/ledger/ledger"
)

// Keyspaces under x/ (ledger.ProjectionPrefix), named for what they hold
// (docs/FORMAT.md).
var (
	pAgent      = []byte("x/agent/")       // <agent>\0                 repAgg, all time
	pAgentDay   = []byte("x/agent-day/")   // <agent>\0<day>            repAgg
	pAgentTask  = []byte("x/agent-task/")  // <agent>\0<task type>      repAgg
	pSigner     = []byte("x/signer/")      // <signer>\0                repAgg
	pSignerDay  = []byte("x/signer-day/")  // <signer>\0<day>           repAgg
	pTier       = []byte("x/tier/")        // <tier><verdict>           count
	pSystem     = []byte("x/system/")      // <system>\0<seq>           attestation record
	pVerifier   = []byte("x/verifier/")    // <signer>\0<seq>           system, verdict
	pRollup     = []byte("x/rollup/")      // <day><policy 8><mode><known> per-day bundle rollup
	pBundle     = []byte("x/bundle/")      // <created ns><seq>         bundle record
	pRollback   = []byte("x/rollback/")    // <at ns><seq>              rollback record
	pTask       = []byte("x/task/")        // <task>                    task state (regressions)
	pTaskBundle = []byte("x/task-bundle/") // <task>                    the task's latest bundle: policy, mode
	pRegression = []byte("x/regression/")  // <day><task>               first solved ns
	// The investigation keyspaces (select.go): every event under each
	// agent acting in it and under its subject, value its kind.
	pAgentEvent   = []byte("x/agent-event/")   // <agent>\0<seq>         kind
	pSubjectEvent = []byte("x/subject-event/") // <subject>\0<seq>       kind
)

// DerivedVersion is the version of the projections' layout
// (ledger.Versioned): 2 added x/agent-event/ and x/subject-event/. A
// ledger whose projections were written by another version rebuilds them
// on its next write open.
const DerivedVersion = 2

// DerivedVersion implements ledger.Versioned.
func (*Index) DerivedVersion() int { return DerivedVersion }

// Index is the ledger's projections; it implements ledger.Projector.
type Index struct{}

// New returns the projections, to pass in ledger.Options.Projectors.
func New() *Index { return &Index{} }

// Name implements ledger.Projector.
func (*Index) Name() string { return "index" }

// Begin implements ledger.Projector.
func (*Index) Begin() ledger.ProjectionBatch {
	return &batch{cache: map[string]record{}, blind: map[string][]byte{}}
}

// record is a projection value held in a batch's cache.
type record interface{ encode() []byte }

type counter uint64

func (c *counter) encode() []byte { var e enc; e.u(uint64(*c)); return e.b }

type rawRecord []byte

func (r rawRecord) encode() []byte { return r }

// batch gathers one ledger batch's updates: each key is read at most once
// and written once, in Flush.
type batch struct {
	cache map[string]record
	// blind are keys written and never read (the investigation
	// keyspaces): a rebuild keeps them out of its filter of written keys.
	blind map[string][]byte
	// Decoded attributes of the event being projected, kept to reuse
	// their memory.
	receipt     attrs.Receipt
	attestation attrs.Attestation
	bundleAttrs attrs.Bundle
	rollback    attrs.Rollback
}

// load returns the record at key: from the batch, else decoded from the
// store, else fresh.
func (b *batch) load(w ledger.Writer, key []byte, decode func(k, v []byte) (record, error), fresh func() record) (record, error) {
	if r, ok := b.cache[string(key)]; ok {
		return r, nil
	}
	v, err := w.Get(key)
	var r record
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		r = fresh()
	case err != nil:
		return nil, err
	default:
		if r, err = decode(key, v); err != nil {
			return nil, err
		}
	}
	b.cache[string(key)] = r
	return r, nil
}

// taskBundle returns a task's latest bundle, nil when it has none (and
// caches nothing then: there is nothing to write back).
func (b *batch) taskBundle(w ledger.Writer, task string) (*taskBundle, error) {
	key := join(pTaskBundle, []byte(task))
	if r, ok := b.cache[string(key)]; ok {
		return r.(*taskBundle), nil
	}
	v, err := w.Get(key)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	t, err := decodeTaskBundle(key, v)
	if err != nil {
		return nil, err
	}
	b.cache[string(key)] = t
	return t, nil
}

func (b *batch) rep(w ledger.Writer, key []byte) (*repAgg, error) {
	r, err := b.load(w, key, func(k, v []byte) (record, error) { return decodeRep(k, v) }, func() record { return &repAgg{} })
	if err != nil {
		return nil, err
	}
	return r.(*repAgg), nil
}

// Flush implements ledger.ProjectionBatch: every touched key, in key order.
func (b *batch) Flush(w ledger.Writer) error {
	if err := b.flushBlind(w); err != nil {
		return err
	}
	keys := make([]string, 0, len(b.cache))
	for k := range b.cache {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := w.Set([]byte(k), b.cache[k].encode()); err != nil {
			return err
		}
	}
	b.cache = map[string]record{}
	return nil
}

// flushBlind writes the blind keys, in key order.
func (b *batch) flushBlind(w ledger.Writer) error {
	keys := make([]string, 0, len(b.blind))
	for k := range b.blind {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := w.Set([]byte(k), b.blind[k]); err != nil {
			return err
		}
	}
	clear(b.blind)
	return nil
}

// Project implements ledger.ProjectionBatch. It decodes the event's
// attributes strictly (package attrs) and fails, naming the event and the
// field, when they do not decode, rather than project zeros.
func (b *batch) Project(w ledger.Writer, ev *ledger.Event) error {
	b.projectSelection(ev)
	var err error
	switch ev.Kind {
	case codec.KindVRF:
		if err = b.receipt.Decode(ev.Attrs); err == nil {
			return b.projectReceipt(w, ev, &b.receipt)
		}
	case codec.KindAVIRAttestation:
		if err = b.attestation.Decode(ev.Attrs); err == nil {
			b.projectAttestation(ev, &b.attestation)
			return nil
		}
	case codec.KindRVWW:
		if err = b.bundleAttrs.Decode(ev.Attrs); err == nil {
			return b.projectBundle(w, ev, &b.bundleAttrs)
		}
	case ledger.KindRollback:
		if err = b.rollback.Decode(ev.Attrs); err == nil {
			rec := rollbackRec{task: ev.Subject, clean: b.rollback.RestoredClean}
			// A rollback is attributed to the bundle it follows: its
			// task's latest bundle, appended before it.
			t, err := b.taskBundle(w, ev.Subject)
			if err != nil {
				return err
			}
			if t != nil {
				rec.bundle, rec.policy, rec.mode = true, t.policy, t.mode
			}
			b.cache[string(join(pRollback, nsKey(docNS(ev)), seqKey(ev.Seq)))] = rawRecord(rec.encode())
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("leaf of event %d (%s): %w", ev.Seq, ev.Kind, err)
	}
	return nil
}

// docNS is the event's document time, or its append time when it has none.
func docNS(ev *ledger.Event) int64 {
	if ev.Time.IsZero() {
		return ev.AppendedAt.UnixNano()
	}
	return ev.Time.UnixNano()
}

func (b *batch) projectReceipt(w ledger.Writer, ev *ledger.Event, a *attrs.Receipt) error {
	ns := docNS(ev)
	day := DayOf(ev.Time)
	if ev.Time.IsZero() {
		day = DayOf(ev.AppendedAt)
	}
	keys := [][]byte{
		join(pAgent, []byte(ev.Subject), []byte{0}),
		join(pAgentDay, []byte(ev.Subject), []byte{0}, day.key()),
	}
	if tt := a.TaskType; tt != "" {
		keys = append(keys, join(pAgentTask, []byte(ev.Subject), []byte{0}, []byte(tt)))
	}
	if ev.Signer != "" {
		keys = append(keys, join(pSigner, []byte(ev.Signer), []byte{0}), join(pSignerDay, []byte(ev.Signer), []byte{0}, day.key()))
	}
	for _, k := range keys {
		r, err := b.rep(w, k)
		if err != nil {
			return err
		}
		r.add(a.Verdict, a.Passed, a.Total, ns)
	}
	tk := join(pTier, []byte{byte(a.Tier)}, []byte(a.Verdict))
	r, err := b.load(w, tk, func(k, v []byte) (record, error) { return decodeCounter(k, v) },
		func() record { c := counter(0); return &c })
	if err != nil {
		return err
	}
	*r.(*counter)++
	return nil
}

func (b *batch) projectAttestation(ev *ledger.Event, a *attrs.Attestation) {
	rec := sysRec{verdict: a.Verdict, level: a.Level, passed: a.Passed, total: a.Total, ns: docNS(ev), signer: ev.Signer, id: ev.ID}
	b.cache[string(join(pSystem, []byte(ev.Subject), []byte{0}, seqKey(ev.Seq)))] = rawRecord(rec.encode())
	if ev.Signer != "" {
		v := verRec{system: ev.Subject, verdict: a.Verdict}
		b.cache[string(join(pVerifier, []byte(ev.Signer), []byte{0}, seqKey(ev.Seq)))] = rawRecord(v.encode())
	}
}

func (b *batch) projectBundle(w ledger.Writer, ev *ledger.Event, a *attrs.Bundle) error {
	rec := &bundleRec{
		outcome:     outcomeCode(a.Outcome),
		policyKnown: a.PolicyKnown,
		evidence:    a.EvidenceComplete,
		mode:        uint8(a.Mode),
		policy:      a.Policy,
		cost:        uint64(a.CostMicrodollars),
		latency:     a.LatencyMS,
		tokens:      uint64(a.Tokens),
		retries:     uint64(a.Retries),
		violations:  uint64(len(a.Violations)),
		task:        ev.Subject,
	}
	ns := docNS(ev)
	day := dayOfNS(ns)
	b.cache[string(join(pBundle, nsKey(ns), seqKey(ev.Seq)))] = rec

	known := byte(0)
	if rec.policyKnown {
		known = 1
	}
	rk := join(pRollup, day.key(), rec.policy[:], []byte{rec.mode, known})
	r, err := b.load(w, rk, func(k, v []byte) (record, error) {
		ro, lat, err := decodeRollupAt(k, v)
		if err != nil {
			return nil, err
		}
		ro.loadLatencies(lat)
		return ro, nil
	}, func() record { return &rollup{} })
	if err != nil {
		return err
	}
	r.(*rollup).add(rec)
	b.cache[string(join(pTaskBundle, []byte(rec.task)))] = &taskBundle{policy: rec.policy, mode: rec.mode}
	return b.regression(w, rec, ns, day)
}

// regression maintains, per task, the first solve and the latest failure
// of each day, and an entry x/g/<day><task> = first solve whenever the task
// failed or errored on that day after it had been solved.
func (b *batch) regression(w ledger.Writer, rec *bundleRec, ns int64, day Day) error {
	if rec.outcome == outSkipped || rec.task == "" {
		return nil
	}
	r, err := b.load(w, join(pTask, []byte(rec.task)), func(k, v []byte) (record, error) { return decodeTask(k, v) },
		func() record { return &taskState{failDays: map[Day]int64{}} })
	if err != nil {
		return err
	}
	t := r.(*taskState)
	mark := func(d Day) {
		if t.solved && t.firstSolved < t.failDays[d] {
			v := regressionValue(t.firstSolved)
			b.cache[string(join(pRegression, d.key(), []byte(rec.task)))] = rawRecord(v.encode())
		}
	}
	if rec.outcome == outSolved {
		if !t.solved || ns < t.firstSolved {
			t.solved, t.firstSolved = true, ns
			for d := range t.failDays {
				mark(d)
			}
		}
		return nil
	}
	if prev, ok := t.failDays[day]; !ok || ns > prev {
		t.failDays[day] = ns
	}
	mark(day)
	return nil
}
