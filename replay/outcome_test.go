package replay

import (
	"testing"

	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/replay/testlog"
)

// TestCheckOutcome checks CheckOutcome against the table in its doc
// comment, every claimed outcome against every kind of log.
func TestCheckOutcome(t *testing.T) {
	summary := func(p, f, s, e int64) testlog.Summary {
		c := testlog.Counts{Passed: p, Failed: f, Skipped: s, Errors: e}
		return testlog.Summary{Parts: []testlog.Part{{Runner: testlog.Pytest, Counts: c, Unit: testlog.UnitTests, Lines: 1, FirstLine: 1, LastLine: 1}}, Counts: c}
	}
	logs := []struct {
		name string
		s    testlog.Summary
	}{
		{"no summary", testlog.Summary{}},
		{"nothing ran", summary(0, 0, 0, 0)},
		{"only skips", summary(0, 0, 4, 0)},
		{"clean pass", summary(12, 0, 1, 0)},
		{"failures", summary(8, 2, 0, 0)},
		{"failures only", summary(0, 3, 0, 0)},
		{"errors", summary(0, 0, 0, 1)},
		{"failures and errors", summary(5, 1, 0, 2)},
	}
	const (
		M = Matches
		C = Contradicts
		I = Inconclusive
	)
	want := map[rvww.Outcome][]Verdict{
		//                      none nothing skips clean fail failonly err  both
		rvww.OutcomeSolved:  {I, C, C, M, C, C, C, C},
		rvww.OutcomeFailed:  {I, I, I, C, M, M, M, M},
		rvww.OutcomeErrored: {I, I, I, C, I, I, M, M},
		rvww.OutcomeSkipped: {I, M, M, C, I, I, I, I},
		rvww.Outcome(4):     {I, I, I, I, I, I, I, I},
		rvww.Outcome(255):   {I, I, I, I, I, I, I, I},
	}
	for _, claimed := range []rvww.Outcome{rvww.OutcomeSolved, rvww.OutcomeFailed, rvww.OutcomeErrored, rvww.OutcomeSkipped, 4, 255} {
		for i, l := range logs {
			got := CheckOutcome(claimed, l.s)
			if got.Verdict != want[claimed][i] {
				t.Errorf("%s with %s: %s (%s), want %s", claimed, l.name, got.Verdict, got.Reason, want[claimed][i])
			}
			if got.Claimed != claimed.String() || got.Reason == "" {
				t.Errorf("%s with %s: claimed %q, reason %q", claimed, l.name, got.Claimed, got.Reason)
			}
		}
	}
}
