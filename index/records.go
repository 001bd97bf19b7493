package index

import (
	"math"
	"sort"
	"time"
)

// Reputation model (after ClawBizarre's reputation engine): each receipt
// adds a success weight (1 for pass, passed/total for partial, 0 for fail)
// and a failure weight (1 minus that); receipts with verdict "error" judge
// the verifier, not the work, and are counted but not weighed. Weights decay
// exponentially with the receipt's age (half-life HalfLife); the score is
// Bayesian with a prior of PriorStrength observations at PriorSuccess.
const (
	HalfLife      = 30 * 24 * time.Hour
	PriorStrength = 3.0
	PriorSuccess  = 0.67
)

// decayEpoch is the reference time of stored decayed sums: a weight w at
// time t is stored as w * 2^((t - decayEpoch) / HalfLife), so that sums can
// be kept incrementally and decayed to any "now" at query time.
var decayEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// growth returns 2^((ns - decayEpoch)/HalfLife), with the exponent clamped
// to keep the stored sums finite for absurd document times.
func growth(ns int64) float64 {
	x := float64(ns-decayEpoch) / float64(HalfLife)
	return math.Exp2(math.Max(-900, math.Min(900, x)))
}

// repAgg is a reputation aggregate: all-time, per day, or per task type.
type repAgg struct {
	pass, fail, partial, errs uint64
	first, last               int64 // document time of the first and last receipt, ns
	s, f                      float64
}

func (a *repAgg) add(verdict string, passed, total int64, ns int64) {
	switch verdict {
	case "pass":
		a.pass++
	case "fail":
		a.fail++
	case "partial":
		a.partial++
	default:
		a.errs++
	}
	if a.first == 0 && a.last == 0 || ns < a.first {
		a.first = ns
	}
	if ns > a.last {
		a.last = ns
	}
	if verdict == "error" {
		return
	}
	frac := 1.0
	switch verdict {
	case "fail":
		frac = 0
	case "partial":
		if total > 0 {
			frac = float64(passed) / float64(total)
		}
	}
	g := growth(ns)
	a.s += frac * g
	a.f += (1 - frac) * g
}

func (a *repAgg) merge(b *repAgg) {
	if a.pass+a.fail+a.partial+a.errs == 0 || b.first < a.first {
		a.first = b.first
	}
	if b.last > a.last {
		a.last = b.last
	}
	a.pass += b.pass
	a.fail += b.fail
	a.partial += b.partial
	a.errs += b.errs
	a.s += b.s
	a.f += b.f
}

func (a *repAgg) encode() []byte {
	var e enc
	e.u(a.pass)
	e.u(a.fail)
	e.u(a.partial)
	e.u(a.errs)
	e.i(a.first)
	e.i(a.last)
	e.f(a.s)
	e.f(a.f)
	return e.b
}

func decodeRep(b []byte) (*repAgg, error) {
	d := dec{b: b}
	a := &repAgg{pass: d.u(), fail: d.u(), partial: d.u(), errs: d.u(), first: d.i(), last: d.i(), s: d.f(), f: d.f()}
	return a, d.err
}

// Outcome codes of witness bundles in rollups and records.
const (
	outSolved  = 0
	outFailed  = 1
	outSkipped = 2
	outError   = 3 // errored, and unknown outcome bytes (the reference counts them as errors)
)

func outcomeCode(name string) uint8 {
	switch name {
	case "solved":
		return outSolved
	case "failed":
		return outFailed
	case "skipped":
		return outSkipped
	}
	return outError
}

// bundleRec is what a scorecard needs of one witness bundle.
type bundleRec struct {
	outcome     uint8
	policyKnown bool
	evidence    bool
	mode        uint8
	policy      [8]byte
	cost        uint64
	latency     uint32
	tokens      uint64
	retries     uint64
	violations  uint64
	task        string
}

func (r *bundleRec) encode() []byte {
	var e enc
	e.byte1(r.outcome)
	e.flag(r.policyKnown)
	e.flag(r.evidence)
	e.byte1(r.mode)
	e.b = append(e.b, r.policy[:]...)
	e.u(r.cost)
	e.u(uint64(r.latency))
	e.u(r.tokens)
	e.u(r.retries)
	e.u(r.violations)
	e.s(r.task)
	return e.b
}

