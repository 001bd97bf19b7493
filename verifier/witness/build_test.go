package witness

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/inspect"
	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/codec/rvww"
)

var update = flag.Bool("update", false, "rewrite the golden bundles under testdata/golden")

var (
	testKey     = []byte("witness-test-key")
	testTaskID  = [16]byte{0x0f, 0x1e, 0x2d, 0x3c, 0x4b, 0x5a, 0x49, 0x78, 0x87, 0x96, 0xa5, 0xb4, 0xc3, 0xd2, 0xe1, 0xf0}
	testCreated = time.Unix(1767225600, 123456789) // 2026-01-01T00:00:00.123456789Z
)

// section names the optional sections in golden cases.
type section int

const (
	spec section = iota
	plan
	diff
	testLog
	postmortem
)

type goldenCase struct {
	name     string
	trace    string // file under testdata/traces, or ""
	policy   string // a default policy name, or a file under testdata/policies
	outcome  rvww.Outcome
	retries  uint16
	signed   bool
	sections map[section]string
	// What recording must decide: each call's policy_check, and the
	// violation codes with the index of the call that caused each.
	wantChecks     []rvww.PolicyCheck
	wantViolations []string // "code@index"
}

var goldenCases = []goldenCase{
	{
		name: "solved_autonomous_signed", trace: "solved_autonomous.jsonl", policy: "autonomous",
		outcome: rvww.OutcomeSolved, signed: true,
		sections: map[section]string{
			spec:    "Fix off-by-one in pagination (issue #101)",
			plan:    "1. Read pager.rs\n2. Fix bound\n3. cargo test",
			diff:    "--- a/src/pager.rs\n+++ b/src/pager.rs\n@@ -10 +10 @@\n-    for i in 0..=n {\n+    for i in 0..n {\n",
			testLog: "test pager::bounds ... ok\n1 passed, 0 failed",
		},
		wantChecks: []rvww.PolicyCheck{rvww.CheckAllowed, rvww.CheckAllowed, rvww.CheckAllowed},
	},
	{
		name: "failed_restricted_denied", trace: "failed_restricted.jsonl", policy: "restricted",
		outcome: rvww.OutcomeFailed,
		sections: map[section]string{
			spec:       "Audit the build scripts",
			testLog:    "not run",
			postmortem: "Bash and Deploy were denied by the restricted policy.",
		},
		wantChecks:     []rvww.PolicyCheck{rvww.CheckAllowed, rvww.CheckDenied, rvww.CheckDenied, rvww.CheckAllowed},
		wantViolations: []string{"denied_tool@1", "denied_tool@2"},
	},
	{
		name: "solved_approved_over_budget_signed", trace: "approved_over_budget.jsonl", policy: "approved",
		outcome: rvww.OutcomeSolved, retries: 2, signed: true,
		sections: map[section]string{
			spec: "Bump the dependency", diff: "-v1\n+v2\n", testLog: "ok",
		},
		wantChecks:     []rvww.PolicyCheck{rvww.CheckConfirmed, rvww.CheckConfirmed, rvww.CheckConfirmed},
		wantViolations: []string{"cost_budget_exceeded@1"},
	},
	{
		name: "skipped_no_trace", policy: "autonomous", outcome: rvww.OutcomeSkipped,
		sections: map[section]string{spec: "Precondition not met: repository archived"},
	},
	{
		name: "errored_custom_policy_signed", trace: "errored_custom_policy.jsonl", policy: "ci-small.yaml",
		outcome: rvww.OutcomeErrored, retries: 65535, signed: true,
		sections: map[section]string{
			spec: "Deploy from CI", diff: "", postmortem: "deploy step denied; budget exhausted",
		},
		wantChecks:     []rvww.PolicyCheck{rvww.CheckAllowed, rvww.CheckAllowed, rvww.CheckDenied},
		wantViolations: []string{"cost_budget_exceeded@1", "denied_tool@2", "call_budget_exceeded@2"},
	},
}

