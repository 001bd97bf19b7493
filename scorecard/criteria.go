package scorecard

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// ErrThreshold: a threshold that cannot be a criterion's (a ratio outside
// [0, 1] or with more than six decimals, a negative count).
var ErrThreshold = errors.New("bad threshold")

// Ratio is a threshold between 0 and 1 in millionths (600000 is 0.60), so
// that a criterion compares it with its integer counts exactly: no float
// rounding can make 60 of 100 fall short of 0.60.
type Ratio int64

// One is the ratio 1.00.
const One Ratio = 1_000_000

// ParseRatio reads a decimal from 0 to 1 with at most six decimals: "0.6",
// "0.60", "1", "0.955".
func ParseRatio(s string) (Ratio, error) {
	bad := fmt.Errorf("%w %.40q: want a decimal from 0 to 1 with at most 6 decimals (0.6, 0.95, 1)", ErrThreshold, s)
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || (dot && frac == "") || len(frac) > 6 || len(whole) > 1 {
		return 0, bad
	}
	for _, c := range whole + frac {
		if c < '0' || c > '9' {
			return 0, bad
		}
	}
	frac += strings.Repeat("0", 6-len(frac))
	w, _ := strconv.ParseInt(whole, 10, 64)
	f, _ := strconv.ParseInt(frac, 10, 64)
	r := Ratio(w)*One + Ratio(f)
	if r > One {
		return 0, bad
	}
	return r, nil
}

// Float returns the ratio as a float64 (0.6 for 600000).
func (r Ratio) Float() float64 { return float64(r) / float64(One) }

// String writes the ratio with at least two decimals and no trailing zeros
// beyond them: "0.60", "1.00", "0.955".
func (r Ratio) String() string { return decimal(r.Float()) }

// atMost reports whether r <= num/den (den > 0; num, den >= 0), exactly.
func (r Ratio) atMost(num, den int64) bool {
	if r <= 0 {
		return true
	}
	// r/One <= num/den  ⇔  r*den <= num*One, in 128 bits.
	lh, ll := bits.Mul64(uint64(r), uint64(den))
	rh, rl := bits.Mul64(uint64(num), uint64(One))
	return lh < rh || lh == rh && ll <= rl
}

// decimal writes x with at least two decimals and no trailing zeros beyond
// them.
func decimal(x float64) string {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	whole, frac, _ := strings.Cut(s, ".")
	for len(frac) < 2 {
		frac += "0"
	}
	return whole + "." + frac
}

// Criteria are the thresholds of the acceptance criteria of ADR-035
// section 4.1. DefaultCriteria returns the ADR's; a CI gate may override
// any of them. Each criterion is judged on the integer counts.
type Criteria struct {
	// MinSolveRate: solve_rate >= MinSolveRate (ADR-035: 0.60).
	MinSolveRate Ratio
	// MaxPolicyViolations: policy_violations <= MaxPolicyViolations
	// (ADR-035: 0, "== 0"). Whatever the threshold, a bundle under a
	// policy the ledger does not know (policy_unknown) fails the
	// criterion: its trace was never checked.
	MaxPolicyViolations int64
	// MinEvidenceCoverage: evidence_coverage >= MinEvidenceCoverage
	// (ADR-035: 1.00, "== 1.00").
	MinEvidenceCoverage Ratio
	// MinRollbackCorrectness: rollback_correctness >=
	// MinRollbackCorrectness (ADR-035: 1.00, "== 1.00").
	MinRollbackCorrectness Ratio
}

// DefaultCriteria returns ADR-035's thresholds.
func DefaultCriteria() Criteria {
	return Criteria{MinSolveRate: 600_000, MaxPolicyViolations: 0, MinEvidenceCoverage: One, MinRollbackCorrectness: One}
}

// The metric names of the criteria, in ADR-035's order.
const (
	MetricSolveRate           = "solve_rate"
	MetricPolicyViolations    = "policy_violations"
	MetricEvidenceCoverage    = "evidence_coverage"
	MetricRollbackCorrectness = "rollback_correctness"
)

// Validate reports a threshold no criterion can have.
func (c Criteria) Validate() error {
	for _, r := range []struct {
		name string
		r    Ratio
	}{{MetricSolveRate, c.MinSolveRate}, {MetricEvidenceCoverage, c.MinEvidenceCoverage}, {MetricRollbackCorrectness, c.MinRollbackCorrectness}} {
		if r.r < 0 || r.r > One {
			return fmt.Errorf("%w: %s threshold %d millionths is not between 0 and 1", ErrThreshold, r.name, int64(r.r))
		}
	}
	if c.MaxPolicyViolations < 0 {
		return fmt.Errorf("%w: %s threshold %d is negative", ErrThreshold, MetricPolicyViolations, c.MaxPolicyViolations)
	}
	return nil
}

// Overridden returns the metric names whose thresholds differ from
// ADR-035's, in ADR-035's order (empty, not nil, when none does).
func (c Criteria) Overridden() []string {
	d := DefaultCriteria()
	out := []string{}
	if c.MinSolveRate != d.MinSolveRate {
		out = append(out, MetricSolveRate)
	}
	if c.MaxPolicyViolations != d.MaxPolicyViolations {
		out = append(out, MetricPolicyViolations)
	}
	if c.MinEvidenceCoverage != d.MinEvidenceCoverage {
		out = append(out, MetricEvidenceCoverage)
	}
	if c.MinRollbackCorrectness != d.MinRollbackCorrectness {
		out = append(out, MetricRollbackCorrectness)
	}
	return out
}

