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
	Window Window
	// Thresholds are the criteria's thresholds the report was judged
	// against.
	Thresholds Criteria
	Metrics    Metrics
	Criteria   []Criterion
	// Status is the verdict: Accepted, NotAccepted, or Empty when the
	// window holds no witness bundles (nothing was judged).
	Status Status
	// Accepted reports whether every criterion is met (Status Accepted).
	Accepted bool
	// DaysRead and BundlesRead say what the aggregation read: whole-day
	// rollups and individual bundles of partial edge days.
	DaysRead, BundlesRead int
}

// Build computes the scorecard of the bundles in w and judges it against
// the thresholds c (DefaultCriteria for ADR-035's).
func Build(r index.Reader, w Window, c Criteria) (*Report, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("scorecard: %w", err)
	}
	t, err := index.Aggregate(r, w.Since, w.Until, w.Filter)
	if err != nil {
		return nil, fmt.Errorf("scorecard: %w", err)
	}
	counts := CountsOf(t)
	if w.filtered() {
		if counts.Rollbacks, counts.RollbacksClean, err = filteredRollbacks(r, w); err != nil {
			return nil, fmt.Errorf("scorecard: %w", err)
		}
	}
	m := Compute(counts)
	rep := &Report{Window: w, Thresholds: c, Metrics: m, Criteria: c.Judge(m), DaysRead: t.DaysRead, BundlesRead: t.BundlesRead}
	rep.Status, rep.Accepted = Verdict(m, rep.Criteria), true
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
