package scorecard

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/proofledger/ledger/index"
)

// Counts are the sums a scorecard is computed from: what index.Totals
// holds, with the two latency percentiles already selected.
type Counts struct {
	Solved, Failed, Skipped, Errors int64 // Errors includes unknown outcomes
	CostMicrodollars                int64
	Tokens                          int64
	Retries                         int64
	// Violations is the number of governance violations recorded for the
	// bundles (a bundle may have several).
	Violations int64
	// PolicyUnknown is the number of bundles whose policy hash named no
	// policy the ledger knew when they were appended.
	PolicyUnknown int64
	// EvidenceCompleteSolved is the number of solved bundles with SPEC,
	// DIFF and TEST_LOG.
	EvidenceCompleteSolved int64
	// Rollbacks and RollbacksClean count rollback records, and those that
	// restored a clean state.
	Rollbacks, RollbacksClean int64
	// MedianLatencyMS and P95LatencyMS are the reference's percentiles 50
	// and 95 of the bundles' total_latency_ms.
	MedianLatencyMS, P95LatencyMS uint32
}

// CountsOf reads Counts from index totals.
func CountsOf(t *index.Totals) Counts {
	return Counts{
		Solved: t.Solved, Failed: t.Failed, Skipped: t.Skipped, Errors: t.Errors,
		CostMicrodollars: t.CostMicrodollars, Tokens: t.Tokens, Retries: t.Retries,
		Violations: t.Violations, PolicyUnknown: t.PolicyUnknown,
		EvidenceCompleteSolved: t.EvidenceCompleteSolved,
		Rollbacks:              t.Rollbacks, RollbacksClean: t.RollbacksClean,
		MedianLatencyMS: t.Percentile(50), P95LatencyMS: t.Percentile(95),
	}
}

// Metrics are the scorecard metrics of ADR-035 section 4, under their ADR
// names, and the figures this ledger adds to them.
type Metrics struct {
	TotalTasks            int64   `json:"total_tasks"`
	Solved                int64   `json:"solved"`
	Failed                int64   `json:"failed"`
	Skipped               int64   `json:"skipped"`
	Errors                int64   `json:"errors"`
	PolicyViolations      int64   `json:"policy_violations"`
	RollbackCount         int64   `json:"rollback_count"`
	TotalCostMicrodollars int64   `json:"total_cost_microdollars"`
	MedianLatencyMS       uint32  `json:"median_latency_ms"`
	P95LatencyMS          uint32  `json:"p95_latency_ms"`
	TotalTokens           int64   `json:"total_tokens"`
	TotalRetries          int64   `json:"total_retries"`
	EvidenceCoverage      float32 `json:"evidence_coverage"`
	CostPerSolve          int64   `json:"cost_per_solve"` // microdollars
	SolveRate             float32 `json:"solve_rate"`

	// PolicyUnknown counts bundles whose policy the ledger did not know:
	// their traces were not checked, so they may hide violations.
	PolicyUnknown int64 `json:"policy_unknown"`
	// EvidenceCompleteSolved is evidence_coverage's numerator.
	EvidenceCompleteSolved int64 `json:"evidence_complete_solved"`
	// RollbacksRestoredClean counts rollbacks that restored a clean state.
	RollbacksRestoredClean int64 `json:"rollbacks_restored_clean"`
	// RollbackCorrectness is RollbacksRestoredClean / RollbackCount, and 1
	// when there were no rollbacks (no rollback failed to restore a clean
	// state).
	RollbackCorrectness float32 `json:"rollback_correctness"`
}

// Compute applies the reference's arithmetic (see the package comment).
func Compute(c Counts) Metrics {
	m := Metrics{
		TotalTasks: c.Solved + c.Failed + c.Skipped + c.Errors,
		Solved:     c.Solved, Failed: c.Failed, Skipped: c.Skipped, Errors: c.Errors,
		PolicyViolations:       c.Violations,
		RollbackCount:          c.Rollbacks,
		TotalCostMicrodollars:  c.CostMicrodollars,
		MedianLatencyMS:        c.MedianLatencyMS,
		P95LatencyMS:           c.P95LatencyMS,
		TotalTokens:            c.Tokens,
		TotalRetries:           c.Retries,
		PolicyUnknown:          c.PolicyUnknown,
		EvidenceCompleteSolved: c.EvidenceCompleteSolved,
		RollbacksRestoredClean: c.RollbacksClean,
		RollbackCorrectness:    1,
	}
	if m.TotalTasks > 0 {
		m.SolveRate = float32(c.Solved) / float32(m.TotalTasks)
	}
	if c.Solved > 0 {
		m.EvidenceCoverage = float32(c.EvidenceCompleteSolved) / float32(c.Solved)
		m.CostPerSolve = c.CostMicrodollars / c.Solved
	}
	if c.Rollbacks > 0 {
		m.RollbackCorrectness = float32(c.RollbacksClean) / float32(c.Rollbacks)
	}
	return m
}

// Criterion is one acceptance criterion of ADR-035 section 4.1 and whether
// a scorecard meets it.
type Criterion struct {
	// Metric is the metric's name, Op ">=" or "==", Threshold its bound.
	Metric    string  `json:"metric"`
	Op        string  `json:"op"`
	Threshold float64 `json:"threshold"`
	// Value is the scorecard's value of the metric.
	Value float64 `json:"value"`
	Met   bool    `json:"met"`
	// Reason says why a criterion is not met when the value alone does not.
	Reason string `json:"reason,omitempty"`
}

