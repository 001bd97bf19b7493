package scorecard

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCompute(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Counts
		want Metrics
	}{
		{
			name: "empty",
			in:   Counts{},
			want: Metrics{RollbackCorrectness: 1},
		},
		{
			// The reference's scorecard_basic test: 2 solved (one with full
			// evidence), 1 failed, 1 violation, 1 rollback.
			name: "reference basic",
			in:   Counts{Solved: 2, Failed: 1, Violations: 1, EvidenceCompleteSolved: 1, Rollbacks: 1, RollbacksClean: 1},
			want: Metrics{TotalTasks: 3, Solved: 2, Failed: 1, PolicyViolations: 1, RollbackCount: 1,
				SolveRate: float32(2) / float32(3), EvidenceCoverage: 0.5, EvidenceCompleteSolved: 1,
				RollbacksRestoredClean: 1, RollbackCorrectness: 1},
		},
		{
			// Skipped and errors count in total_tasks; cost_per_solve divides
			// the cost of every bundle by the solves, rounding down.
			name: "total includes skipped and errors",
			in:   Counts{Solved: 3, Failed: 2, Skipped: 4, Errors: 1, CostMicrodollars: 1000, Tokens: 77, Retries: 5, EvidenceCompleteSolved: 3},
			want: Metrics{TotalTasks: 10, Solved: 3, Failed: 2, Skipped: 4, Errors: 1, TotalCostMicrodollars: 1000,
				TotalTokens: 77, TotalRetries: 5, CostPerSolve: 333, SolveRate: 0.3, EvidenceCoverage: 1,
				EvidenceCompleteSolved: 3, RollbackCorrectness: 1},
		},
		{
			name: "cost without solves",
			in:   Counts{Failed: 2, CostMicrodollars: 5000, MedianLatencyMS: 10, P95LatencyMS: 90},
			want: Metrics{TotalTasks: 2, Failed: 2, TotalCostMicrodollars: 5000, MedianLatencyMS: 10, P95LatencyMS: 90, RollbackCorrectness: 1},
		},
		{
			name: "rollbacks partly clean, policy unknown",
			in:   Counts{Solved: 1, Rollbacks: 3, RollbacksClean: 2, PolicyUnknown: 4},
			want: Metrics{TotalTasks: 1, Solved: 1, SolveRate: 1, RollbackCount: 3, RollbacksRestoredClean: 2,
				RollbackCorrectness: float32(2) / float32(3), PolicyUnknown: 4},
		},
		{
			// Beyond u32: the quotient is kept, not truncated as the reference's
			// `as u32` would.
			name: "large cost per solve",
			in:   Counts{Solved: 1, Failed: 9999, CostMicrodollars: 10_000_000_000},
			want: Metrics{TotalTasks: 10000, Solved: 1, Failed: 9999, TotalCostMicrodollars: 10_000_000_000,
				CostPerSolve: 10_000_000_000, SolveRate: 0.0001, RollbackCorrectness: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Compute(tc.in); got != tc.want {
				t.Errorf("Compute(%+v)\n got %+v\nwant %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestCriteria(t *testing.T) {
	type verdicts [4]bool // solve_rate, policy_violations, evidence_coverage, rollback_correctness
	for _, tc := range []struct {
		name   string
		in     Counts
		want   verdicts
		reason string // a substring of some criterion's reason
	}{
		{"nothing", Counts{}, verdicts{false, true, false, true}, "no witness bundles"},
		{"exactly 60 of 100", Counts{Solved: 60, Failed: 40, EvidenceCompleteSolved: 60}, verdicts{true, true, true, true}, ""},
		{"59 of 100", Counts{Solved: 59, Failed: 41, EvidenceCompleteSolved: 59}, verdicts{false, true, true, true}, ""},
		{"3 of 5 with skips", Counts{Solved: 3, Skipped: 1, Errors: 1, EvidenceCompleteSolved: 3}, verdicts{true, true, true, true}, ""},
		{"one violation", Counts{Solved: 1, Violations: 1, EvidenceCompleteSolved: 1}, verdicts{true, false, true, true}, ""},
		{"policy unknown is not clean", Counts{Solved: 1, PolicyUnknown: 1, EvidenceCompleteSolved: 1}, verdicts{true, false, true, true}, "never checked"},
		{"incomplete evidence", Counts{Solved: 10, EvidenceCompleteSolved: 9}, verdicts{true, true, false, true}, ""},
		{"no solves", Counts{Failed: 1}, verdicts{false, true, false, true}, "no solved tasks"},
		{"unclean rollback", Counts{Solved: 1, EvidenceCompleteSolved: 1, Rollbacks: 2, RollbacksClean: 1}, verdicts{true, true, true, false}, ""},
		{"clean rollbacks", Counts{Solved: 1, EvidenceCompleteSolved: 1, Rollbacks: 2, RollbacksClean: 2}, verdicts{true, true, true, true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := Criteria(Compute(tc.in))
			names := []string{"solve_rate", "policy_violations", "evidence_coverage", "rollback_correctness"}
			var reasons []string
			for i, c := range cs {
				if c.Metric != names[i] {
					t.Fatalf("criterion %d is %s, want %s", i, c.Metric, names[i])
				}
				if c.Met != tc.want[i] {
					t.Errorf("%s met = %v, want %v (%+v)", c, c.Met, tc.want[i], c)
				}
				reasons = append(reasons, c.Reason)
			}
			if tc.reason != "" && !strings.Contains(strings.Join(reasons, "|"), tc.reason) {
				t.Errorf("reasons %q lack %q", reasons, tc.reason)
			}
		})
	}
}

func TestCriterionString(t *testing.T) {
	want := []string{"solve_rate >= 0.60", "policy_violations == 0", "evidence_coverage == 1.00", "rollback_correctness == 1.00"}
	for i, c := range Criteria(Metrics{}) {
		if c.String() != want[i] {
			t.Errorf("criterion %d = %q, want %q", i, c, want[i])
		}
	}
}

// The JSON keys are ADR-035's metric names, and float32 ratios print in
// their shortest form.
func TestMetricsJSON(t *testing.T) {
	b, err := json.Marshal(Compute(Counts{Solved: 2, Failed: 1, EvidenceCompleteSolved: 1}))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"total_tasks", "solved", "failed", "skipped", "errors", "policy_violations", "rollback_count",
		"total_cost_microdollars", "median_latency_ms", "p95_latency_ms", "total_tokens", "total_retries", "evidence_coverage",
		"cost_per_solve", "solve_rate", "policy_unknown", "rollback_correctness"} {
		if !strings.Contains(string(b), `"`+key+`":`) {
			t.Errorf("JSON lacks %q: %s", key, b)
		}
	}
	if !strings.Contains(string(b), `"solve_rate":0.6666667`) {
		t.Errorf("solve_rate not in float32 shortest form: %s", b)
	}
	c := Criteria(Compute(Counts{Solved: 2, Failed: 1}))
	if c[0].Value != 0.6666667 {
		t.Errorf("criterion value %v, want 0.6666667", c[0].Value)
	}
}

func TestDollars(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "$0.00"}, {15_000, "$0.015"}, {10_000, "$0.01"}, {2_500_000, "$2.50"}, {1, "$0.000001"},
		{1_234_567, "$1.234567"}, {-15_000, "-$0.015"}, {4_294_967_295, "$4294.967295"},
	} {
		if got := Dollars(tc.in); got != tc.want {
			t.Errorf("Dollars(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