func decodeBundle(b []byte) (*bundleRec, error) {
	d := dec{b: b}
	r := &bundleRec{outcome: d.byte1(), policyKnown: d.flag(), evidence: d.flag(), mode: d.byte1()}
	if len(d.b) < 8 {
		d.fail()
		return r, d.err
	}
	copy(r.policy[:], d.b[:8])
	d.b = d.b[8:]
	r.cost = d.u()
	r.latency = uint32(d.u())
	r.tokens = d.u()
	r.retries = d.u()
	r.violations = d.u()
	r.task = d.s()
	return r, d.err
}

// LatencyCount is one value of a latency histogram.
type LatencyCount struct {
	MS    uint32
	Count uint64
}

// rollup aggregates one day's bundles of one (policy, mode, known) group.
type rollup struct {
	outcomes       [4]uint64
	cost           uint64
	tokens         uint64
	retries        uint64
	violations     uint64
	evidenceSolved uint64
	latencies      map[uint32]uint64
}

func (r *rollup) add(b *bundleRec) {
	r.outcomes[b.outcome]++
	r.cost += b.cost
	r.tokens += b.tokens
	r.retries += b.retries
	r.violations += b.violations
	if b.outcome == outSolved && b.evidence {
		r.evidenceSolved++
	}
	if r.latencies == nil {
		r.latencies = map[uint32]uint64{}
	}
	r.latencies[b.latency]++
}

func (r *rollup) encode() []byte {
	var e enc
	for _, n := range r.outcomes {
		e.u(n)
	}
	e.u(r.cost)
	e.u(r.tokens)
	e.u(r.retries)
	e.u(r.violations)
	e.u(r.evidenceSolved)
	vals := make([]uint32, 0, len(r.latencies))
	for v := range r.latencies {
		vals = append(vals, v)
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	e.u(uint64(len(vals)))
	prev := uint32(0)
	for _, v := range vals {
		e.u(uint64(v - prev)) // delta from the previous value
		e.u(r.latencies[v])
		prev = v
	}
	return e.b
}

// decodeRollup decodes a rollup; the latencies come back as a sorted slice.
func decodeRollup(b []byte) (*rollup, []LatencyCount, error) {
	d := dec{b: b}
	r := &rollup{}
	for i := range r.outcomes {
		r.outcomes[i] = d.u()
	}
	r.cost, r.tokens, r.retries, r.violations, r.evidenceSolved = d.u(), d.u(), d.u(), d.u(), d.u()
	n := d.u()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return r, nil, d.err
	}
	lat := make([]LatencyCount, 0, n)
	v := uint32(0)
	for i := uint64(0); i < n && d.err == nil; i++ {
		v += uint32(d.u())
		lat = append(lat, LatencyCount{MS: v, Count: d.u()})
	}
	return r, lat, d.err
}

func (r *rollup) loadLatencies(lat []LatencyCount) {
	r.latencies = make(map[uint32]uint64, len(lat))
	for _, l := range lat {
		r.latencies[l.MS] += l.Count
	}
}

// taskState supports regressions: the task's first solve and, per day with
// failed or errored bundles, the latest such bundle's time.
type taskState struct {
	solved      bool
	firstSolved int64
	failDays    map[Day]int64
}

func (t *taskState) encode() []byte {
	var e enc
	e.flag(t.solved)
	e.i(t.firstSolved)
	days := make([]Day, 0, len(t.failDays))
	for d := range t.failDays {
		days = append(days, d)
	}
	sort.Slice(days, func(i, j int) bool { return days[i] < days[j] })
	e.u(uint64(len(days)))
	for _, d := range days {
		e.i(int64(d))
		e.i(t.failDays[d])
	}
	return e.b
}

func decodeTask(b []byte) (*taskState, error) {
	d := dec{b: b}
	t := &taskState{solved: d.flag(), firstSolved: d.i(), failDays: map[Day]int64{}}
	n := d.u()
	for i := uint64(0); i < n && d.err == nil; i++ {
		day := Day(d.i())
		t.failDays[day] = d.i()
	}
	return t, d.err
}
