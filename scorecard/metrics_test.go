package scorecard

import (
	"encoding/json"
	"errors"
	"slices"
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
		{"nothing", Counts{}, verdicts{false, false, false, false}, NotJudged},
		{"rollbacks but no bundles", Counts{Rollbacks: 1, RollbacksClean: 1}, verdicts{false, false, false, false}, NotJudged},
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
			cs := DefaultCriteria().Judge(Compute(tc.in))
			names := []string{"solve_rate", "policy_violations", "evidence_coverage", "rollback_correctness"}
			var reasons []string
			for i, c := range cs {
				if c.Metric != names[i] {
					t.Fatalf("criterion %d is %s, want %s", i, c.Metric, names[i])
				}
				if c.Met != tc.want[i] {
					t.Errorf("%s met = %v, want %v (%+v)", c, c.Met, tc.want[i], c)
				}
				if c.Overridden {
					t.Errorf("%s: overridden under the default criteria", c)
				}
				reasons = append(reasons, c.Reason)
			}
			if tc.reason != "" && !strings.Contains(strings.Join(reasons, "|"), tc.reason) {
				t.Errorf("reasons %q lack %q", reasons, tc.reason)
			}
		})
	}
}

// TestJudgeThresholds judges counts against overridden thresholds, at and
// around each bound, exactly (no float rounding decides a criterion).
func TestJudgeThresholds(t *testing.T) {
	ratio := func(s string) Ratio {
		r, err := ParseRatio(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	with := func(f func(*Criteria)) Criteria {
		c := DefaultCriteria()
		f(&c)
		return c
	}
	clean := Counts{Solved: 10, EvidenceCompleteSolved: 10}
	for _, tc := range []struct {
		name     string
		criteria Criteria
		in       Counts
		metric   string
		met      bool
		str      string // the criterion as printed
	}{
		{"solve rate 0.5, 1 of 2", with(func(c *Criteria) { c.MinSolveRate = ratio("0.5") }), Counts{Solved: 1, Failed: 1, EvidenceCompleteSolved: 1}, "solve_rate", true, "solve_rate >= 0.50"},
		{"solve rate 0.5, 1 of 3", with(func(c *Criteria) { c.MinSolveRate = ratio("0.5") }), Counts{Solved: 1, Failed: 2, EvidenceCompleteSolved: 1}, "solve_rate", false, "solve_rate >= 0.50"},
		{"solve rate 0.1, 1 of 10 (0.1 is not a float64 below 1/10)", with(func(c *Criteria) { c.MinSolveRate = ratio("0.1") }), Counts{Solved: 1, Failed: 9, EvidenceCompleteSolved: 1}, "solve_rate", true, "solve_rate >= 0.10"},
		{"solve rate 0.333333, 1 of 3", with(func(c *Criteria) { c.MinSolveRate = ratio("0.333333") }), Counts{Solved: 1, Failed: 2, EvidenceCompleteSolved: 1}, "solve_rate", true, "solve_rate >= 0.333333"},
		{"solve rate 0.333334, 1 of 3", with(func(c *Criteria) { c.MinSolveRate = ratio("0.333334") }), Counts{Solved: 1, Failed: 2, EvidenceCompleteSolved: 1}, "solve_rate", false, "solve_rate >= 0.333334"},
		{"solve rate 0, nothing solved", with(func(c *Criteria) { c.MinSolveRate = 0 }), Counts{Failed: 3}, "solve_rate", true, "solve_rate >= 0.00"},
		{"solve rate 1, all solved", with(func(c *Criteria) { c.MinSolveRate = One }), clean, "solve_rate", true, "solve_rate >= 1.00"},
		{"solve rate 1, 9 of 10", with(func(c *Criteria) { c.MinSolveRate = One }), Counts{Solved: 9, Failed: 1, EvidenceCompleteSolved: 9}, "solve_rate", false, "solve_rate >= 1.00"},
		{"solve rate on huge counts", with(func(c *Criteria) { c.MinSolveRate = ratio("0.999999") }), Counts{Solved: 999_999_000_000, Failed: 1_000_000, EvidenceCompleteSolved: 1}, "solve_rate", true, "solve_rate >= 0.999999"},
		{"solve rate on huge counts, one short", with(func(c *Criteria) { c.MinSolveRate = ratio("0.999999") }), Counts{Solved: 999_998_999_999, Failed: 1_000_001, EvidenceCompleteSolved: 1}, "solve_rate", false, "solve_rate >= 0.999999"},
		{"3 violations allowed, 3", with(func(c *Criteria) { c.MaxPolicyViolations = 3 }), Counts{Solved: 1, EvidenceCompleteSolved: 1, Violations: 3}, "policy_violations", true, "policy_violations <= 3"},
		{"3 violations allowed, 4", with(func(c *Criteria) { c.MaxPolicyViolations = 3 }), Counts{Solved: 1, EvidenceCompleteSolved: 1, Violations: 4}, "policy_violations", false, "policy_violations <= 3"},
		{"violations allowed, policy unknown still fails", with(func(c *Criteria) { c.MaxPolicyViolations = 100 }), Counts{Solved: 1, EvidenceCompleteSolved: 1, PolicyUnknown: 1}, "policy_violations", false, "policy_violations <= 100"},
		{"evidence 0.9, 9 of 10", with(func(c *Criteria) { c.MinEvidenceCoverage = ratio("0.9") }), Counts{Solved: 10, EvidenceCompleteSolved: 9}, "evidence_coverage", true, "evidence_coverage >= 0.90"},
		{"evidence 0.9, 8 of 10", with(func(c *Criteria) { c.MinEvidenceCoverage = ratio("0.9") }), Counts{Solved: 10, EvidenceCompleteSolved: 8}, "evidence_coverage", false, "evidence_coverage >= 0.90"},
		{"evidence 0.5, no solves", with(func(c *Criteria) { c.MinEvidenceCoverage = ratio("0.5") }), Counts{Failed: 1}, "evidence_coverage", false, "evidence_coverage >= 0.50"},
		{"evidence 0, no solves", with(func(c *Criteria) { c.MinEvidenceCoverage = 0 }), Counts{Failed: 1}, "evidence_coverage", true, "evidence_coverage >= 0.00"},
		{"rollbacks 0.5, 1 of 2", with(func(c *Criteria) { c.MinRollbackCorrectness = ratio("0.5") }), Counts{Solved: 1, EvidenceCompleteSolved: 1, Rollbacks: 2, RollbacksClean: 1}, "rollback_correctness", true, "rollback_correctness >= 0.50"},
		{"rollbacks 0.75, 2 of 3", with(func(c *Criteria) { c.MinRollbackCorrectness = ratio("0.75") }), Counts{Solved: 1, EvidenceCompleteSolved: 1, Rollbacks: 3, RollbacksClean: 2}, "rollback_correctness", false, "rollback_correctness >= 0.75"},
		{"rollbacks 0.75, none", with(func(c *Criteria) { c.MinRollbackCorrectness = ratio("0.75") }), clean, "rollback_correctness", true, "rollback_correctness >= 0.75"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.criteria.Validate(); err != nil {
				t.Fatal(err)
			}
			var got *Criterion
			cs := tc.criteria.Judge(Compute(tc.in))
			for i := range cs {
				if cs[i].Metric == tc.metric {
					got = &cs[i]
				}
				overridden := slices.Contains(tc.criteria.Overridden(), cs[i].Metric)
				if cs[i].Overridden != overridden {
					t.Errorf("%s: overridden %v, want %v", cs[i], cs[i].Overridden, overridden)
				}
			}
			if got == nil {
				t.Fatalf("no criterion %s", tc.metric)
			}
			if got.Met != tc.met || got.String() != tc.str {
				t.Errorf("%s met %v, want %s met %v", got, got.Met, tc.str, tc.met)
			}
		})
	}
}

func TestCriteriaOverridden(t *testing.T) {
	d := DefaultCriteria()
	if o := d.Overridden(); o == nil || len(o) != 0 {
		t.Errorf("defaults: overridden %#v, want an empty list", o)
	}
	c := d
	c.MinSolveRate, c.MinRollbackCorrectness = 700_000, 900_000
	if o := c.Overridden(); !slices.Equal(o, []string{"solve_rate", "rollback_correctness"}) {
		t.Errorf("overridden %v", o)
	}
	cs := c.Judge(Compute(Counts{Solved: 1, EvidenceCompleteSolved: 1}))
	if cs[0].DefaultString() != "solve_rate >= 0.60" || cs[3].DefaultString() != "rollback_correctness == 1.00" || cs[3].String() != "rollback_correctness >= 0.90" {
		t.Errorf("strings: %q %q %q", cs[0].DefaultString(), cs[3].DefaultString(), cs[3].String())
	}
	if cs[0].Threshold != 0.7 || cs[0].Default != 0.6 || !cs[0].Overridden || cs[1].Overridden {
		t.Errorf("criteria: %+v", cs)
	}
	for _, bad := range []Criteria{{MinSolveRate: One + 1}, {MinEvidenceCoverage: -1}, {MaxPolicyViolations: -1}} {
		if err := bad.Validate(); !errors.Is(err, ErrThreshold) {
			t.Errorf("Validate(%+v) = %v", bad, err)
		}
	}
}

func TestParseRatio(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Ratio
		ok   bool
	}{
		{"0.6", 600_000, true}, {"0.60", 600_000, true}, {"1", One, true}, {"1.0", One, true}, {"1.000000", One, true},
		{"0", 0, true}, {"0.000001", 1, true}, {"0.955", 955_000, true},
		{"1.000001", 0, false}, {"2", 0, false}, {"0.1234567", 0, false}, {"-0.5", 0, false}, {".5", 0, false},
		{"5.", 0, false}, {"", 0, false}, {"0,5", 0, false}, {"60%", 0, false}, {"10", 0, false}, {"0x1", 0, false}, {"+0.5", 0, false},
	} {
		got, err := ParseRatio(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseRatio(%q) = %v, %v; want %v ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrThreshold) {
			t.Errorf("ParseRatio(%q): %v does not wrap ErrThreshold", tc.in, err)
		}
	}
	for r, want := range map[Ratio]string{600_000: "0.60", One: "1.00", 0: "0.00", 955_000: "0.955", 1: "0.000001"} {
		if r.String() != want {
			t.Errorf("Ratio(%d) = %q, want %q", r, r.String(), want)
		}
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		in   Counts
		want Status
	}{
		{Counts{}, Empty},
		{Counts{Rollbacks: 3}, Empty},
		{Counts{Solved: 1, EvidenceCompleteSolved: 1}, Accepted},
		{Counts{Failed: 1}, NotAccepted},
	} {
		m := Compute(tc.in)
		if got := Verdict(m, DefaultCriteria().Judge(m)); got != tc.want {
			t.Errorf("Verdict(%+v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestCriterionString(t *testing.T) {
	want := []string{"solve_rate >= 0.60", "policy_violations == 0", "evidence_coverage == 1.00", "rollback_correctness == 1.00"}
	for i, c := range DefaultCriteria().Judge(Metrics{}) {
		if c.String() != want[i] || c.DefaultString() != want[i] {
			t.Errorf("criterion %d = %q (default %q), want %q", i, c, c.DefaultString(), want[i])
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
	c := DefaultCriteria().Judge(Compute(Counts{Solved: 2, Failed: 1}))
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
