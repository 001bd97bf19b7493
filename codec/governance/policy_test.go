package governance

import (
	"fmt"
	"math"
	"reflect"
	"testing"
)

func TestDefaultHashes(t *testing.T) {
	for _, tt := range []struct {
		p           Policy
		input, hash string
	}{
		{Restricted(), "mode=0+Read+Glob+Grep+WebFetch+WebSearch-Bash-Write-Edit|cost=10000|calls=50", "66fb836fa37e48ef"},
		{Approved(), "mode=1|cost=100000|calls=200", "37174386ed336528"},
		{Autonomous(), "mode=2|cost=1000000|calls=500", "f9210ee4856ff1e0"},
	} {
		t.Run(tt.p.Name, func(t *testing.T) {
			if got := tt.p.HashInput(); got != tt.input {
				t.Errorf("HashInput = %q, want %q", got, tt.input)
			}
			if got := tt.p.HashString(); got != tt.hash {
				t.Errorf("HashString = %s, want %s", got, tt.hash)
			}
			if got := fmt.Sprintf("%x", tt.p.Hash()); got != tt.hash {
				t.Errorf("Hash = %s, want %s", got, tt.hash)
			}
			d, ok := DefaultByHash(tt.p.Hash())
			if !ok || !reflect.DeepEqual(d, tt.p) {
				t.Errorf("DefaultByHash = %+v, %v", d, ok)
			}
		})
	}
	if _, ok := DefaultByHash([8]byte{}); ok {
		t.Error("DefaultByHash found a policy for a zero hash")
	}
	if ds := Defaults(); len(ds) != 3 || ds[0].Mode != ModeRestricted || ds[1].Mode != ModeApproved || ds[2].Mode != ModeAutonomous {
		t.Errorf("Defaults = %+v", ds)
	}
}

// TestHashCoversEverythingButName changes one hashed field at a time.
func TestHashCoversEverythingButName(t *testing.T) {
	base := Restricted()
	renamed := base
	renamed.Name = "another name"
	if renamed.Hash() != base.Hash() {
		t.Error("the name changed the hash")
	}
	for name, edit := range map[string]func(p *Policy){
		"mode":  func(p *Policy) { p.Mode = ModeApproved },
		"allow": func(p *Policy) { p.Allow = []string{"Read"} },
		"allow order": func(p *Policy) {
			p.Allow = []string{"Glob", "Read", "Grep", "WebFetch", "WebSearch"}
		},
		"deny":      func(p *Policy) { p.Deny = nil },
		"max cost":  func(p *Policy) { p.MaxCostMicrodollars++ },
		"max calls": func(p *Policy) { p.MaxToolCalls++ },
	} {
		p := Restricted()
		edit(&p)
		if p.Hash() == base.Hash() {
			t.Errorf("changing %s kept the hash", name)
		}
	}
}

func TestCheck(t *testing.T) {
	withDeny := func(p Policy, deny ...string) Policy { p.Deny = deny; return p }
	withAllow := func(p Policy, allow ...string) Policy { p.Allow = allow; return p }
	for _, tt := range []struct {
		name string
		p    Policy
		tool string
		want Decision
	}{
		{"restricted allows an allowed tool", Restricted(), "Read", Allowed},
		{"restricted allows WebSearch", Restricted(), "WebSearch", Allowed},
		{"restricted denies a denied tool", Restricted(), "Bash", Denied},
		{"restricted denies an unlisted tool", Restricted(), "NotebookEdit", Denied},
		{"tool names are case sensitive", Restricted(), "read", Denied},
		{"restricted denies the empty name", Restricted(), "", Denied},
		{"deny wins over allow", withDeny(Restricted(), "Read"), "Read", Denied},
		{"approved confirms anything", Approved(), "Bash", Confirmed},
		{"approved still denies its deny list", withDeny(Approved(), "Bash"), "Bash", Denied},
		{"approved ignores its allow list", withAllow(Approved(), "Read"), "Write", Confirmed},
		{"autonomous allows anything", Autonomous(), "Write", Allowed},
		{"autonomous still denies its deny list", withDeny(Autonomous(), "Write"), "Write", Denied},
		{"undefined mode denies", Policy{Mode: 7}, "Read", Denied},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Check(tt.tool); got != tt.want {
				t.Errorf("Check(%q) = %s, want %s", tt.tool, got, tt.want)
			}
		})
	}
}