// parts reads a golden case's inputs as the CLI would.
func (gc *goldenCase) parts(t *testing.T) Parts {
	t.Helper()
	var pol governance.Policy
	if p, ok := DefaultPolicy(gc.policy); ok {
		pol = p
	} else {
		data, err := os.ReadFile(filepath.Join("testdata", "policies", gc.policy))
		if err != nil {
			t.Fatal(err)
		}
		if pol, err = ParsePolicy(gc.policy, data); err != nil {
			t.Fatal(err)
		}
	}
	p := Parts{TaskID: testTaskID, Created: testCreated, Outcome: gc.outcome, Policy: &pol, RetryCount: gc.retries}
	if gc.trace != "" {
		data, err := os.ReadFile(filepath.Join("testdata", "traces", gc.trace))
		if err != nil {
			t.Fatal(err)
		}
		if p.Calls, err = ParseTrace(gc.trace, data); err != nil {
			t.Fatal(err)
		}
		p.TraceInput = gc.trace
	}
	for s, dst := range map[section]*[]byte{spec: &p.Spec, plan: &p.Plan, diff: &p.Diff, testLog: &p.TestLog, postmortem: &p.Postmortem} {
		if text, ok := gc.sections[s]; ok {
			*dst = []byte(text)
		}
	}
	return p
}

func (gc *goldenCase) options() Options {
	if gc.signed {
		return Options{Key: testKey}
	}
	return Options{}
}

