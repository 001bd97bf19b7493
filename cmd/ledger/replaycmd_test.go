package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The crafted tasks of the replay tests.
const (
	// replayTask has three attempts: failed (and its log agrees), solved
	// with a failing test (the log contradicts it), solved (it agrees).
	replayTask = "11111111-2222-4333-8444-555555555555"
	// replayNoiseTask's one bundle claims solved over a log no runner
	// printed: inconclusive.
	replayNoiseTask = "22222222-3333-4444-8555-666666666666"
	replayInputs    = "cmd/ledger/testdata/replay/inputs"
	demoKey         = "testdata/vectors/rvww/hmac_key.txt"
)

// replayLedger builds the ledger the replay goldens read: what the first
// ledger of `make demo` appends (scripts/demo.sh: a receipt chain, then
// receipts, an AVIR specification and attestations, witness bundles
// signed with a key it does not register), then witness bundles built by
// `ledger witness build` with fixed task ids and times, signed with a
// test key registered as "fleet".
func replayLedger(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ledger")
	run := func(args ...string) {
		t.Helper()
		if out, stderr, code := runLedgerEnv(t, nil, nil, append(args, "--dir", dir)...); code != 0 {
			t.Fatalf("ledger %v: exit %d\n%s%s", args, code, out, stderr)
		}
	}
	run("init", "--origin", "replay.test")
	run("append", "testdata/vrf/chain_3.json", "testdata/vrf/chain_1.json", "testdata/vrf/chain_2.json")
	run("append", "--hmac-key-file", demoKey,
		"testdata/vectors/vrf/01_tier0_pass.json",
		"testdata/vrf/ref_partial.json",
		"testdata/vrf/ref_tier1_null_environment.json",
		"testdata/vectors/avir/01_verified_L2.spec.json",
		"testdata/vectors/avir/01_verified_L2.attestation.json",
		"testdata/avir/partial_signed.attestation.json",
		"testdata/vectors/rvww/01_solved_autonomous_signed.rvww",
		"testdata/rvww/valid_solved_restricted_signed.rvww",
		"testdata/rvww/valid_failed_approved_signed.rvww",
		"testdata/rvww/policy_denied_tool_restricted.rvww")
	run("key", "add-hmac", "fleet", "testdata/demo/hmac_key.bin")
	build := func(task, created, outcome, log string, retry string) {
		t.Helper()
		in := func(name string) string { return filepath.Join(replayInputs, name) }
		run("witness", "build", "--append", "--hmac-key-file", "testdata/demo/hmac_key.bin",
			"--task-id", task, "--created", created, "--retry", retry, "--outcome", outcome, "--policy", "approved",
			"--spec", in("spec.txt"), "--plan", in("plan.txt"), "--diff", in("diff.patch"), "--trace", in("trace.jsonl"),
			"--test-log", in(log))
	}
	build(replayTask, "2026-02-03T09:00:00Z", "failed", "tests-fail.log", "0")       // event 13
	build(replayTask, "2026-02-03T10:00:00Z", "solved", "tests-fail.log", "1")       // event 14
	build(replayTask, "2026-02-03T11:00:00Z", "solved", "tests-pass.log", "2")       // event 15
	build(replayNoiseTask, "2026-02-04T09:00:00Z", "solved", "tests-noise.log", "0") // event 16
	return dir
}

// replayCase is one golden replay: the arguments (--dir added), standard
// input, and the exit code.
type replayCase struct {
	golden string
	code   int
	args   []string
	stdin  string // a file to give as standard input
}

var replayCases = []replayCase{
	// The demo's documents.
	{"bundle-demo", exitOK, []string{"replay", "9", "--hmac-key-file", demoKey}, ""},
	{"bundle-demo.json", exitOK, []string{"replay", "9", "--hmac-key-file", demoKey, "--json"}, ""},
	{"bundle-key-not-registered", exitInvalid, []string{"replay", "73656564-7265-662d-7461-736b2d303031"}, ""},
	{"bundle-failed-approved", exitInvalid, []string{"replay", "11", "--hmac-key-file", demoKey}, ""},
	{"bundle-denied-tool", exitInvalid, []string{"replay", "ce81fd05-f54d-45fc-9440-f470758b459b@1767225615000000000", "--hmac-key-file", demoKey}, ""},
	{"receipt-in-chain", exitOK, []string{"replay", "7fcab00c-1855-49ad-8b40-1d0bfd4a58f3"}, ""},
	{"receipt-in-chain.json", exitOK, []string{"replay", "7fcab00c", "--json"}, ""},
	{"receipt-chain-head", exitOK, []string{"replay", "0"}, ""},
	{"receipt-partial", exitOK, []string{"replay", "4"}, ""},
	{"attestation-with-spec", exitOK, []string{"replay", "7"}, ""},
	{"attestation-with-spec.json", exitOK, []string{"replay", "7", "--json"}, ""},
	{"attestation-partial", exitOK, []string{"replay", "8"}, ""},
	// Crafted bundles: several attempts of one task, a contradiction, a
	// log no runner printed.
	{"task-latest", exitOK, []string{"replay", replayTask}, ""},
	{"task-latest.json", exitOK, []string{"replay", strings.ToUpper(replayTask), "--json"}, ""},
	{"task-all", exitInvalid, []string{"replay", replayTask, "--all"}, ""},
	{"task-all.json", exitInvalid, []string{"replay", "13", "--all", "--json"}, ""},
	{"contradicts", exitInvalid, []string{"replay", "14"}, ""},
	{"contradicts.json", exitInvalid, []string{"replay", "14", "--json"}, ""},
	{"inconclusive", exitOK, []string{"replay", "22222222-3333"}, ""},
	{"inconclusive.json", exitOK, []string{"replay", replayNoiseTask, "--json"}, ""},
	// Documents outside the ledger.
	{"file-bundle", exitOK, []string{"replay", "testdata/rvww/valid_solved_approved_signed.rvww", "--hmac-key-file", demoKey}, ""},
	{"file-bundle-stdin", exitInvalid, []string{"replay", "-"}, "testdata/vectors/rvww/01_solved_autonomous_signed.rvww"},
	{"file-receipt-disagrees", exitInvalid, []string{"replay", "testdata/vrf/verdict_disagrees_counts.json"}, ""},
	{"file-attestation-tampered", exitInvalid, []string{"replay", "testdata/avir/bad_verdict_tampered.attestation.json"}, ""},
	{"file-attestation-tampered.json", exitInvalid, []string{"replay", "testdata/avir/bad_verdict_tampered.attestation.json", "--json"}, ""},
}