func TestNames(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{ModeRestricted.String(), "restricted"}, {ModeApproved.String(), "approved"}, {ModeAutonomous.String(), "autonomous"},
		{Mode(3).String(), "unknown(3)"},
		{Allowed.String(), "allowed"}, {Denied.String(), "denied"}, {Confirmed.String(), "confirmed"}, {Decision(9).String(), "unknown(9)"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	for _, name := range []string{"restricted", "approved", "autonomous"} {
		if m, ok := ParseMode(name); !ok || m.String() != name {
			t.Errorf("ParseMode(%q) = %v, %v", name, m, ok)
		}
	}
	if _, ok := ParseMode("Restricted"); ok {
		t.Error("ParseMode accepted a capitalised name")
	}
}

type viol struct {
	code  string
	index int
	tool  string
}

func calls(spec ...any) []Call {
	// spec: action, recorded, cost, action, recorded, cost, ...
	var cs []Call
	for i := 0; i+2 < len(spec); i += 3 {
		cs = append(cs, Call{Index: len(cs), Action: spec[i].(string), Recorded: uint8(spec[i+1].(Decision)), CostMicrodollars: uint32(spec[i+2].(int))})
	}
	return cs
}

func TestEvaluate(t *testing.T) {
	small := Restricted()
	small.MaxCostMicrodollars, small.MaxToolCalls = 100, 2
	tinyAuto := Autonomous()
	tinyAuto.MaxCostMicrodollars = math.MaxUint32 - 1
	for _, tt := range []struct {
		name  string
		p     Policy
		mode  uint8
		calls []Call
		viols []viol
		finds []find
	}{
		{"clean restricted trace", Restricted(), 0, calls("Read", Allowed, 10, "Grep", Allowed, 10), nil, nil},
		{"no calls", Approved(), 1, nil, nil, nil},
		{"denied tool, recorded denied", Restricted(), 0, calls("Read", Allowed, 10, "Bash", Denied, 0),
			[]viol{{CodeDeniedTool, 1, "Bash"}}, nil},
		{"unlisted tool in restricted mode", Restricted(), 0, calls("Task", Denied, 0),
			[]viol{{CodeDeniedTool, 0, "Task"}}, nil},
		{"each denied call is reported", Restricted(), 0, calls("Bash", Denied, 0, "Write", Denied, 0, "Bash", Denied, 0),
			[]viol{{CodeDeniedTool, 0, "Bash"}, {CodeDeniedTool, 1, "Write"}, {CodeDeniedTool, 2, "Bash"}}, nil},
		{"denied tool recorded allowed", Restricted(), 0, calls("Bash", Allowed, 0),
			[]viol{{CodeDeniedTool, 0, "Bash"}}, []find{{CodePolicyCheckMismatch, "trace[0].policy_check"}}},
		{"approved call recorded allowed", Approved(), 1, calls("Edit", Allowed, 0),
			nil, []find{{CodePolicyCheckMismatch, "trace[0].policy_check"}}},
		{"autonomous call recorded confirmed", Autonomous(), 2, calls("Edit", Confirmed, 0),
			nil, []find{{CodePolicyCheckMismatch, "trace[0].policy_check"}}},
		{"unknown recorded byte", Autonomous(), 2, []Call{{Index: 0, Action: "Edit", Recorded: 7}},
			nil, []find{{CodePolicyCheckMismatch, "trace[0].policy_check"}}},
		{"cost exactly at budget is fine", small, 0, calls("Read", Allowed, 60, "Grep", Allowed, 40), nil, nil},
		{"cost over budget, reported once at the first call over", small, 0, calls("Read", Allowed, 60, "Grep", Allowed, 41),
			[]viol{{CodeCostBudgetExceeded, 1, "Grep"}}, nil},
		{"calls over budget, reported once", small, 0, calls("Read", Allowed, 0, "Read", Allowed, 0, "Glob", Allowed, 0, "Grep", Allowed, 0),
			[]viol{{CodeCallBudgetExceeded, 2, "Glob"}}, nil},
		{"cost stays over budget: still once", small, 0, calls("Read", Allowed, 200, "Read", Allowed, 1),
			[]viol{{CodeCostBudgetExceeded, 0, "Read"}}, nil},
		{"order within one call: denied, cost, calls", small, 0, calls("Read", Allowed, 0, "Read", Allowed, 0, "Bash", Denied, 500),
			[]viol{{CodeDeniedTool, 2, "Bash"}, {CodeCostBudgetExceeded, 2, "Bash"}, {CodeCallBudgetExceeded, 2, "Bash"}}, nil},
		{"denied calls still count toward budgets", small, 0, calls("Bash", Denied, 101),
			[]viol{{CodeDeniedTool, 0, "Bash"}, {CodeCostBudgetExceeded, 0, "Bash"}}, nil},
		{"zero budgets: first call breaks both", Policy{Mode: ModeAutonomous}, 2, calls("Read", Allowed, 1),
			[]viol{{CodeCostBudgetExceeded, 0, "Read"}, {CodeCallBudgetExceeded, 0, "Read"}}, nil},
		{"saturating cost sum breaks a budget just under u32 max", tinyAuto, 2,
			[]Call{{Index: 0, Action: "a", CostMicrodollars: math.MaxUint32 - 1}, {Index: 1, Action: "b", CostMicrodollars: 2}},
			[]viol{{CodeCostBudgetExceeded, 1, "b"}}, nil},
		{"mode mismatch is a finding, calls judged by the policy", Restricted(), 2, calls("Bash", Allowed, 0),
			[]viol{{CodeDeniedTool, 0, "Bash"}},
			[]find{{CodeGovernanceModeMismatch, "header.governance_mode"}, {CodePolicyCheckMismatch, "trace[0].policy_check"}}},
		{"unknown header mode", Autonomous(), 9, nil, nil, []find{{CodeGovernanceModeMismatch, "header.governance_mode"}}},
		{"call indexes come from the caller", Restricted(), 0, []Call{{Index: 7, Action: "Bash", Recorded: 1}},
			[]viol{{CodeDeniedTool, 7, "Bash"}}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := Evaluate(tt.p, tt.mode, tt.calls)
			var vs []viol
			for _, v := range r.Violations {
				vs = append(vs, viol{v.Code, v.CallIndex, v.Tool})
				if v.Reason == "" {
					t.Errorf("violation %+v has no reason", v)
				}
			}
			var fs []find
			for _, f := range r.Findings {
				fs = append(fs, find{f.Code, f.Field})
				if f.Reason == "" || f.Offset != -1 {
					t.Errorf("finding %+v", f)
				}
			}
			if !reflect.DeepEqual(vs, tt.viols) {
				t.Errorf("violations = %+v, want %+v", vs, tt.viols)
			}
			if !reflect.DeepEqual(fs, tt.finds) {
				t.Errorf("findings = %+v, want %+v", fs, tt.finds)
			}
			if r.OK() != (len(tt.viols) == 0 && len(tt.finds) == 0) {
				t.Errorf("OK = %v", r.OK())
			}
		})
	}
}

func TestEvaluateReasons(t *testing.T) {
	small := Restricted()
	small.Name, small.MaxCostMicrodollars, small.MaxToolCalls = "small", 100, 1
	r := Evaluate(small, 2, calls("Read", Confirmed, 60, "Bash", Denied, 41, "Task", Denied, 0))
	var got []string
	for _, v := range r.Violations {
		got = append(got, v.Reason)
	}
	for _, f := range r.Findings {
		got = append(got, f.Reason)
	}
	want := []string{
		`call 1: "Bash" is on the deny list`,
		"call 1: cumulative cost 101 > budget 100 microdollars",
		"call 1: 2 calls > budget 1",
		`call 2: "Task" is not on the allow list (restricted mode)`,
		`bundle records mode autonomous, policy "small" is restricted`,
		`call 0 ("Read"): recorded confirmed, policy "small" decides allowed`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reasons:\n%q\nwant\n%q", got, want)
	}
}
