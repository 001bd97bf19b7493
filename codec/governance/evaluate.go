package governance

import (
	"fmt"

	"github.com/proofledger/ledger/codec"
)

// Violation codes: what the policy forbids and the trace did anyway.
const (
	// CodeDeniedTool: a call the policy denies (once per such call).
	CodeDeniedTool = "denied_tool"
	// CodeCostBudgetExceeded: the cumulative cost went over the budget
	// (once, at the first call that broke it).
	CodeCostBudgetExceeded = "cost_budget_exceeded"
	// CodeCallBudgetExceeded: the number of calls went over the budget
	// (once, at the first call past it).
	CodeCallBudgetExceeded = "call_budget_exceeded"
)

// Finding codes: the bundle's record of governance disagrees with the
// policy it names.
const (
	// CodePolicyCheckMismatch: a call's recorded policy_check differs from
	// the policy's decision.
	CodePolicyCheckMismatch = "policy_check_mismatch"
	// CodeGovernanceModeMismatch: the header's governance_mode differs from
	// the policy's mode.
	CodeGovernanceModeMismatch = "governance_mode_mismatch"
)

// Call is what Evaluate needs of one recorded tool call.
type Call struct {
	// Index is the call's position in the trace, used in reports.
	Index int
	// Action is the tool name.
	Action string
	// Recorded is the policy_check byte the producer recorded.
	Recorded uint8
	// CostMicrodollars is the call's cost.
	CostMicrodollars uint32
}

// Violation is one policy breach: a denied call or a blown budget.
type Violation struct {
	// Code is CodeDeniedTool, CodeCostBudgetExceeded or CodeCallBudgetExceeded.
	Code string `json:"code"`
	// CallIndex is the Index of the call that caused it.
	CallIndex int `json:"call_index"`
	// Tool is that call's action.
	Tool string `json:"tool"`
	// Reason says what happened, for people.
	Reason string `json:"reason"`
}

// Result is the outcome of Evaluate. Violations are breaches of the policy
// (what the scorecard counts as policy violations); Findings are places
// where the bundle's own record of governance is inconsistent with the
// policy, which make the bundle invalid.
type Result struct {
	// Violations in trace order; within one call: denied, cost, calls.
	Violations []Violation
	// Findings: a governance_mode mismatch first, then policy_check
	// mismatches in trace order.
	Findings []codec.Finding
}

// OK reports whether there are neither violations nor findings.
func (r Result) OK() bool { return len(r.Violations) == 0 && len(r.Findings) == 0 }

// Evaluate replays a trace against policy p, as the reference builder does
// at record time. mode is the bundle header's governance_mode byte.
//
// For each call, in order: a call the policy denies is a "denied_tool"
// violation; a recorded decision that differs from the policy's is a
// "policy_check_mismatch" finding; then the cumulative saturating cost is
// compared with the cost budget and the number of calls so far with the call
// budget, each reported once as "cost_budget_exceeded" or
// "call_budget_exceeded" at the first call that breaks it. A header mode
// other than p's is a "governance_mode_mismatch" finding; the calls are
// still judged by p's mode. Findings name the trace field
// ("trace[3].policy_check") and carry no byte offset.
func Evaluate(p Policy, mode uint8, calls []Call) Result {
	var r Result
	if mode != uint8(p.Mode) {
		r.Findings = append(r.Findings, codec.Finding{
			Code: CodeGovernanceModeMismatch, Field: "header.governance_mode", Offset: codec.NoOffset,
			Reason: fmt.Sprintf("bundle records mode %s, policy %s is %s", Mode(mode), p.label(), p.Mode),
		})
	}
	var cost uint32
	costBroken, callsBroken := false, false
	for i, c := range calls {
		d, why := p.decide(c.Action)
		if d == Denied {
			r.Violations = append(r.Violations, Violation{
				Code: CodeDeniedTool, CallIndex: c.Index, Tool: c.Action,
				Reason: fmt.Sprintf("call %d: %q is %s", c.Index, c.Action, why),
			})
		}
		if c.Recorded != uint8(d) {
			r.Findings = append(r.Findings, codec.Finding{
				Code: CodePolicyCheckMismatch, Field: fmt.Sprintf("trace[%d].policy_check", c.Index), Offset: codec.NoOffset,
				Reason: fmt.Sprintf("call %d (%q): recorded %s, policy %s decides %s", c.Index, c.Action, Decision(c.Recorded), p.label(), d),
			})
		}
		cost = satAdd(cost, c.CostMicrodollars)
		if !costBroken && cost > p.MaxCostMicrodollars {
			costBroken = true
			r.Violations = append(r.Violations, Violation{
				Code: CodeCostBudgetExceeded, CallIndex: c.Index, Tool: c.Action,
				Reason: fmt.Sprintf("call %d: cumulative cost %d > budget %d microdollars", c.Index, cost, p.MaxCostMicrodollars),
			})
		}
		if n := i + 1; !callsBroken && n > int(p.MaxToolCalls) {
			callsBroken = true
			r.Violations = append(r.Violations, Violation{
				Code: CodeCallBudgetExceeded, CallIndex: c.Index, Tool: c.Action,
				Reason: fmt.Sprintf("call %d: %d calls > budget %d", c.Index, n, p.MaxToolCalls),
			})
		}
	}
	return r
}

func satAdd(a, b uint32) uint32 {
	if s := a + b; s >= a {
		return s
	}
	return ^uint32(0)
}
