package index

import (
	"errors"
	"fmt"
	"sort"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/ledger"
)

// Keyspaces under x/ (ledger.ProjectionPrefix).
var (
	pAgent      = []byte("x/a/") // x/a/<agent>\0                 repAgg, all time
	pAgentDay   = []byte("x/A/") // x/A/<agent>\0<day>            repAgg
	pAgentTask  = []byte("x/t/") // x/t/<agent>\0<task type>      repAgg
	pSigner     = []byte("x/s/") // x/s/<signer>\0                repAgg
	pSignerDay  = []byte("x/S/") // x/S/<signer>\0<day>           repAgg
	pTier       = []byte("x/v/") // x/v/<tier><verdict>           count
	pSystem     = []byte("x/y/") // x/y/<system>\0<seq>           attestation record
	pVerifier   = []byte("x/k/") // x/k/<signer>\0<seq>           system, verdict
	pRollup     = []byte("x/d/") // x/d/<day><policy 8><mode><known> rollup
	pBundle     = []byte("x/b/") // x/b/<created ns><seq>         bundle record
	pRollback   = []byte("x/r/") // x/r/<at ns><seq>              rollback record
	pTask       = []byte("x/T/") // x/T/<task>                    task state
	pRegression = []byte("x/g/") // x/g/<day><task>               first solved ns
)

// Index is the ledger's projections; it implements ledger.Projector.
type Index struct{}

// New returns the projections, to pass in ledger.Options.Projectors.
func New() *Index { return &Index{} }

// Name implements ledger.Projector.
func (*Index) Name() string { return "index" }

// Begin implements ledger.Projector.
func (*Index) Begin() ledger.ProjectionBatch { return &batch{cache: map[string]record{}} }

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
}

func (b *batch) load(w ledger.Writer, key []byte, decode func([]byte) (record, error), fresh func() record) (record, error) {
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
		if r, err = decode(v); err != nil {
			return nil, fmt.Errorf("%q: %w", key, err)
		}
	}
	b.cache[string(key)] = r
	return r, nil
}

func (b *batch) rep(w ledger.Writer, key []byte) (*repAgg, error) {
	r, err := b.load(w, key, func(v []byte) (record, error) { return decodeRep(v) }, func() record { return &repAgg{} })
	if err != nil {
		return nil, err
	}
	return r.(*repAgg), nil
}

