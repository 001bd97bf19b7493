package attrs

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec/canonjson"
)

// decoder is the typed record of one kind.
type decoder interface {
	Decode(canonjson.Value) error
	Value() canonjson.Value
}

// kinds are the typed records, by name, each with a valid attrs object.
var kinds = []struct {
	name  string
	new   func() decoder
	valid string
}{
	{"receipt", func() decoder { return &Receipt{} },
		`{"verdict":"partial","tier":1,"total":5,"passed":3,"failed":2,"errors":0,"task_type":"bugfix"}`},
	{"attestation", func() decoder { return &Attestation{} },
		`{"verdict":"PARTIAL","level":"L2","passed":4,"total":5,"system":"Memoria","version":"1.0.0"}`},
	{"bundle", func() decoder { return &Bundle{} },
		`{"outcome":"failed","mode":0,"policy":"0a1b2c3d4e5f6071","policy_known":true,"cost":12000,"latency_ms":2230,"tokens":1700,"retries":1,"tool_calls":3,"evidence_complete":false,` +
			`"violations":[{"call":1,"code":"denied_tool","tool":"Bash"},{"call":2,"code":"cost_budget_exceeded","tool":"Grep"}]}`},
	{"rollback", func() decoder { return &Rollback{} }, `{"restored_clean":false}`},
}