// TestReplayGolden replays the demo's documents, crafted bundles and files
// with the real binary, twice each: the two runs must be byte-identical,
// exit as expected, and match cmd/ledger/testdata/replay/NAME.golden
// (go test ./cmd/ledger -run TestReplay -update rewrites them). Each
// --json line must have exactly the keys of its documented shape.
func TestReplayGolden(t *testing.T) {
	dir := replayLedger(t)
	for _, tc := range replayCases {
		t.Run(tc.golden, func(t *testing.T) {
			var stdin []byte
			if tc.stdin != "" {
				stdin = []byte(readFile(t, filepath.Join("../..", tc.stdin)))
			}
			args := append(slices.Clone(tc.args), "--dir", dir)
			out, stderr, code := runLedgerEnv(t, stdin, nil, args...)
			if code != tc.code {
				t.Fatalf("ledger %v: exit %d, want %d\n%s%s", args, code, tc.code, out, stderr)
			}
			if stderr != "" {
				t.Errorf("stderr: %q", stderr)
			}
			again, _, code2 := runLedgerEnv(t, stdin, nil, args...)
			if again != out || code2 != code {
				t.Fatalf("a second run differs (exit %d, then %d)", code, code2)
			}
			if strings.Contains(out, dir) || strings.Contains(out, os.TempDir()) || strings.Contains(out, "\x1b[") {
				t.Errorf("the output names a temporary path or has escapes:\n%s", out)
			}
			if strings.HasSuffix(tc.golden, ".json") {
				checkReplayJSON(t, out)
			}
			checkReplayGolden(t, tc.golden, out)
		})
	}
}

// checkReplayJSON checks each line's keys against the shape of its kind.
func checkReplayJSON(t *testing.T, out string) {
	t.Helper()
	shapes := map[string]reflect.Type{
		"rvww":             reflect.TypeFor[replayBundleJSON](),
		"vrf":              reflect.TypeFor[replayReceiptJSON](),
		"avir-attestation": reflect.TypeFor[replayAttestationJSON](),
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		typ, ok := shapes[v["kind"].(string)]
		if !ok {
			t.Fatalf("kind %v", v["kind"])
		}
		all, always := jsonKeys(typ)
		for k := range v {
			if !slices.Contains(all, k) {
				t.Errorf("key %q is not in the documented shape %v", k, all)
			}
		}
		for _, k := range always {
			if _, ok := v[k]; !ok {
				t.Errorf("documented key %q missing", k)
			}
		}
		if v["kind"] == "rvww" {
			for _, k := range []string{"outcome_check", "tests"} {
				if v[k] == nil {
					t.Errorf("no %s", k)
				}
			}
		}
	}
}

// checkReplayGolden compares got with testdata/replay/NAME.golden, or
// rewrites it under -update.
func checkReplayGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata/replay", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/ledger -run TestReplay -update)", err)
	}
	if string(want) != got {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs at line %d:\n got %q\nwant %q", path, i+1, g, w)
			}
		}
	}
}

// TestReplayColour: the diff and the verdicts are coloured on a terminal,
// never with NO_COLOR, and --json never.
func TestReplayColour(t *testing.T) {
	dir := replayLedger(t)
	args := []string{"replay", replayTask, "--dir", dir}
	term, _, code := runOnTerminal(t, nil, false, args...)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, term)
	}
	for _, want := range []string{"\x1b[32m+\tfor i := 0", "\x1b[31m-\tfor i := 1", "\x1b[32mmatches\x1b[0m", "\x1b[32mpass\x1b[0m"} {
		if !strings.Contains(term, want) {
			t.Errorf("the terminal shows no %q:\n%s", want, term)
		}
	}
	for _, env := range [][]string{{"NO_COLOR=1"}, {"TERM=dumb"}} {
		plain, _, _ := runOnTerminal(t, env, false, args...)
		if strings.Contains(plain, "\x1b[") {
			t.Errorf("%v: colour on the terminal:\n%s", env, plain)
		}
	}
	js, _, _ := runOnTerminal(t, nil, false, append(args, "--json")...)
	if strings.Contains(js, "\x1b[") {
		t.Errorf("--json has colour:\n%s", js)
	}
}