// TestBuildGolden builds each case, compares the bytes with
// testdata/golden/<name>.rvww (-update rewrites them), and checks that the
// bundle decodes with codec/rvww into the parts it was built from, verifies
// with the key, and passes codec/inspect with the violations Build
// reported.
func TestBuildGolden(t *testing.T) {
	ins, err := inspect.New()
	if err != nil {
		t.Fatal(err)
	}
	custom, err := ParsePolicy("ci-small.yaml", mustRead(t, "testdata/policies/ci-small.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, gc := range goldenCases {
		t.Run(gc.name, func(t *testing.T) {
			p := gc.parts(t)
			res, err := Build(p, gc.options())
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "golden", gc.name+".rvww")
			if *update {
				if err := os.WriteFile(golden, res.Bundle, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want := mustRead(t, golden); !bytes.Equal(res.Bundle, want) {
				t.Errorf("bundle differs from %s (run go test ./verifier/witness -update if the change is intended)", golden)
			}
			again, err := Build(gc.parts(t), gc.options())
			if err != nil || !bytes.Equal(again.Bundle, res.Bundle) {
				t.Errorf("a second build differs (err %v)", err)
			}

			checkDecoded(t, p, gc.signed, res)

			var got []string
			for _, v := range res.Violations {
				got = append(got, v.Code+"@"+strconv.Itoa(v.CallIndex))
			}
			if !reflect.DeepEqual(got, gc.wantViolations) {
				t.Errorf("violations %v, want %v", got, gc.wantViolations)
			}
			b, _ := rvww.Decode(res.Bundle)
			var checks []rvww.PolicyCheck
			for _, c := range b.Calls {
				checks = append(checks, c.PolicyCheck)
			}
			if !reflect.DeepEqual(checks, gc.wantChecks) {
				t.Errorf("policy checks %v, want %v", checks, gc.wantChecks)
			}

			ir := ins.Inspect(res.Bundle, inspect.Options{
				HMACKeys: []keys.HMACKey{{Name: "test", Secret: testKey}},
				Policies: []governance.Policy{custom},
			})
			if ir.Kind != codec.KindRVWW || !ir.Valid() || ir.Signed != gc.signed || ir.SignatureChecked != gc.signed {
				t.Fatalf("inspect: kind %s status %v signed %v checked %v findings %v", ir.Kind, ir.Status, ir.Signed, ir.SignatureChecked, ir.Findings)
			}
			if ir.Policy == nil || ir.Policy.Hash() != p.Policy.Hash() {
				t.Errorf("inspect found policy %+v, want %s", ir.Policy, p.Policy.HashString())
			}
			if !reflect.DeepEqual(ir.Violations, res.Violations) {
				t.Errorf("inspect violations %+v\nbuild violations   %+v", ir.Violations, res.Violations)
			}
		})
	}
}

// checkDecoded decodes and verifies a built bundle and compares it, field
// by field, with the parts it was built from; the header totals are summed
// here in 64 bits and clamped, independently of codec/rvww.
func checkDecoded(t *testing.T, p Parts, signed bool, res *Result) {
	t.Helper()
	b, err := rvww.Decode(res.Bundle)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	var ks []rvww.Key
	if signed {
		ks = []rvww.Key{{Name: "test", Secret: testKey}}
		if fs := b.Verify([]rvww.Key{{Name: "wrong", Secret: []byte("wrong")}}); len(fs) == 0 {
			t.Error("verifies with a wrong key")
		}
	}
	if fs := b.Verify(ks); len(fs) != 0 {
		t.Fatalf("verify: %v", fs)
	}
	h := b.Header
	if b.Signed() != signed || (signed && b.VerifiedKey() != "test") {
		t.Errorf("signed %v verified by %q, want signed %v", b.Signed(), b.VerifiedKey(), signed)
	}
	if h.TaskID != res.TaskID || h.CreatedNS != res.CreatedNS || h.Outcome != p.Outcome || h.RetryCount != p.RetryCount ||
		h.PolicyHash != p.Policy.Hash() || uint8(h.Mode) != uint8(p.Policy.Mode) {
		t.Errorf("header %+v does not match the parts", h)
	}
	if int(h.TotalSize) != len(res.Bundle) {
		t.Errorf("total_bundle_size %d, bundle is %d bytes", h.TotalSize, len(res.Bundle))
	}
	for _, s := range []struct {
		name string
		in   []byte
		has  bool
		out  []byte
	}{
		{"SPEC", p.Spec, b.HasSpec, b.Spec}, {"PLAN", p.Plan, b.HasPlan, b.Plan}, {"DIFF", p.Diff, b.HasDiff, b.Diff},
		{"TEST_LOG", p.TestLog, b.HasTestLog, b.TestLog}, {"POSTMORTEM", p.Postmortem, b.HasPostmortem, b.Postmortem},
	} {
		if s.has != (s.in != nil) || !bytes.Equal(s.in, s.out) {
			t.Errorf("%s: present %v content %q, built from %q (nil %v)", s.name, s.has, s.out, s.in, s.in == nil)
		}
	}
	if (h.Flags&rvww.FlagHasTrace != 0) != (len(p.Calls) > 0) {
		t.Errorf("flags 0x%04x with %d calls", h.Flags, len(p.Calls))
	}
	if len(b.Calls) != len(p.Calls) || int(h.ToolCallCount) != len(p.Calls) {
		t.Fatalf("%d records, tool_call_count %d, built from %d calls", len(b.Calls), h.ToolCallCount, len(p.Calls))
	}
	var cost, latency, tokens uint64
	for i, c := range p.Calls {
		r := b.Calls[i]
		if r.Action != c.Tool || r.ArgsHash != c.ArgsHash || r.ResultHash != c.ResultHash ||
			r.LatencyMS != c.LatencyMS || r.CostMicrodollars != c.CostMicrodollars || r.Tokens != c.Tokens ||
			uint8(r.PolicyCheck) != uint8(p.Policy.Check(c.Tool)) {
			t.Errorf("record %d %+v, built from %+v", i, r, c)
		}
		cost += uint64(c.CostMicrodollars)
		latency += uint64(c.LatencyMS)
		tokens += uint64(c.Tokens)
	}
	clamp := func(v uint64) uint32 { return uint32(min(v, math.MaxUint32)) }
	if h.TotalCostMicrodollars != clamp(cost) || h.TotalLatencyMS != clamp(latency) || h.TotalTokens != clamp(tokens) {
		t.Errorf("totals %d/%d/%d, calls sum to %d/%d/%d", h.TotalCostMicrodollars, h.TotalLatencyMS, h.TotalTokens, cost, latency, tokens)
	}
}

// TestRebuildReferenceVector feeds the parts of a bundle made by the
// reference (rvf-runtime) back into Build, its trace written as JSON Lines
// with the recorded decisions: the result must be the reference's bytes.
func TestRebuildReferenceVector(t *testing.T) {
	vector := mustRead(t, "../../testdata/vectors/rvww/01_solved_autonomous_signed.rvww")
	key := mustRead(t, "../../testdata/vectors/rvww/hmac_key.txt")
	ref, err := rvww.Decode(vector)
	if err != nil {
		t.Fatal(err)
	}
	pol, ok := governance.DefaultByHash(ref.Header.PolicyHash)
	if !ok {
		t.Fatalf("vector's policy %x is not a default", ref.Header.PolicyHash)
	}
	var jsonl strings.Builder
	for _, c := range ref.Calls {
		jsonl.WriteString(traceLine(Call{
			Tool: c.Action, ArgsHash: c.ArgsHash, ResultHash: c.ResultHash,
			LatencyMS: c.LatencyMS, CostMicrodollars: c.CostMicrodollars, Tokens: c.Tokens,
			Recorded: governance.Decision(c.PolicyCheck), HasRecorded: true,
		}) + "\n")
	}
	calls, err := ParseTrace("vector.jsonl", []byte(jsonl.String()))
	if err != nil {
		t.Fatal(err)
	}
	section := func(has bool, v []byte) []byte {
		if !has {
			return nil
		}
		return append([]byte{}, v...)
	}
	p := Parts{
		TaskID:     ref.Header.TaskID,
		Created:    time.Unix(0, int64(ref.Header.CreatedNS)),
		Outcome:    ref.Header.Outcome,
		Policy:     &pol,
		RetryCount: ref.Header.RetryCount,
		Spec:       section(ref.HasSpec, ref.Spec),
		Plan:       section(ref.HasPlan, ref.Plan),
		Diff:       section(ref.HasDiff, ref.Diff),
		TestLog:    section(ref.HasTestLog, ref.TestLog),
		Postmortem: section(ref.HasPostmortem, ref.Postmortem),
		Calls:      calls,
	}
	res, err := Build(p, Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Bundle, vector) {
		t.Fatalf("rebuilt bundle differs from the reference vector\n got %x\nwant %x", res.Bundle, vector)
	}
	if len(res.Violations) != 0 {
		t.Errorf("violations %+v in the reference's solved autonomous run", res.Violations)
	}
}

func TestBuildPolicyCheckMismatch(t *testing.T) {
	trace := "{\"tool\":\"Read\",\"policy_check\":\"allowed\"}\n\n{\"tool\":\"Bash\",\"policy_check\":\"allowed\"}\n"
	calls, err := ParseTrace("run.jsonl", []byte(trace))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		policy     governance.Policy
		calls      []Call
		traceInput string
		input      string // the InputError's
		line       int
		field      string
	}{
		{"restricted denies Bash", governance.Restricted(), calls, "run.jsonl", "run.jsonl", 3, "policy_check"},
		{"approved confirms", governance.Approved(), calls, "run.jsonl", "run.jsonl", 1, "policy_check"},
		{"calls not from a file", governance.Restricted(),
			[]Call{{Tool: "Read"}, {Tool: "Write", Recorded: governance.Confirmed, HasRecorded: true}}, "", "trace", 0, "calls[1].policy_check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Build(Parts{TaskID: testTaskID, Created: testCreated, Policy: &tc.policy, Calls: tc.calls, TraceInput: tc.traceInput}, Options{})
			var ie *InputError
			if !errors.As(err, &ie) || res != nil {
				t.Fatalf("got %v, %v; want an *InputError", res, err)
			}
			if ie.Input != tc.input || ie.Line != tc.line || ie.Field != tc.field || !strings.Contains(ie.Reason, "decides") {
				t.Errorf("got %+v (%q)", *ie, ie.Error())
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	auto := governance.Autonomous()
	badMode := governance.Policy{Mode: 3, MaxCostMicrodollars: 1, MaxToolCalls: 1}
	base := func() Parts { return Parts{TaskID: testTaskID, Created: testCreated, Policy: &auto} }
	for _, tc := range []struct {
		name  string
		edit  func(*Parts, *Options)
		field string
	}{
		{"no policy", func(p *Parts, _ *Options) { p.Policy = nil }, "policy"},
		{"unknown mode", func(p *Parts, _ *Options) { p.Policy = &badMode }, "policy.mode"},
		{"unknown outcome", func(p *Parts, _ *Options) { p.Outcome = 4 }, "outcome"},
		{"empty key", func(_ *Parts, o *Options) { o.Key = []byte{} }, "key"},
		{"created before 1970", func(p *Parts, _ *Options) { p.Created = time.Unix(-1, 0) }, "created"},
		{"created after 2554", func(p *Parts, _ *Options) { p.Created = time.Date(2600, 1, 1, 0, 0, 0, 0, time.UTC) }, "created"},
		{"empty tool", func(p *Parts, _ *Options) { p.Calls = []Call{{Tool: "Read"}, {Tool: ""}} }, "calls[1].tool"},
		{"invalid UTF-8 tool", func(p *Parts, _ *Options) { p.Calls = []Call{{Tool: "R\xff"}} }, "calls[0].tool"},
		{"too many calls", func(p *Parts, _ *Options) { p.Calls = make([]Call, 65536) }, "calls[65535]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, o := base(), Options{}
			tc.edit(&p, &o)
			res, err := Build(p, o)
			var ie *InputError
			if !errors.As(err, &ie) || ie.Field != tc.field || res != nil || !errors.Is(err, codec.ErrMalformed) {
				t.Fatalf("got %v, %v; want an *InputError on field %q", res, err, tc.field)
			}
		})
	}
}

func TestBuildCreatedRange(t *testing.T) {
	auto := governance.Autonomous()
	const lastSec, lastNsec = math.MaxUint64 / 1_000_000_000, math.MaxUint64 % 1_000_000_000
	for _, tc := range []struct {
		t    time.Time
		want uint64
	}{
		{time.Unix(0, 1), 1},
		{time.Unix(lastSec, lastNsec), math.MaxUint64},
	} {
		res, err := Build(Parts{TaskID: testTaskID, Created: tc.t, Policy: &auto}, Options{})
		if err != nil || res.CreatedNS != tc.want {
			t.Errorf("%v: got %+v, %v; want created_ns %d", tc.t, res, err, tc.want)
		}
	}
	if _, err := Build(Parts{TaskID: testTaskID, Created: time.Unix(lastSec, lastNsec+1), Policy: &auto}, Options{}); err == nil {
		t.Error("one nanosecond past the u64 range was accepted")
	}
}

// TestBuildClockAndTaskID checks what Build fills in: the creation time
// from Options.Now, and a version 4 UUID from Options.Rand.
func TestBuildClockAndTaskID(t *testing.T) {
	auto := governance.Autonomous()
	now := time.Unix(1800000000, 42)
	rnd := bytes.Repeat([]byte{0xff}, 16)
	res, err := Build(Parts{Policy: &auto}, Options{Now: func() time.Time { return now }, Rand: bytes.NewReader(rnd)})
	if err != nil {
		t.Fatal(err)
	}
	want := [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x4f, 0xff, 0xbf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	if res.TaskID != want || res.CreatedNS != 1800000000_000000042 {
		t.Errorf("task id %x created %d; want %x, %d", res.TaskID, res.CreatedNS, want, uint64(1800000000_000000042))
	}
	b, err := rvww.Decode(res.Bundle)
	if err != nil || b.Header.TaskID != want || b.Header.CreatedNS != res.CreatedNS {
		t.Fatalf("decoded %+v, %v", b, err)
	}
	if _, err := Build(Parts{Policy: &auto}, Options{Rand: bytes.NewReader(nil)}); err == nil || errors.Is(err, codec.ErrMalformed) {
		t.Errorf("failing random source: got %v, want a non-input error", err)
	}
	given, err := Build(Parts{TaskID: testTaskID, Policy: &auto}, Options{Now: func() time.Time { return now }, Rand: bytes.NewReader(nil)})
	if err != nil || given.TaskID != testTaskID {
		t.Errorf("given task id: got %+v, %v", given, err)
	}
}

// TestBuildSaturatingTotals records calls whose figures overflow u32: the
// header totals stop at 4294967295, and the cost budget is broken once.
func TestBuildSaturatingTotals(t *testing.T) {
	auto := governance.Autonomous()
	p := Parts{TaskID: testTaskID, Created: testCreated, Policy: &auto, Calls: []Call{
		{Tool: "Bash", CostMicrodollars: math.MaxUint32, LatencyMS: math.MaxUint32 - 1, Tokens: 1},
		{Tool: "Bash", CostMicrodollars: 1, LatencyMS: 1, Tokens: 2},
		{Tool: "Bash", CostMicrodollars: 5, LatencyMS: 5, Tokens: 3},
	}}
	res, err := Build(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkDecoded(t, p, false, res)
	b, _ := rvww.Decode(res.Bundle)
	if h := b.Header; h.TotalCostMicrodollars != math.MaxUint32 || h.TotalLatencyMS != math.MaxUint32 || h.TotalTokens != 6 {
		t.Errorf("totals %d/%d/%d", h.TotalCostMicrodollars, h.TotalLatencyMS, h.TotalTokens)
	}
	if len(res.Violations) != 1 || res.Violations[0].Code != governance.CodeCostBudgetExceeded || res.Violations[0].CallIndex != 0 {
		t.Errorf("violations %+v", res.Violations)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
