// Package scorecard turns the index's witness-bundle rollups into ADR-035
// reports: the scorecard of section 4 with the acceptance criteria of
// section 4.1, and the cost-to-outcome trend of section 6 with its chart.
//
// Start with Build (a scorecard over a window of bundle creation times,
// optionally one policy or mode, judged against Criteria) and Compute,
// which holds the arithmetic: it is the reference implementation's
// (rvf-runtime ScorecardBuilder, see ../shared/specs/INTEROP.md), so that
// the same bundles give the same numbers here and there:
//
//   - total_tasks counts every bundle: solved, failed, skipped and errors;
//     unknown outcome bytes count as errors;
//   - solve_rate = solved / total_tasks and evidence_coverage =
//     evidence-complete solved / solved, both in float32 as the reference
//     computes them, 0 when the divisor is 0;
//   - cost_per_solve = total cost of all bundles / solved, integer
//     division, 0 when nothing was solved (the reference then truncates to
//     u32; this package keeps the exact quotient);
//   - median_latency_ms and p95_latency_ms are the values at index
//     floor(p*n/100), clamped to n-1, of the sorted latencies.
//
// Beyond ADR-035 a report carries policy_unknown (bundles naming a policy
// the ledger did not know when they were appended, whose traces were never
// checked) and rollback_correctness (rollbacks that restored a clean state
// over all rollbacks, 1 when there were none). Rollback records count by
// their own time; under a policy or mode filter, those that follow a
// bundle of the filter (Build reads the events, through Events, to find
// it).
//
// Criteria holds the thresholds of the acceptance criteria (DefaultCriteria
// returns ADR-035's: solve_rate >= 0.60, policy_violations == 0,
// evidence_coverage == 1.00, rollback_correctness == 1.00); a CI gate may
// override any of them, and Overridden names those it did. Ratios are kept
// in millionths (Ratio) and Judge decides each criterion exactly, in
// integers. A window without bundles is judged by nobody: its Status is
// Empty, distinct from NotAccepted.
//
// Trend cuts a window into UTC days, ISO weeks or calendar months
// (Granularity) and reports tasks, solved, solve rate, cost and tokens per
// solve, retries and regressions per period, optionally of one policy or
// mode (a filtered trend's regressions read the bundles of the tasks that
// regressed at all, see FilteredRegressions); Plot draws cost per solve and
// solve rate over the periods with gonum.org/v1/plot.
//
// The package reads projections through index.Reader and never writes;
// whole days come from per-day rollups, so the cost of a report grows with
// the number of days it covers, not with the number of bundles.
package scorecard
