package replay

import (
	"fmt"

	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/replay/testlog"
)

// Verdict is what a test log says of a claimed outcome.
type Verdict string

// The three verdicts.
const (
	// Matches: the log supports the claim.
	Matches Verdict = "matches"
	// Contradicts: the log is incompatible with the claim.
	Contradicts Verdict = "contradicts"
	// Inconclusive: the log neither supports nor rules out the claim, or
	// has no summary a runner printed.
	Inconclusive Verdict = "inconclusive"
)

// OutcomeCheck is the judgement of one claimed outcome.
type OutcomeCheck struct {
	// Claimed is the outcome's name: solved, failed, skipped, errored or
	// unknown(N).
	Claimed string `json:"claimed"`
	// Verdict is matches, contradicts or inconclusive.
	Verdict Verdict `json:"verdict"`
	// Reason says why, for people.
	Reason string `json:"reason"`
}

// CheckOutcome judges a claimed outcome against a test log's counts. It
// sorts the log into one of five cases and applies this table (ADR-035
// section 2 names the outcomes):
//
//	claimed      no summary    nothing ran   clean pass    failures      errors
//	solved       inconclusive  contradicts   matches       contradicts   contradicts
//	failed       inconclusive  inconclusive  contradicts   matches       matches
//	errored      inconclusive  inconclusive  contradicts   inconclusive  matches
//	skipped      inconclusive  matches       contradicts   inconclusive  inconclusive
//	unknown(N)   inconclusive  inconclusive  inconclusive  inconclusive  inconclusive
//
// "Nothing ran" is a recognised summary with no test passed, failed or
// errored (skipped tests do not run); a "clean pass" has at least one
// pass and no failure or error; "errors" is any error, with or without
// failures; "failures" has failures and no error.
//
// So Solved needs at least one pass and no failure or error. A clean pass
// contradicts every other claim: the one run the bundle records went
// well, so "failed" (even in ADR-035's "diff rejected" sense), "errored"
// and "skipped" disagree with it. Failed also covers a rejected diff, so
// a log where nothing ran cannot decide it; a test failure does not show
// an infrastructure failure, nor rule one out, so it cannot decide
// errored; a failing run can be the unmet precondition of a skipped task.
func CheckOutcome(claimed rvww.Outcome, s testlog.Summary) OutcomeCheck {
	oc := OutcomeCheck{Claimed: claimed.String(), Verdict: Inconclusive}
	c := s.Counts
	clean := c.Passed > 0 && c.Failed == 0 && c.Errors == 0
	ran := c.Passed > 0 || c.Failed > 0 || c.Errors > 0
	report := describe(c)
	switch {
	case !claimed.Known():
		oc.Reason = fmt.Sprintf("outcome byte %d has no defined meaning (ADR-035 section 2)", uint8(claimed))
		return oc
	case !s.Found():
		oc.Reason = "no test runner's summary was recognised in the test log"
		return oc
	}
	set := func(v Verdict, format string, args ...any) {
		oc.Verdict = v
		oc.Reason = fmt.Sprintf(format, args...)
	}
	switch claimed {
	case rvww.OutcomeSolved:
		switch {
		case clean:
			set(Matches, "the log reports %s", report)
		case ran:
			set(Contradicts, "solved needs no failure or error, and the log reports %s", report)
		default:
			set(Contradicts, "solved needs at least one passing test, and the log reports %s", report)
		}
	case rvww.OutcomeFailed:
		switch {
		case clean:
			set(Contradicts, "the log reports %s: a clean pass", report)
		case ran:
			set(Matches, "the log reports %s", report)
		default:
			set(Inconclusive, "the log reports %s: no test ran, and failed may mean a rejected diff", report)
		}
	case rvww.OutcomeErrored:
		switch {
		case clean:
			set(Contradicts, "the log reports %s: a clean pass", report)
		case c.Errors > 0:
			set(Matches, "the log reports %s", report)
		case ran:
			set(Inconclusive, "the log reports %s: test failures neither show nor rule out an infrastructure or tool failure", report)
		default:
			set(Inconclusive, "the log reports %s: no test ran", report)
		}
	case rvww.OutcomeSkipped:
		switch {
		case clean:
			set(Contradicts, "the log reports %s: a clean pass, so the task was attempted", report)
		case ran:
			set(Inconclusive, "the log reports %s: a failing run may be the unmet precondition", report)
		default:
			set(Matches, "the log reports %s: no test ran", report)
		}
	}
	return oc
}

// describe renders the counts that matter, "3 passed, 1 failed".
func describe(c testlog.Counts) string {
	parts := []struct {
		n    int64
		word string
	}{{c.Passed, "passed"}, {c.Failed, "failed"}, {c.Errors, "errors"}, {c.Skipped, "skipped"}}
	out := ""
	for _, p := range parts {
		if p.n == 0 && (p.word == "errors" || p.word == "skipped") {
			continue
		}
		if out != "" {
			out += ", "
		}
		out += fmt.Sprintf("%d %s", p.n, p.word)
	}
	return out
}