// Flush implements ledger.ProjectionBatch: every touched key, in key order.
func (b *batch) Flush(w ledger.Writer) error {
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

// Project implements ledger.ProjectionBatch.
func (b *batch) Project(w ledger.Writer, ev *ledger.Event) error {
	a := attrs{ev.Attrs}
	switch ev.Kind {
	case codec.KindVRF:
		return b.receipt(w, ev, a)
	case codec.KindAVIRAttestation:
		return b.attestation(ev, a)
	case codec.KindRVWW:
		return b.bundle(w, ev, a)
	case ledger.KindRollback:
		rec := &enc{}
		rec.s(ev.Subject)
		rec.flag(a.flag("restored_clean"))
		b.cache[string(join(pRollback, nsKey(docNS(ev)), seqKey(ev.Seq)))] = rawRecord(rec.b)
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

func (b *batch) receipt(w ledger.Writer, ev *ledger.Event, a attrs) error {
	verdict := a.str("verdict")
	passed, total := a.num("passed"), a.num("total")
	ns := docNS(ev)
	day := DayOf(ev.Time)
	if ev.Time.IsZero() {
		day = DayOf(ev.AppendedAt)
	}
	keys := [][]byte{
		join(pAgent, []byte(ev.Subject), []byte{0}),
		join(pAgentDay, []byte(ev.Subject), []byte{0}, day.key()),
	}
	if tt := a.str("task_type"); tt != "" {
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
		r.add(verdict, passed, total, ns)
	}
	tk := join(pTier, []byte{byte(a.num("tier"))}, []byte(verdict))
	r, err := b.load(w, tk, func(v []byte) (record, error) {
		d := dec{b: v}
		c := counter(d.u())
		return &c, d.err
	}, func() record { c := counter(0); return &c })
	if err != nil {
		return err
	}
	*r.(*counter)++
	return nil
}

func (b *batch) attestation(ev *ledger.Event, a attrs) error {
	var e enc
	e.s(a.str("verdict"))
	e.s(a.str("level"))
	e.i(a.num("passed"))
	e.i(a.num("total"))
	e.i(docNS(ev))
	e.s(ev.Signer)
	e.s(ev.ID)
	b.cache[string(join(pSystem, []byte(ev.Subject), []byte{0}, seqKey(ev.Seq)))] = rawRecord(e.b)
	if ev.Signer != "" {
		var v enc
		v.s(ev.Subject)
		v.s(a.str("verdict"))
		b.cache[string(join(pVerifier, []byte(ev.Signer), []byte{0}, seqKey(ev.Seq)))] = rawRecord(v.b)
	}
	return nil
}

func (b *batch) bundle(w ledger.Writer, ev *ledger.Event, a attrs) error {
	rec := &bundleRec{
		outcome:     outcomeCode(a.str("outcome")),
		policyKnown: a.flag("policy_known"),
		evidence:    a.flag("evidence_complete"),
		mode:        uint8(a.num("mode")),
		cost:        uint64(a.num("cost")),
		latency:     uint32(a.num("latency_ms")),
		tokens:      uint64(a.num("tokens")),
		retries:     uint64(a.num("retries")),
		violations:  uint64(a.len("violations")),
		task:        ev.Subject,
	}
	copy(rec.policy[:], a.hex("policy"))
	ns := docNS(ev)
	day := dayOfNS(ns)
	b.cache[string(join(pBundle, nsKey(ns), seqKey(ev.Seq)))] = rec

	known := byte(0)
	if rec.policyKnown {
		known = 1
	}
	rk := join(pRollup, day.key(), rec.policy[:], []byte{rec.mode, known})
	r, err := b.load(w, rk, func(v []byte) (record, error) {
		ro, lat, err := decodeRollup(v)
		ro.loadLatencies(lat)
		return ro, err
	}, func() record { return &rollup{} })
	if err != nil {
		return err
	}
	r.(*rollup).add(rec)
	return b.regression(w, rec, ns, day)
}

// regression maintains, per task, the first solve and the latest failure
// of each day, and an entry x/g/<day><task> = first solve whenever the task
// failed or errored on that day after it had been solved.
func (b *batch) regression(w ledger.Writer, rec *bundleRec, ns int64, day Day) error {
	if rec.outcome == outSkipped || rec.task == "" {
		return nil
	}
	r, err := b.load(w, join(pTask, []byte(rec.task)), func(v []byte) (record, error) { return decodeTask(v) },
		func() record { return &taskState{failDays: map[Day]int64{}} })
	if err != nil {
		return err
	}
	t := r.(*taskState)
	mark := func(d Day) {
		if t.solved && t.firstSolved < t.failDays[d] {
			var e enc
			e.i(t.firstSolved)
			b.cache[string(join(pRegression, d.key(), []byte(rec.task)))] = rawRecord(e.b)
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

// attrs reads an event's Attrs.
type attrs struct{ v canonjson.Value }

func (a attrs) str(k string) string {
	f, _ := a.v.Get(k)
	s, _ := f.Str()
	return s
}

func (a attrs) num(k string) int64 {
	f, _ := a.v.Get(k)
	n, _ := f.Int64()
	return n
}

func (a attrs) flag(k string) bool {
	f, _ := a.v.Get(k)
	b, _ := f.Bool()
	return b
}

func (a attrs) len(k string) int {
	f, _ := a.v.Get(k)
	return f.Len()
}

func (a attrs) hex(k string) []byte {
	s := a.str(k)
	out := make([]byte, 0, 8)
	for i := 0; i+1 < len(s) && len(out) < 8; i += 2 {
		hi, lo := unhex(s[i]), unhex(s[i+1])
		out = append(out, hi<<4|lo)
	}
	return out
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return 0
}