// Criterion is one acceptance criterion of ADR-035 section 4.1 and whether
// a scorecard meets it.
type Criterion struct {
	// Metric is the metric's name, Op ">=", "<=" or "==" (ADR-035 writes
	// "== 0" and "== 1.00" for thresholds at the end of their range, where
	// "<=" and ">=" mean the same), Threshold its bound.
	Metric    string  `json:"metric"`
	Op        string  `json:"op"`
	Threshold float64 `json:"threshold"`
	// Default is ADR-035's threshold; Overridden says Threshold is not it.
	Default    float64 `json:"default"`
	Overridden bool    `json:"overridden"`
	// Value is the scorecard's value of the metric.
	Value float64 `json:"value"`
	Met   bool    `json:"met"`
	// Reason says why a criterion is not met when the value alone does not.
	Reason string `json:"reason,omitempty"`
}

// String writes the criterion as "solve_rate >= 0.60".
func (c Criterion) String() string { return c.Metric + " " + c.Op + " " + c.threshold(c.Threshold) }

// DefaultString writes the criterion with ADR-035's threshold.
func (c Criterion) DefaultString() string {
	return c.Metric + " " + opFor(c.Metric, c.Default) + " " + c.threshold(c.Default)
}

// opFor is a criterion's operator: ">=" for a lower bound, "<=" for an
// upper one, and "==" (as ADR-035 writes them) where the bound is the end
// of the metric's range: policy_violations <= 0, evidence_coverage and
// rollback_correctness >= 1.00.
func opFor(metric string, threshold float64) string {
	switch {
	case metric == MetricPolicyViolations && threshold == 0:
		return "=="
	case metric == MetricPolicyViolations:
		return "<="
	case metric != MetricSolveRate && threshold == 1:
		return "=="
	}
	return ">="
}

func (c Criterion) threshold(x float64) string {
	if c.Metric == MetricPolicyViolations {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return decimal(x)
}

// NotJudged is the reason every criterion gives when the window holds no
// witness bundles.
const NotJudged = "not judged: no witness bundles in the window"

// Judge judges m against the thresholds, in ADR-035's order. Each
// criterion is decided on the integer counts:
//
//   - solve_rate >= r: solved >= r * total_tasks, and at least one task;
//   - policy_violations <= n: at most n violations AND no bundle with an
//     unknown policy, whose trace was never checked and so cannot count as
//     clean;
//   - evidence_coverage >= r: evidence-complete solved >= r * solved, and
//     at least one solve (unless r is 0);
//   - rollback_correctness >= r: clean rollbacks >= r * rollbacks (met
//     when there were none: none failed to restore a clean state).
//
// When the window holds no bundle (total_tasks 0) there is nothing to
// judge: every criterion is unmet with the reason NotJudged.
func (c Criteria) Judge(m Metrics) []Criterion {
	d := DefaultCriteria()
	out := []Criterion{
		{Metric: MetricSolveRate, Threshold: c.MinSolveRate.Float(), Default: d.MinSolveRate.Float(),
			Value: f32(m.SolveRate), Met: m.TotalTasks > 0 && c.MinSolveRate.atMost(m.Solved, m.TotalTasks)},
		{Metric: MetricPolicyViolations, Threshold: float64(c.MaxPolicyViolations), Default: float64(d.MaxPolicyViolations),
			Value: float64(m.PolicyViolations), Met: m.PolicyViolations <= c.MaxPolicyViolations && m.PolicyUnknown == 0},
		{Metric: MetricEvidenceCoverage, Threshold: c.MinEvidenceCoverage.Float(), Default: d.MinEvidenceCoverage.Float(),
			Value: f32(m.EvidenceCoverage),
			Met:   c.MinEvidenceCoverage == 0 || m.Solved > 0 && c.MinEvidenceCoverage.atMost(m.EvidenceCompleteSolved, m.Solved)},
		{Metric: MetricRollbackCorrectness, Threshold: c.MinRollbackCorrectness.Float(), Default: d.MinRollbackCorrectness.Float(),
			Value: f32(m.RollbackCorrectness),
			Met:   m.RollbackCount == 0 || c.MinRollbackCorrectness.atMost(m.RollbacksRestoredClean, m.RollbackCount)},
	}
	for i := range out {
		out[i].Op = opFor(out[i].Metric, out[i].Threshold)
		out[i].Overridden = out[i].Threshold != out[i].Default
	}
	if m.TotalTasks == 0 {
		for i := range out {
			out[i].Met, out[i].Reason = false, NotJudged
		}
		return out
	}
	if m.PolicyUnknown > 0 {
		out[1].Reason = fmt.Sprintf("%d %s a policy the ledger does not know (policy_unknown): %s never checked, so %s cannot count as clean",
			m.PolicyUnknown, plural(m.PolicyUnknown, "bundle names", "bundles name"),
			plural(m.PolicyUnknown, "its trace was", "their traces were"), plural(m.PolicyUnknown, "it", "they"))
	}
	if m.Solved == 0 && c.MinEvidenceCoverage > 0 {
		out[2].Reason = "no solved tasks in the window"
	}
	if m.RollbackCount == 0 {
		out[3].Reason = "no rollbacks in the window (met: none failed to restore a clean state)"
	}
	return out
}

// Status is a scorecard's verdict.
type Status string

// The verdicts of a scorecard.
const (
	// Accepted: every criterion is met.
	Accepted Status = "accepted"
	// NotAccepted: some criterion is not met.
	NotAccepted Status = "not_accepted"
	// Empty: the window holds no witness bundles; nothing was judged.
	Empty Status = "empty"
)

// Verdict returns the status of a scorecard with metrics m judged as
// criteria: Empty when m counts no task, else Accepted when every
// criterion is met and NotAccepted when one is not.
func Verdict(m Metrics, criteria []Criterion) Status {
	if m.TotalTasks == 0 {
		return Empty
	}
	for _, c := range criteria {
		if !c.Met {
			return NotAccepted
		}
	}
	return Accepted
}