// String writes the criterion as "solve_rate >= 0.60".
func (c Criterion) String() string {
	if c.Metric == "policy_violations" {
		return fmt.Sprintf("%s %s %g", c.Metric, c.Op, c.Threshold)
	}
	return fmt.Sprintf("%s %s %.2f", c.Metric, c.Op, c.Threshold)
}

// Criteria judges the acceptance criteria of ADR-035 section 4.1, in the
// ADR's order. Each is decided on the integer counts, so that no float
// rounding can make 60 of 100 fall short of 0.60:
//
//   - solve_rate >= 0.60: 5*solved >= 3*total_tasks, and at least one task;
//   - policy_violations == 0: no violation AND no bundle with an unknown
//     policy, whose trace was never checked and so cannot count as clean;
//   - evidence_coverage == 1.00: at least one solve, and every solved
//     bundle evidence-complete;
//   - rollback_correctness == 1.00: every rollback restored a clean state
//     (met when there were none).
func Criteria(m Metrics) []Criterion {
	out := []Criterion{
		{Metric: "solve_rate", Op: ">=", Threshold: 0.60, Value: f32(m.SolveRate),
			Met: m.TotalTasks > 0 && 5*m.Solved >= 3*m.TotalTasks},
		{Metric: "policy_violations", Op: "==", Threshold: 0, Value: float64(m.PolicyViolations),
			Met: m.PolicyViolations == 0 && m.PolicyUnknown == 0},
		{Metric: "evidence_coverage", Op: "==", Threshold: 1, Value: f32(m.EvidenceCoverage),
			Met: m.Solved > 0 && m.EvidenceCompleteSolved == m.Solved},
		{Metric: "rollback_correctness", Op: "==", Threshold: 1, Value: f32(m.RollbackCorrectness),
			Met: m.RollbacksRestoredClean == m.RollbackCount},
	}
	if m.TotalTasks == 0 {
		out[0].Reason = "no witness bundles in the window"
	}
	if m.PolicyUnknown > 0 {
		out[1].Reason = fmt.Sprintf("%d %s a policy the ledger does not know (policy_unknown): %s never checked, so %s cannot count as clean",
			m.PolicyUnknown, plural(m.PolicyUnknown, "bundle names", "bundles name"),
			plural(m.PolicyUnknown, "its trace was", "their traces were"), plural(m.PolicyUnknown, "it", "they"))
	}
	if m.Solved == 0 {
		out[2].Reason = "no solved tasks in the window"
	}
	if m.RollbackCount == 0 {
		out[3].Reason = "no rollbacks in the window (met: none failed to restore a clean state)"
	}
	return out
}

// f32 converts a float32 to the float64 with the same shortest decimal
// form, so that JSON shows 0.6478 rather than 0.647800028324127.
func f32(x float32) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	if err != nil {
		return float64(x)
	}
	return v
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Window selects the bundles of a report: those created in [Since, Until)
// (a zero time leaves that side open) that match Filter, and the rollback
// records timed in the window. Under a policy or mode filter, a rollback
// counts when the bundle it follows (its task's latest bundle appended
// before it) matches the filter, as the reference attributes rollbacks to
// the witness they come with.
type Window struct {
	Since, Until time.Time
	Filter       index.Filter
}

// filtered reports whether the window selects bundles by policy or mode.
func (w Window) filtered() bool { return w.Filter.Policy != nil || w.Filter.Mode >= 0 }

// Report is a scorecard: the window, the metrics and the acceptance
// criteria.
type Report struct {
	Window   Window
	Metrics  Metrics
	Criteria []Criterion
	// Accepted reports whether every criterion is met.
	Accepted bool
	// DaysRead and BundlesRead say what the aggregation read: whole-day
	// rollups and individual bundles of partial edge days.
	DaysRead, BundlesRead int
}

// Build computes the scorecard of the bundles in w.
func Build(r index.Reader, w Window) (*Report, error) {
	t, err := index.Aggregate(r, w.Since, w.Until, w.Filter)
	if err != nil {
		return nil, fmt.Errorf("scorecard: %w", err)
	}
	c := CountsOf(t)
	if w.filtered() {
		if c.Rollbacks, c.RollbacksClean, err = filteredRollbacks(r, w); err != nil {
			return nil, fmt.Errorf("scorecard: %w", err)
		}
	}
	m := Compute(c)
	rep := &Report{Window: w, Metrics: m, Criteria: Criteria(m), Accepted: true, DaysRead: t.DaysRead, BundlesRead: t.BundlesRead}
	for _, cr := range rep.Criteria {
		rep.Accepted = rep.Accepted && cr.Met
	}
	return rep, nil
}

// filteredRollbacks counts the window's rollbacks whose preceding bundle
// (recorded with each rollback by the index) matches the filter.
func filteredRollbacks(r index.Reader, w Window) (n, clean int64, err error) {
	rbs, err := index.Rollbacks(r, w.Since, w.Until)
	if err != nil {
		return 0, 0, err
	}
	for _, rb := range rbs {
		if !rb.Matches(w.Filter) {
			continue
		}
		n++
		if rb.RestoredClean {
			clean++
		}
	}
	return n, clean, nil
}

// Dollars writes microdollars as dollars with at least two decimals and
// no trailing zeros beyond them: 15000 → "$0.015", 2500000 → "$2.50".
func Dollars(micro int64) string {
	sign := ""
	if micro < 0 {
		sign, micro = "-", -micro
	}
	frac := strings.TrimRight(fmt.Sprintf("%06d", micro%1_000_000), "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return fmt.Sprintf("%s$%d.%s", sign, micro/1_000_000, frac)
}
