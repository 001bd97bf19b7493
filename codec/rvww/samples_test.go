package rvww

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec"
)

var update = flag.Bool("update", false, "rewrite golden files and generated samples")

const (
	sampleDir = "../../testdata/rvww"
	vectorDir = "../../testdata/vectors/rvww"
	goldenDir = "testdata/golden"
	// baseNS is 2026-01-01T00:00:00Z; sample i is created i seconds later.
	baseNS = uint64(1767225600) * 1e9
)

// The default policy hashes (pinned by codec/governance's tests) and one
// custom policy: governance.Policy{Mode: restricted, Allow: [Read Grep],
// Deny: [Bash], MaxCostMicrodollars: 5000, MaxToolCalls: 10}, whose file
// codec/governance writes as testdata/rvww/policies/custom_read_grep.json.
const (
	hashRestricted  = "66fb836fa37e48ef"
	hashApproved    = "37174386ed336528"
	hashAutonomous  = "f9210ee4856ff1e0"
	customHashInput = "mode=0+Read+Grep-Bash|cost=5000|calls=10"
)

func readKey(t testing.TB) []byte {
	t.Helper()
	key, err := os.ReadFile(filepath.Join(vectorDir, "hmac_key.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func hash8(hexStr string) [8]byte {
	h, err := hex.DecodeString(hexStr)
	if err != nil || len(h) != 8 {
		panic(fmt.Sprintf("bad hash constant %q", hexStr))
	}
	return [8]byte(h)
}

func customHash() [8]byte {
	sum := sha256.Sum256([]byte(customHashInput))
	return [8]byte(sum[:8])
}

// taskID derives a version-4-shaped UUID from a sample name.
func taskID(name string) [16]byte {
	sum := sha256.Sum256([]byte("task:" + name))
	id := [16]byte(sum[:16])
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}

func short8(parts ...string) [8]byte {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return [8]byte(sum[:8])
}

// call makes a tool call with hashes derived from its action and position.
func call(i int, action string, check PolicyCheck, latency, cost, tokens uint32) ToolCall {
	n := fmt.Sprint(i)
	return ToolCall{
		Index: i, Action: action, PolicyCheck: check,
		ArgsHash: short8("args", action, n), ResultHash: short8("result", action, n),
		LatencyMS: latency, CostMicrodollars: cost, Tokens: tokens,
	}
}

// calls numbers a list of calls.
func calls(cs ...ToolCall) []ToolCall {
	for i := range cs {
		cs[i] = call(i, cs[i].Action, cs[i].PolicyCheck, cs[i].LatencyMS, cs[i].CostMicrodollars, cs[i].Tokens)
	}
	return cs
}

func tc(action string, check PolicyCheck, latency, cost, tokens uint32) ToolCall {
	return ToolCall{Action: action, PolicyCheck: check, LatencyMS: latency, CostMicrodollars: cost, Tokens: tokens}
}

type content struct {
	spec, plan, diff, testLog, postmortem string
	has                                   string // letters: s p d t m
}

func (c content) apply(b *Bundle) {
	if strings.Contains(c.has, "s") {
		b.Spec, b.HasSpec = []byte(c.spec), true
	}
	if strings.Contains(c.has, "p") {
		b.Plan, b.HasPlan = []byte(c.plan), true
	}
	if strings.Contains(c.has, "d") {
		b.Diff, b.HasDiff = []byte(c.diff), true
	}
	if strings.Contains(c.has, "t") {
		b.TestLog, b.HasTestLog = []byte(c.testLog), true
	}
	if strings.Contains(c.has, "m") {
		b.Postmortem, b.HasPostmortem = []byte(c.postmortem), true
	}
}

func text(task string) content {
	return content{
		spec:       "Fix the off-by-one in the pagination of " + task + " (issue #212): the last page repeats the first item of the next one.",
		plan:       "1. Read src/pager.rs\n2. Find the bound check\n3. Change ..= to ..\n4. cargo test pager\n",
		diff:       "--- a/src/pager.rs\n+++ b/src/pager.rs\n@@ -41,7 +41,7 @@\n-    for i in start..=end {\n+    for i in start..end {\n",
		testLog:    "running 4 tests\ntest pager::bounds ... ok\ntest pager::empty ... ok\ntest pager::single ... ok\ntest pager::last_page ... ok\n\ntest result: ok. 4 passed; 0 failed\n",
		postmortem: "The fix compiled but pager::last_page still failed: the caller also adds one. Needs a second change in src/api.rs.",
		has:        "spdt",
	}
}

// base returns a typical bundle: the given outcome, mode and policy, SPEC,
// PLAN, DIFF and TEST_LOG, and the given calls.
func base(name string, seq int, outcome Outcome, mode Mode, policy [8]byte, cs []ToolCall) *Bundle {
	b := &Bundle{Header: Header{
		TaskID: taskID(name), PolicyHash: policy, CreatedNS: baseNS + uint64(seq)*1e9,
		Outcome: outcome, Mode: mode,
	}}
	text(name).apply(b)
	b.Calls = cs
	return b
}

func readCalls(check PolicyCheck) []ToolCall {
	return calls(
		tc("Read", check, 40, 120, 900),
		tc("Grep", check, 25, 80, 300),
		tc("Read", check, 35, 110, 850),
	)
}

func writeCalls(check PolicyCheck) []ToolCall {
	return calls(
		tc("Read", check, 50, 100, 500),
		tc("Edit", check, 120, 250, 1200),
		tc("Bash", check, 2100, 0, 0),
	)
}

func mustEncode(t testing.TB, b *Bundle, key []byte) []byte {
	t.Helper()
	out, err := Encode(b, key)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return out
}

// resign recomputes the HMAC of a signed bundle after a header or section
// edit, so that the edit is the sample's only problem.
func resign(data, key []byte) []byte {
	n := len(data) - SignatureSize
	mac := hmac.New(sha256.New, key)
	mac.Write(data[:n])
	copy(data[n:], mac.Sum(nil))
	return data
}

func put16(data []byte, off int, v uint16) { binary.LittleEndian.PutUint16(data[off:], v) }
func put32(data []byte, off int, v uint32) { binary.LittleEndian.PutUint32(data[off:], v) }
func get16(data []byte, off int) uint16    { return binary.LittleEndian.Uint16(data[off:]) }
func get32(data []byte, off int) uint32    { return binary.LittleEndian.Uint32(data[off:]) }

// sectionOffset returns the offset of the n-th section header (from 0).
func sectionOffset(data []byte, n int) int {
	pos := HeaderSize
	for ; n > 0; n-- {
		pos += SectionHeaderSize + int(get32(data, pos+2))
	}
	return pos
}

// rawTrace encodes b with an unknown placeholder section holding trace,
// then turns that section into a TRACE: the way to write trace bytes Encode
// would refuse. count is written as tool_call_count.
func rawTrace(t testing.TB, b *Bundle, trace []byte, count uint16, key []byte) []byte {
	t.Helper()
	b.Calls = nil
	b.Unknown = []Section{{Tag: 0x7777, Value: trace}}
	data := mustEncode(t, b, key)
	n := int(get16(data, offSectionCount)) - 1 // the placeholder is last
	put16(data, sectionOffset(data, n), TagTrace)
	put16(data, offFlags, get16(data, offFlags)|FlagHasTrace)
	put16(data, offToolCallCount, count)
	if key != nil {
		resign(data, key)
	}
	return data
}

func record(action string, check, pad byte, actionLen int) []byte {
	c := call(0, action, PolicyCheck(check), 10, 20, 30)
	rec := appendCall(nil, &c)
	rec[2], rec[3] = check, pad
	put16(rec, 0, uint16(actionLen))
	return rec
}

// want is one expected finding: code and field.
type want struct{ code, field string }

func (w want) String() string { return w.code + " " + w.field }

type sample struct {
	name string
	data []byte
	// decode lists the malformed findings Decode must report; verify the
	// findings Verify must report with the sample key. Both empty: valid.
	decode, verify []want
}

func mal(field string) want { return want{"malformed", field} }

// samples builds every generated sample. Deterministic: fixed keys, names,
// times and hashes.
func samples(t testing.TB) []sample {
	key := readKey(t)
	restricted, approved, autonomous := hash8(hashRestricted), hash8(hashApproved), hash8(hashAutonomous)
	var out []sample
	seq := 0
	add := func(name string, data []byte, decode, verify []want) {
		out = append(out, sample{name: name, data: data, decode: decode, verify: verify})
	}
	mk := func(name string, outcome Outcome, mode Mode, policy [8]byte, cs []ToolCall) *Bundle {
		seq++
		return base(name, seq, outcome, mode, policy, cs)
	}
	valid := func(name string, b *Bundle, k []byte) { add(name, mustEncode(t, b, k), nil, nil) }

	// Valid bundles: every outcome and every default mode.
	valid("valid_solved_restricted_signed", mk("valid_solved_restricted_signed", OutcomeSolved, ModeRestricted, restricted, readCalls(CheckAllowed)), key)
	valid("valid_solved_approved_signed", mk("valid_solved_approved_signed", OutcomeSolved, ModeApproved, approved, writeCalls(CheckConfirmed)), key)
	valid("valid_solved_autonomous_signed", mk("valid_solved_autonomous_signed", OutcomeSolved, ModeAutonomous, autonomous, writeCalls(CheckAllowed)), key)
	{
		b := mk("valid_failed_approved_signed", OutcomeFailed, ModeApproved, approved, writeCalls(CheckConfirmed))
		b.Postmortem, b.HasPostmortem = []byte(text("").postmortem), true
		b.Header.RetryCount = 2
		valid("valid_failed_approved_signed", b, key)
	}
	{
		b := mk("valid_skipped_restricted_signed", OutcomeSkipped, ModeRestricted, restricted, nil)
		b.Plan, b.HasPlan, b.Diff, b.HasDiff, b.TestLog, b.HasTestLog = nil, false, nil, false, nil, false
		b.Postmortem, b.HasPostmortem = []byte("Skipped: the issue needs a database migration, which restricted mode cannot run."), true
		valid("valid_skipped_restricted_signed", b, key)
	}
	{
		b := mk("valid_errored_autonomous_signed", OutcomeErrored, ModeAutonomous, autonomous,
			calls(tc("Read", CheckAllowed, 30, 90, 400), tc("Bash", CheckAllowed, 30000, 0, 0)))
		b.Diff, b.HasDiff, b.TestLog, b.HasTestLog = nil, false, nil, false
		b.Postmortem, b.HasPostmortem = []byte("cargo test timed out after 30 s: the sandbox lost its network."), true
		b.Header.RetryCount = 3
		valid("valid_errored_autonomous_signed", b, key)
	}
	valid("valid_unsigned", mk("valid_unsigned", OutcomeSolved, ModeAutonomous, autonomous, writeCalls(CheckAllowed)), nil)
	{
		b := mk("valid_header_only_signed", OutcomeSkipped, ModeAutonomous, autonomous, nil)
		b.HasSpec, b.HasPlan, b.HasDiff, b.HasTestLog = false, false, false, false
		valid("valid_header_only_signed", b, key)
	}
	{
		b := mk("valid_empty_spec_section", OutcomeSolved, ModeAutonomous, autonomous, writeCalls(CheckAllowed))
		b.Spec = nil // present, zero length
		valid("valid_empty_spec_section", b, key)
	}
	{
		b := mk("valid_unknown_tag", OutcomeSolved, ModeAutonomous, autonomous, writeCalls(CheckAllowed))
		b.Unknown = []Section{{Tag: 0x0100, Value: []byte(`{"runner":"ci-7","attempt":1}`)}}
		valid("valid_unknown_tag", b, key)
	}
	{
		b := mk("valid_unknown_outcome_and_mode", Outcome(7), Mode(9), autonomous, writeCalls(CheckAllowed))
		valid("valid_unknown_outcome_and_mode", b, key)
	}
	{
		b := mk("valid_evidence_incomplete_solved", OutcomeSolved, ModeAutonomous, autonomous, writeCalls(CheckAllowed))
		b.Diff, b.HasDiff, b.TestLog, b.HasTestLog = nil, false, nil, false
		valid("valid_evidence_incomplete_solved", b, key)
	}
	{
		b := mk("valid_saturated_totals", OutcomeSolved, ModeAutonomous, autonomous, calls(
			tc("Bash", CheckAllowed, 4_000_000_000, 4_000_000_000, 4_000_000_000),
			tc("Bash", CheckAllowed, 4_000_000_000, 4_000_000_000, 4_000_000_000)))
		valid("valid_saturated_totals", b, key)
	}
	{
		b := mk("valid_task_id_text", OutcomeSolved, ModeRestricted, restricted, readCalls(CheckAllowed))
		b.Header.TaskID = [16]byte([]byte("repo-issue-00212"))
		valid("valid_task_id_text", b, key)
	}

	// Well-formed bundles for the governance checks (codec/governance
	// evaluates them; here they must decode and verify).
	valid("policy_denied_tool_restricted", mk("policy_denied_tool_restricted", OutcomeFailed, ModeRestricted, restricted,
		calls(tc("Read", CheckAllowed, 40, 100, 500), tc("Bash", CheckDenied, 0, 0, 0), tc("Grep", CheckAllowed, 20, 60, 200))), key)
	valid("policy_cost_budget_exceeded", mk("policy_cost_budget_exceeded", OutcomeSolved, ModeRestricted, restricted,
		calls(tc("Read", CheckAllowed, 40, 4000, 500), tc("Grep", CheckAllowed, 40, 4000, 500),
			tc("WebFetch", CheckAllowed, 900, 4000, 2500), tc("Read", CheckAllowed, 40, 4000, 500))), key)
	{
		var cs []ToolCall
		for i := range 52 {
			cs = append(cs, tc([]string{"Read", "Grep", "Glob"}[i%3], CheckAllowed, 20, 10, 100))
		}
		valid("policy_call_budget_exceeded", mk("policy_call_budget_exceeded", OutcomeSolved, ModeRestricted, restricted, calls(cs...)), key)
	}
	valid("policy_check_mismatch", mk("policy_check_mismatch", OutcomeSolved, ModeRestricted, restricted,
		calls(tc("Read", CheckAllowed, 40, 100, 500), tc("Bash", CheckAllowed, 1500, 0, 0))), key)
	valid("policy_custom_hash", mk("policy_custom_hash", OutcomeSolved, ModeRestricted, customHash(),
		calls(tc("Read", CheckAllowed, 40, 100, 500), tc("Grep", CheckAllowed, 20, 60, 200))), key)
	valid("policy_mode_mismatch", mk("policy_mode_mismatch", OutcomeSolved, ModeAutonomous, restricted,
		calls(tc("Read", CheckAllowed, 40, 100, 500))), key)

	// Malformed and tampered bundles, one check each. good is a signed,
	// evidence-complete bundle with three calls, re-made for each edit.
	good := func(name string) *Bundle {
		return mk(name, OutcomeSolved, ModeAutonomous, autonomous, writeCalls(CheckAllowed))
	}
	edit := func(name string, signed bool, fn func(d []byte) []byte, decode, verify []want) {
		k := key
		if !signed {
			k = nil
		}
		data := fn(mustEncode(t, good(name), k))
		if signed && len(data) >= HeaderSize+SignatureSize {
			data = resign(data, key)
		}
		add(name, data, decode, verify)
	}
	ws := func(w ...want) []want { return w }

	edit("short_input", false, func(d []byte) []byte { return d[:40] }, ws(mal("header")), nil)
	edit("bad_magic", true, func(d []byte) []byte { copy(d, "RVWW"); return d }, ws(mal("header.magic")), nil)
	edit("bad_version", true, func(d []byte) []byte { put16(d, offVersion, 2); return d }, ws(mal("header.version")), nil)
	{
		d := mustEncode(t, good("size_trailing_bytes"), key)
		add("size_trailing_bytes", append(d, "\x00\x00\x00junk"...), ws(mal("header.total_bundle_size")), nil)
	}
	{
		d := mustEncode(t, good("size_truncated"), key)
		add("size_truncated", d[:len(d)-40], ws(mal("header.total_bundle_size"), mal("sections[4].length")), nil)
	}
	{
		b := good("signed_too_short")
		b.HasSpec, b.HasPlan, b.HasDiff, b.HasTestLog, b.Calls = false, false, false, false, nil
		d := mustEncode(t, b, nil)
		put16(d, offFlags, get16(d, offFlags)|FlagSigned)
		add("signed_too_short", d, ws(mal("header.total_bundle_size")), nil)
	}
	edit("section_overflow", true, func(d []byte) []byte {
		off := sectionOffset(d, 4) // TEST_LOG, the last section
		put32(d, off+2, get32(d, off+2)+1)
		return d
	}, ws(mal("sections[4].length")), nil)
	edit("section_huge_length", true, func(d []byte) []byte {
		put32(d, sectionOffset(d, 0)+2, 0xFFFFFFFF)
		return d
	}, ws(mal("sections[0].length")), nil)
	edit("section_header_overflow", false, func(d []byte) []byte {
		d = append(d, 0x01, 0x00, 0x00)
		put32(d, offTotalSize, uint32(len(d)))
		return d
	}, ws(mal("sections[5]")), nil)
	{
		b := good("duplicate_tag")
		b.Unknown = []Section{{Tag: 0x7777, Value: []byte("a second spec")}}
		d := mustEncode(t, b, key)
		put16(d, sectionOffset(d, 5), TagSpec)
		add("duplicate_tag", resign(d, key), ws(mal("sections[5].tag")), nil)
	}
	edit("section_count_mismatch", true, func(d []byte) []byte {
		put16(d, offSectionCount, get16(d, offSectionCount)+1)
		return d
	}, ws(mal("header.section_count")), nil)
	edit("flag_set_without_section", true, func(d []byte) []byte {
		put16(d, offFlags, get16(d, offFlags)|FlagHasPostmortem)
		return d
	}, ws(mal("header.flags")), nil)
	edit("flag_missing_for_section", true, func(d []byte) []byte {
		put16(d, offFlags, get16(d, offFlags)&^FlagHasPlan)
		return d
	}, ws(mal("header.flags")), nil)
	edit("unknown_flag_bits", true, func(d []byte) []byte {
		put16(d, offFlags, get16(d, offFlags)|0x0080)
		return d
	}, ws(mal("header.flags")), nil)
	add("empty_trace", rawTrace(t, good("empty_trace"), nil, 0, key), ws(mal("trace")), nil)
	add("trace_short_record", rawTrace(t, good("trace_short_record"),
		append(record("Read", 0, 0, 4), 1, 2, 3, 4, 5), 2, key), ws(mal("trace[1]")), nil)
	add("trace_action_overflow", rawTrace(t, good("trace_action_overflow"),
		append(record("Read", 0, 0, 4), record("Grep", 0, 0, 200)...), 2, key), ws(mal("trace[1].action_len")), nil)
	add("trace_bad_policy_check", rawTrace(t, good("trace_bad_policy_check"),
		append(record("Read", 0, 0, 4), record("Edit", 7, 0, 4)...), 2, key), ws(mal("trace[1].policy_check")), nil)
	add("trace_nonzero_pad", rawTrace(t, good("trace_nonzero_pad"),
		append(record("Read", 0, 0, 4), record("Edit", 0, 0x5a, 4)...), 2, key), ws(mal("trace[1].pad")), nil)
	add("trace_action_not_utf8", rawTrace(t, good("trace_action_not_utf8"),
		append(record("Read", 0, 0, 4), record("Ed\xffit", 0, 0, 5)...), 2, key), ws(mal("trace[1].action")), nil)
	edit("tool_call_count_mismatch", true, func(d []byte) []byte {
		put16(d, offToolCallCount, 4)
		return d
	}, ws(mal("header.tool_call_count")), nil)
	edit("header_totals_mismatch", true, func(d []byte) []byte {
		put32(d, offTotalCost, get32(d, offTotalCost)+1)
		put32(d, offTotalLatency, 0)
		put32(d, offTotalTokens, math.MaxUint32)
		return d
	}, nil, ws(want{CodeHeaderTotalMismatch, "header.total_cost_microdollars"},
		want{CodeHeaderTotalMismatch, "header.total_latency_ms"},
		want{CodeHeaderTotalMismatch, "header.total_tokens"}))
	{
		d := mustEncode(t, good("hmac_mismatch_tampered"), key)
		d[sectionOffset(d, 0)+SectionHeaderSize+4] ^= 0x20 // one SPEC letter changes case
		add("hmac_mismatch_tampered", d, nil, ws(want{CodeHMACMismatch, "signature"}))
	}
	{
		// A signature stripped and the SIGNED flag cleared: well formed and
		// valid as an unsigned bundle. Callers that require signatures must
		// check Signed().
		d := mustEncode(t, good("signature_stripped"), key)
		d = d[:len(d)-SignatureSize]
		put16(d, offFlags, get16(d, offFlags)&^FlagSigned)
		put32(d, offTotalSize, uint32(len(d)))
		add("signature_stripped", d, nil, nil)
	}
	return out
}

// TestSamples checks that each generated sample fails exactly the check it
// is named for (or none), and that the files in testdata/rvww are what the
// generator makes; with -update it rewrites them.
func TestSamples(t *testing.T) {
	key := readKey(t)
	all := samples(t)
	names := map[string]bool{}
	for _, s := range all {
		if names[s.name] {
			t.Fatalf("duplicate sample name %s", s.name)
		}
		names[s.name] = true
		t.Run(s.name, func(t *testing.T) {
			path := filepath.Join(sampleDir, s.name+".rvww")
			if *update {
				if err := os.WriteFile(path, s.data, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if disk, err := os.ReadFile(path); err != nil {
				t.Fatalf("%v (run go test ./codec/rvww -update)", err)
			} else if !bytes.Equal(disk, s.data) {
				t.Fatalf("%s differs from the generator's output (run go test ./codec/rvww -update)", path)
			}

			b, err := Decode(s.data)
			if got := wants(codec.FindingsOf(err)); !slices.Equal(got, s.decode) {
				t.Fatalf("Decode findings = %v, want %v (err %v)", got, s.decode, err)
			}
			if err != nil {
				return
			}
			got := b.Verify([]Key{{Name: "other", Secret: []byte("not the key")}, {Name: "hmac_key.txt", Secret: key}})
			if w := wants(got); !slices.Equal(w, s.verify) {
				t.Fatalf("Verify findings = %v, want %v", got, s.verify)
			}
			if b.Signed() && len(s.verify) == 0 && b.VerifiedKey() != "hmac_key.txt" {
				t.Errorf("VerifiedKey = %q, want hmac_key.txt", b.VerifiedKey())
			}
		})
	}
	if !*update {
		// No stale files: every .rvww in the directory is generated.
		entries, err := os.ReadDir(sampleDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if name, ok := strings.CutSuffix(e.Name(), ".rvww"); ok && !names[name] {
				t.Errorf("%s is not made by the generator; delete it or add it to samples()", e.Name())
			}
		}
	}
}

func wants(fs []codec.Finding) []want {
	var out []want
	for _, f := range fs {
		out = append(out, want{f.Code, f.Field})
	}
	return out
}