func parse(t testing.TB, s string) canonjson.Value {
	t.Helper()
	v, err := canonjson.Parse([]byte(s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestValidRoundTrip(t *testing.T) {
	for _, k := range kinds {
		for _, s := range []string{k.valid, `{"verdict":"pass","tier":0,"total":0,"passed":0,"failed":0,"errors":0}`,
			`{"outcome":"unknown(4)","mode":255,"policy":"ffffffffffffffff","policy_known":false,"cost":4294967295,"latency_ms":0,"tokens":4294967295,"retries":65535,"tool_calls":65535,"evidence_complete":true}`,
			`{"verdict":"INCONCLUSIVE","level":"","passed":0,"total":0,"system":"","version":""}`} {
			v := parse(t, s)
			d := k.new()
			if err := d.Decode(v); err != nil {
				if s == k.valid {
					t.Errorf("%s: %v", k.name, err)
				}
				continue
			}
			if got, want := canonjson.Canonical(d.Value()), canonjson.Canonical(v); !bytes.Equal(got, want) {
				t.Errorf("%s: %s decodes and re-encodes to %s", k.name, want, got)
			}
		}
	}
}

// TestDecodeErrors mutates valid attrs objects and demands an error that
// wraps ErrInvalid and names the field.
func TestDecodeErrors(t *testing.T) {
	num := func(lit string) canonjson.Value {
		v, ok := canonjson.MakeNumber(lit)
		if !ok {
			t.Fatal(lit)
		}
		return v
	}
	str, i := canonjson.MakeString, canonjson.MakeInt
	set := func(k string, v canonjson.Value) func(canonjson.Value) canonjson.Value {
		return func(o canonjson.Value) canonjson.Value { return o.With(k, v) }
	}
	del := func(k string) func(canonjson.Value) canonjson.Value {
		return func(o canonjson.Value) canonjson.Value { return o.Without(k) }
	}
	whole := func(v canonjson.Value) func(canonjson.Value) canonjson.Value {
		return func(canonjson.Value) canonjson.Value { return v }
	}
	violation := func(call canonjson.Value, code, tool string) canonjson.Value {
		return canonjson.MakeObject(canonjson.Member{Key: "call", Value: call}, canonjson.Member{Key: "code", Value: str(code)}, canonjson.Member{Key: "tool", Value: str(tool)})
	}
	for _, tc := range []struct {
		kind   string
		mutate func(canonjson.Value) canonjson.Value
		want   string // the whole error text
	}{
		{"receipt", whole(canonjson.MakeArray()), "attrs: want an object, got array"},
		{"receipt", whole(canonjson.MakeNull()), "attrs: want an object, got null"},
		{"receipt", del("verdict"), "attrs.verdict: missing"},
		{"receipt", del("errors"), "attrs.errors: missing"},
		{"receipt", set("verdict", i(1)), "attrs.verdict: want a string, got 1"},
		{"receipt", set("verdict", str("PASS")), `attrs.verdict: want one of "pass", "fail", "partial", "error", got "PASS"`},
		{"receipt", set("tier", i(4)), "attrs.tier: want at most 3, got 4"},
		{"receipt", set("tier", num("1.0")), "attrs.tier: want an integer, got 1.0"},
		{"receipt", set("tier", str("1")), "attrs.tier: want an integer, got string"},
		{"receipt", set("passed", i(-3)), "attrs.passed: want a non-negative integer, got -3"},
		{"receipt", set("total", num("99999999999999999999")), "attrs.total: integer 99999999999999999999 out of range"},
		{"receipt", set("total", i(6)), "attrs.total: 6, but passed 3 + failed 2 + errors 0 differ"},
		{"receipt", set("verdict", str("pass")), `attrs.verdict: "pass", but the counts (3 passed, 2 failed, 0 errors) give "partial"`},
		{"receipt", set("task_type", str("")), "attrs.task_type: empty (a receipt without a task type has no task_type)"},
		{"receipt", set("task_type", canonjson.MakeNull()), "attrs.task_type: want a string, got null"},
		{"receipt", set("agent", str("a")), `attrs."agent": unknown key (leaf version 1 has verdict, tier, total, passed, failed, errors, task_type)`},
		{"receipt", set(strings.Repeat("k", 100), str("a")), `attrs."` + strings.Repeat("k", 40) + `": unknown key`},
		{"attestation", set("verdict", str("verified")), `attrs.verdict: want one of "VERIFIED", "PARTIAL", "FAILED", "INVALID", "INCONCLUSIVE", got "verified"`},
		{"attestation", set("level", str("L5")), `attrs.level: want one of "", "L1", "L2", "L3", "L4", got "L5"`},
		{"attestation", del("level"), "attrs.level: missing"},
		{"attestation", set("passed", i(6)), "attrs.passed: 6, more than total 5"},
		{"attestation", set("system", canonjson.MakeBool(true)), "attrs.system: want a string, got boolean"},
		{"attestation", del("version"), "attrs.version: missing"},
		{"bundle", set("outcome", str("Solved")), `attrs.outcome: want "solved", "failed", "skipped", "errored" or "unknown(N)" for a byte N from 4 to 255, got "Solved"`},
		{"bundle", set("outcome", str("unknown(3)")), `attrs.outcome: want "solved", "failed", "skipped", "errored" or "unknown(N)" for a byte N from 4 to 255, got "unknown(3)"`},
		{"bundle", set("outcome", str("unknown(04)")), `attrs.outcome: want "solved", "failed", "skipped", "errored" or "unknown(N)" for a byte N from 4 to 255, got "unknown(04)"`},
		{"bundle", set("outcome", str("unknown(256)")), `attrs.outcome: want "solved", "failed", "skipped", "errored" or "unknown(N)" for a byte N from 4 to 255, got "unknown(256)"`},
		{"bundle", set("outcome", i(1)), "attrs.outcome: want a string, got 1"},
		{"bundle", set("mode", i(256)), "attrs.mode: want at most 255, got 256"},
		{"bundle", set("policy", str("0A1B2C3D4E5F6071")), `attrs.policy: want 16 lowercase hex digits, got "0A1B2C3D4E5F6071"`},
		{"bundle", set("policy", str("0a1b")), `attrs.policy: want 16 lowercase hex digits, got "0a1b"`},
		{"bundle", set("cost", i(-1)), "attrs.cost: want a non-negative integer, got -1"},
		{"bundle", set("cost", i(1<<32)), "attrs.cost: want at most 4294967295, got 4294967296"},
		{"bundle", set("latency_ms", num("1e3")), "attrs.latency_ms: want an integer, got 1e3"},
		{"bundle", set("retries", i(65536)), "attrs.retries: want at most 65535, got 65536"},
		{"bundle", set("tool_calls", str("3")), "attrs.tool_calls: want an integer, got string"},
		{"bundle", set("evidence_complete", i(1)), "attrs.evidence_complete: want a boolean, got 1"},
		{"bundle", del("policy_known"), "attrs.policy_known: missing"},
		{"bundle", del("violations"), "attrs.violations: missing (policy_known is true: the trace was evaluated)"},
		{"bundle", set("policy_known", canonjson.MakeBool(false)), "attrs.violations: present, but policy_known is false (the trace was not evaluated)"},
		{"bundle", set("violations", canonjson.MakeObject()), "attrs.violations: want an array, got object"},
		{"bundle", set("violations", canonjson.MakeArray(i(1))), "attrs.violations[0]: want an object, got number"},
		{"bundle", set("violations", canonjson.MakeArray(violation(i(0), "denied_tool", "Bash"), violation(i(3), "denied_tool", "Bash"))),
			"attrs.violations[1].call: 3, but the bundle has 3 tool calls"},
		{"bundle", set("violations", canonjson.MakeArray(violation(i(0), "mystery", "Bash"))), `attrs.violations[0].code: want one of "denied_tool", "cost_budget_exceeded", "call_budget_exceeded", got "mystery"`},
		{"bundle", set("violations", canonjson.MakeArray(violation(i(0), "denied_tool", "Bash").Without("tool"))), "attrs.violations[0].tool: missing"},
		{"bundle", set("violations", canonjson.MakeArray(violation(i(0), "denied_tool", "Bash").With("why", str("x")))), `attrs.violations[0]."why": unknown key (leaf version 1 has call, code, tool)`},
		{"rollback", set("restored_clean", str("yes")), "attrs.restored_clean: want a boolean, got string"},
		{"rollback", del("restored_clean"), "attrs.restored_clean: missing"},
		{"rollback", set("at", str("now")), `attrs."at": unknown key (leaf version 1 has restored_clean)`},
		{"rollback", whole(canonjson.MakeObject(
			canonjson.Member{Key: "restored_clean", Value: canonjson.MakeBool(true)},
			canonjson.Member{Key: "restored_clean", Value: canonjson.MakeBool(false)})), "attrs.restored_clean: repeated"},
	} {
		t.Run(tc.kind+"/"+tc.want, func(t *testing.T) {
			for _, k := range kinds {
				if k.name != tc.kind {
					continue
				}
				err := k.new().Decode(tc.mutate(parse(t, k.valid)))
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("error %v, want one wrapping ErrInvalid", err)
				}
				var fe *FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("error %v is no *FieldError", err)
				}
				if !strings.HasPrefix(err.Error(), tc.want) {
					t.Errorf("error\n%s\nwant\n%s", err, tc.want)
				}
			}
		})
	}
}

// TestBundleDecodeReusesViolations: decoding into a Bundle keeps the
// capacity of its Violations, so a projector that decodes every bundle
// into one Bundle does not allocate per violation.
func TestBundleDecodeReusesViolations(t *testing.T) {
	v := parse(t, kinds[2].valid)
	var b Bundle
	if err := b.Decode(v); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := b.Decode(v); err != nil || len(b.Violations) != 2 {
			t.Fatal(err, b.Violations)
		}
	})
	if allocs != 0 {
		t.Errorf("Decode of a bundle with violations: %v allocations, want 0", allocs)
	}
}
