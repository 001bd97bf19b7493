package index

import (
	"math"
	"sort"
	"time"

	"github.com/proofledger/ledger/codec/rvww"
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

func decodeRep(key, v []byte) (*repAgg, error) {
	d := newDec(key, v)
	a := &repAgg{pass: d.u("pass"), fail: d.u("fail"), partial: d.u("partial"), errs: d.u("errors"),
		first: d.i("first"), last: d.i("last"), s: d.sum("success sum"), f: d.sum("failure sum")}
	if err := d.done(); err != nil {
		return nil, err
	}
	if a.first > a.last {
		return nil, corrupt(key, "reputation: first receipt at %d ns after the last at %d ns", a.first, a.last)
	}
	return a, nil
}

// Outcome codes of witness bundles in rollups and records.
const (
	outSolved  = 0
	outFailed  = 1
	outSkipped = 2
	outError   = 3 // errored, and unknown outcome bytes (the reference counts them as errors)
)

// outcomeCode returns the code of a bundle outcome.
func outcomeCode(o rvww.Outcome) uint8 {
	if o.Known() {
		return uint8(o) // rvww's four outcomes are numbered as the codes
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

func decodeBundle(key, v []byte) (*bundleRec, error) {
	d := newDec(key, v)
	r := &bundleRec{outcome: d.byteMax("outcome", outError), policyKnown: d.flag("policy_known"), evidence: d.flag("evidence_complete"), mode: d.byte1("mode")}
	copy(r.policy[:], d.raw("policy", len(r.policy)))
	r.cost = d.u("cost")
	r.latency = uint32(d.umax("latency_ms", math.MaxUint32))
	r.tokens = d.u("tokens")
	r.retries = d.u("retries")
	r.violations = d.u("violations")
	r.task = d.s("task")
	if err := d.done(); err != nil {
		return nil, err
	}
	return r, nil
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

// decodeRollup decodes a rollup built in memory (it has no key).
func decodeRollup(v []byte) (*rollup, []LatencyCount, error) { return decodeRollupAt(nil, v) }

// decodeRollupAt decodes the rollup stored at key; the latencies come back
// as a sorted slice. The histogram holds one latency per bundle counted.
func decodeRollupAt(key, v []byte) (*rollup, []LatencyCount, error) {
	d := newDec(key, v)
	r := &rollup{}
	for i, name := range [...]string{"solved", "failed", "skipped", "errors"} {
		r.outcomes[i] = d.u(name)
	}
	r.cost, r.tokens, r.retries, r.violations, r.evidenceSolved = d.u("cost"), d.u("tokens"), d.u("retries"), d.u("violations"), d.u("evidence_solved")
	n := d.count("latencies")
	if d.err != nil {
		return nil, nil, d.err
	}
	lat := make([]LatencyCount, 0, n)
	var v32, counted uint64
	for i := uint64(0); i < n && d.err == nil; i++ {
		at := d.off()
		delta := d.u("latency")
		if d.err == nil && (i > 0 && delta == 0 || delta > math.MaxUint32-v32) {
			d.failAt(at, "latency", "delta %d after %d ms: latencies must rise and fit 32 bits", delta, v32)
		}
		v32 += delta
		at = d.off()
		c := d.u("latency count")
		if d.err == nil && c == 0 {
			d.failAt(at, "latency count", "count 0 (a latency is kept for at least one bundle)")
		}
		counted += c
		lat = append(lat, LatencyCount{MS: uint32(v32), Count: c})
	}
	if err := d.done(); err != nil {
		return nil, nil, err
	}
	if bundles := r.outcomes[0] + r.outcomes[1] + r.outcomes[2] + r.outcomes[3]; counted != bundles {
		return nil, nil, corrupt(key, "rollup: %d latencies for %d bundles", counted, bundles)
	}
	return r, lat, nil
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

func decodeTask(key, v []byte) (*taskState, error) {
	d := newDec(key, v)
	t := &taskState{solved: d.flag("solved"), firstSolved: d.i("first_solved")}
	if d.err == nil && !t.solved && t.firstSolved != 0 {
		d.fail("first_solved", "%d ns for a task never solved", t.firstSolved)
	}
	n := d.count("fail days")
	if d.err != nil {
		return nil, d.err
	}
	t.failDays = make(map[Day]int64, n)
	prev := int64(math.MinInt32) - 1
	for i := uint64(0); i < n && d.err == nil; i++ {
		at := d.off()
		day := d.i("fail day")
		if d.err == nil && (day <= prev || day > math.MaxInt32) {
			d.failAt(at, "fail day", "day %d after %d: days must rise and fit 32 bits", day, prev)
		}
		prev = day
		t.failDays[Day(day)] = d.i("fail time")
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	return t, nil
}

// decodeCounter decodes a count (x/v/).
func decodeCounter(key, v []byte) (*counter, error) {
	d := newDec(key, v)
	c := counter(d.u("count"))
	return &c, d.done()
}

// sysRec is an attestation in a system's history (x/y/).
type sysRec struct {
	verdict, level string
	passed, total  int64
	ns             int64
	signer, id     string
}

func (r *sysRec) encode() []byte {
	var e enc
	e.s(r.verdict)
	e.s(r.level)
	e.i(r.passed)
	e.i(r.total)
	e.i(r.ns)
	e.s(r.signer)
	e.s(r.id)
	return e.b
}

func decodeSys(key, v []byte) (*sysRec, error) {
	d := newDec(key, v)
	r := &sysRec{verdict: d.s("verdict"), level: d.s("level"), passed: d.i("passed"), total: d.i("total"), ns: d.i("time"), signer: d.s("signer"), id: d.s("id")}
	if err := d.done(); err != nil {
		return nil, err
	}
	if r.passed < 0 || r.passed > r.total {
		return nil, corrupt(key, "attestation: %d passed of %d", r.passed, r.total)
	}
	return r, nil
}

// verRec is a verifier's attestation (x/k/).
type verRec struct{ system, verdict string }

func (r *verRec) encode() []byte {
	var e enc
	e.s(r.system)
	e.s(r.verdict)
	return e.b
}

func decodeVer(key, v []byte) (*verRec, error) {
	d := newDec(key, v)
	r := &verRec{system: d.s("system"), verdict: d.s("verdict")}
	if err := d.done(); err != nil {
		return nil, err
	}
	return r, nil
}

// rollbackRec is a rollback record (x/rollback/): its task, whether it
// restored a clean state, and the policy and mode of the bundle it
// follows (its task's latest bundle appended before it), when there is one.
type rollbackRec struct {
	task   string
	clean  bool
	bundle bool
	policy [8]byte
	mode   uint8
}

func (r *rollbackRec) encode() []byte {
	var e enc
	e.s(r.task)
	e.flag(r.clean)
	e.flag(r.bundle)
	if r.bundle {
		e.b = append(e.b, r.policy[:]...)
		e.b = append(e.b, r.mode)
	}
	return e.b
}

func decodeRollback(key, v []byte) (*rollbackRec, error) {
	d := newDec(key, v)
	r := &rollbackRec{task: d.s("task"), clean: d.flag("restored_clean"), bundle: d.flag("bundle")}
	if r.bundle {
		copy(r.policy[:], d.raw("policy", 8))
		r.mode = d.byte1("mode")
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	return r, nil
}

// taskBundle is a task's latest bundle (x/task-bundle/): its policy hash
// and governance mode, to attribute the task's rollbacks.
type taskBundle struct {
	policy [8]byte
	mode   uint8
}

func (t *taskBundle) encode() []byte { return append(t.policy[:len(t.policy):len(t.policy)], t.mode) }

func decodeTaskBundle(key, v []byte) (*taskBundle, error) {
	d := newDec(key, v)
	t := &taskBundle{}
	copy(t.policy[:], d.raw("policy", 8))
	t.mode = d.byte1("mode")
	if err := d.done(); err != nil {
		return nil, err
	}
	return t, nil
}

// regressionValue is the value of a regression entry (x/g/): the task's
// first solve, ns.
type regressionValue int64

func (r *regressionValue) encode() []byte {
	var e enc
	e.i(int64(*r))
	return e.b
}

func decodeRegression(key, v []byte) (*regressionValue, error) {
	d := newDec(key, v)
	r := regressionValue(d.i("first_solved"))
	if err := d.done(); err != nil {
		return nil, err
	}
	return &r, nil
}
