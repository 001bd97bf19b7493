package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/verifier/sandbox"
)

// runSandboxFlags are the flags the run tests add: none where the kernel
// gives the sandbox its namespaces; --sandbox none, said in the log, where
// it refuses them (the command then runs code only when asked).
func runSandboxFlags(t *testing.T) []string {
	t.Helper()
	if err := sandbox.Available(); err != nil {
		t.Logf("the kernel refuses the sandbox's namespaces (%v): running with --sandbox none", err)
		return []string{"--sandbox", "none"}
	}
	return nil
}

// requirePython skips tests of python requests where the sandbox has no
// python3.
func requirePython(t *testing.T) {
	t.Helper()
	if _, err := sandbox.LookPath("python3"); err != nil {
		t.Skipf("skipping: no python3 in the system directories (%v)", err)
	}
}

// newRunLedger makes a ledger in a new directory and returns its path.
func newRunLedger(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "l")
	if _, stderr, code := runLedger(t, nil, "init", "--dir", dir, "--origin", "run.example/log"); code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	return dir
}

// runLine is one line of run vrf --json.
type runLine struct {
	File    string          `json:"file"`
	Status  string          `json:"status"`
	Seq     *int64          `json:"seq"`
	Reason  string          `json:"reason"`
	Receipt json.RawMessage `json:"receipt"`
}

// receiptFields are the receipt members the tests look at.
type receiptFields struct {
	ReceiptID string `json:"receipt_id"`
	Tier      int    `json:"tier"`
	Verdict   string `json:"verdict"`
	AgentID   string `json:"agent_id"`
	Metadata  struct {
		Sandboxed       *bool  `json:"sandboxed"`
		Sandbox         string `json:"sandbox"`
		PreviousReceipt string `json:"previous_receipt"`
		ChainPosition   *int64 `json:"chain_position"`
	} `json:"metadata"`
	Signature struct {
		SignerID string `json:"signer_id"`
	} `json:"signature"`
}

func parseRunLines(t *testing.T, out string) []runLine {
	t.Helper()
	var lines []runLine
	for _, s := range strings.Split(strings.TrimSpace(out), "\n") {
		if s == "" {
			continue
		}
		var l runLine
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("not a JSON line: %q: %v", s, err)
		}
		lines = append(lines, l)
	}
	return lines
}

func receiptOf(t *testing.T, l runLine) receiptFields {
	t.Helper()
	var r receiptFields
	if err := json.Unmarshal(l.Receipt, &r); err != nil {
		t.Fatalf("%s: receipt: %v", l.File, err)
	}
	return r
}

// checkStored reads each receipt back from the ledger (get --raw) and
// checks it four ways: it is the receipt --json printed, `ledger inspect`
// finds it VALID, and two implementations of the reference signing
// algorithm that share no code with the ledger (vrfcheck_test.go and
// testdata/vrf_check.py) verify its content hash and signature.
func checkStored(t *testing.T, dir string, lines []runLine) {
	t.Helper()
	var files []string
	for _, l := range lines {
		if l.Status != "appended" {
			continue
		}
		r := receiptOf(t, l)
		raw, stderr, code := runLedger(t, nil, "get", "--dir", dir, "--raw", r.ReceiptID)
		if code != 0 {
			t.Fatalf("get %s: exit %d: %s", r.ReceiptID, code, stderr)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(raw)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(compact.Bytes(), l.Receipt) {
			t.Errorf("%s: --json receipt differs from the stored one:\n%s\n%s", l.File, l.Receipt, compact.Bytes())
		}
		p := filepath.Join(t.TempDir(), r.ReceiptID+".json")
		if err := os.WriteFile(p, []byte(raw), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
		if out, stderr, code := runLedger(t, nil, "inspect", p); code != 0 || !strings.Contains(out, "VALID") {
			t.Errorf("inspect %s: exit %d\n%s%s", l.File, code, out, stderr)
		}
		if err := independentCheck([]byte(raw)); err != nil {
			t.Errorf("%s: independent check: %v", l.File, err)
		}
	}
	if len(files) > 0 {
		pythonCheck(t, files...)
	}
}

// TestRunVRF runs tier-0 and tier-1 requests, a malformed one, a missing
// file and one on standard input through `ledger run vrf`: the decided
// ones are appended in request order with receipts signed by the log key
// that say which sandbox ran them; the others are reported with exit 3
// and nothing appended for them.
func TestRunVRF(t *testing.T) {
	requirePython(t)
	dir := newRunLedger(t)
	sb := runSandboxFlags(t)
	bad := filepath.Join(t.TempDir(), "tier2.json")
	if err := os.WriteFile(bad, []byte(`{"tier": 2, "output": {"content": "x"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdin, err := os.ReadFile("../../testdata/run/tier0_sort.json")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "vrf", "--dir", dir, "--json",
		"testdata/run/tier0_sort.json", bad, "testdata/run/tier0_partial.json", "testdata/run/missing.json",
		"testdata/run/tier1_schema.json", "-"}, sb...)
	out, stderr, code := runLedger(t, stdin, args...)
	if code != exitMalformed {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitMalformed, out, stderr)
	}
	lines := parseRunLines(t, out)
	want := []struct {
		status, verdict string
		tier            int
	}{{"appended", "pass", 0}, {"malformed", "", 0}, {"appended", "partial", 0}, {"unreadable", "", 0}, {"appended", "pass", 1}, {"appended", "pass", 0}}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	logKey, err := ledger.LogKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	signer := keys.SignerID(logKey.Public().(ed25519.PublicKey))
	seq := int64(0)
	for i, w := range want {
		l := lines[i]
		if l.Status != w.status {
			t.Errorf("line %d (%s): status %s (%s), want %s", i, l.File, l.Status, l.Reason, w.status)
			continue
		}
		if w.status != "appended" {
			if l.Seq != nil || string(l.Receipt) != "null" || l.Reason == "" {
				t.Errorf("line %d: %+v", i, l)
			}
			continue
		}
		if l.Seq == nil || *l.Seq != seq {
			t.Errorf("line %d: seq %v, want %d (request order)", i, l.Seq, seq)
		}
		seq++
		r := receiptOf(t, l)
		if r.Verdict != w.verdict || r.Tier != w.tier {
			t.Errorf("line %d (%s): verdict %s tier %d, want %s tier %d", i, l.File, r.Verdict, r.Tier, w.verdict, w.tier)
		}
		if r.Metadata.Sandboxed == nil || r.Metadata.Sandbox == "" {
			t.Errorf("line %d: receipt does not say which sandbox ran it: %s", i, l.Receipt)
		} else if len(sb) == 0 && (!*r.Metadata.Sandboxed || !strings.HasPrefix(r.Metadata.Sandbox, "linux-namespaces(")) {
			t.Errorf("line %d: sandboxed %v, sandbox %q", i, *r.Metadata.Sandboxed, r.Metadata.Sandbox)
		}
		if r.Signature.SignerID != signer {
			t.Errorf("line %d: signed by %s, want the log key %s", i, r.Signature.SignerID, signer)
		}
	}
	if !strings.Contains(lines[1].Reason, "Tier 2 not supported") {
		t.Errorf("malformed request: %q", lines[1].Reason)
	}
	checkStored(t, dir, lines)

	// Text output, --fail-unless-pass and --key.
	other := filepath.Join(t.TempDir(), "other.key")
	if _, stderr, code := runLedger(t, nil, "init", "--dir", filepath.Join(t.TempDir(), "k")); code != 0 {
		t.Fatal(stderr)
	}
	priv, err := keys.GenerateEd25519()
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.WritePrivateKeyFile(other, priv); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = runLedger(t, nil, append([]string{"run", "vrf", "--dir", dir, "--fail-unless-pass", "--key", other,
		"testdata/run/tier0_sort.json", "testdata/run/tier0_partial.json"}, sb...)...)
	if code != exitNotPass {
		t.Errorf("--fail-unless-pass with a partial verdict: exit %d, want %d\n%s%s", code, exitNotPass, out, stderr)
	}
	if !strings.Contains(out, "tier0_partial.json: partial (tier 0: 1 passed, 1 failed, 0 errors;") || !strings.Contains(out, "appended as event 5") {
		t.Errorf("text output:\n%s", out)
	}
	out, _, code = runLedger(t, nil, append([]string{"run", "vrf", "--dir", dir, "--fail-unless-pass", "--json", "--key", other,
		"testdata/run/tier0_sort.json"}, sb...)...)
	lines = parseRunLines(t, out)
	if code != 0 || len(lines) != 1 || receiptOf(t, lines[0]).Signature.SignerID != keys.SignerID(priv.Public().(ed25519.PublicKey)) {
		t.Errorf("--key: exit %d\n%s", code, out)
	}
	checkStored(t, dir, lines)
	if _, stderr, code := runLedger(t, nil, "audit", "--dir", dir); code != 0 {
		t.Errorf("audit: exit %d: %s", code, stderr)
	}
}

// TestRunVRFSandboxNone runs a request with --sandbox none: the receipt
// says its code was not sandboxed.
func TestRunVRFSandboxNone(t *testing.T) {
	requirePython(t)
	dir := newRunLedger(t)
	out, stderr, code := runLedger(t, nil, "run", "vrf", "--dir", dir, "--json", "--sandbox", "none", "testdata/run/tier0_sort.json")
	if code != 0 || !strings.Contains(stderr, "--sandbox none") {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	lines := parseRunLines(t, out)
	r := receiptOf(t, lines[0])
	if r.Metadata.Sandboxed == nil || *r.Metadata.Sandboxed || r.Metadata.Sandbox != "none" || r.Verdict != "pass" {
		t.Errorf("receipt: %s", lines[0].Receipt)
	}
	checkStored(t, dir, lines)
}

// TestRunVRFUsage checks the run vrf invocations refused before anything
// runs.
func TestRunVRFUsage(t *testing.T) {
	dir := newRunLedger(t)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"run", "vrf", "--dir", dir}, exitUsage, "no input"},
		{[]string{"run", "vrf", "--dir", dir, "--jobs", "-1", "testdata/run/tier0_sort.json"}, exitUsage, "--jobs"},
		{[]string{"run", "vrf", "--dir", dir, "--sandbox", "docker", "testdata/run/tier0_sort.json"}, exitUsage, "--sandbox"},
		{[]string{"run", "vrf", "--dir", dir, "--agent", "", "testdata/run/tier0_sort.json"}, exitUsage, "--agent"},
		{[]string{"run", "vrf", "--dir", dir, "--key", "/nonexistent.key", "testdata/run/tier0_sort.json"}, exitUsage, "--key"},
		{[]string{"run", "vrf", "--dir", filepath.Join(dir, "nope"), "testdata/run/tier0_sort.json"}, exitUsage, "not a ledger"},
	} {
		_, stderr, code := runLedger(t, nil, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, want %d with %q; stderr %q", tc.args, code, tc.code, tc.msg, stderr)
		}
	}
}

// TestRunVRFAgentChain checks --agent: receipts continue the agent's chain
// in request order across calls, and runs of several processes at once
// leave one unforked chain (each appends under the store's lock, reading
// the head after taking it).
func TestRunVRFAgentChain(t *testing.T) {
	requirePython(t)
	dir := newRunLedger(t)
	sb := runSandboxFlags(t)
	runAgent := func(files ...string) ([]runLine, string, int) {
		out, stderr, code := runLedger(t, nil, append(append([]string{"run", "vrf", "--dir", dir, "--json", "--agent", "agent-7"}, sb...), files...)...)
		return parseRunLines(t, out), stderr, code
	}
	var chain []receiptFields
	for _, files := range [][]string{{"testdata/run/tier0_sort.json", "testdata/run/tier0_partial.json"}, {"testdata/run/tier1_schema.json"}} {
		lines, stderr, code := runAgent(files...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		for _, l := range lines {
			chain = append(chain, receiptOf(t, l))
		}
	}
	checkChain(t, chain)

	// Four processes at once. Today a process that finds the store held
	// fails to open it (the writer lock with --wait lands separately);
	// every receipt that was appended joins the one chain.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			lines, stderr, code := runAgent("testdata/run/tier0_sort.json", "testdata/run/tier1_schema.json")
			mu.Lock()
			defer mu.Unlock()
			for _, l := range lines {
				if l.Status != "appended" {
					t.Errorf("process %d: %s: %s %s", p, l.File, l.Status, l.Reason)
					continue
				}
				chain = append(chain, receiptOf(t, l))
			}
			if code != 0 && len(lines) > 0 {
				t.Errorf("process %d: exit %d after reporting: %s", p, code, stderr)
			}
			if code != 0 {
				t.Logf("process %d did not get the store: exit %d: %s", p, code, strings.TrimSpace(stderr))
			}
		})
	}
	wg.Wait()
	checkChain(t, chain)
	if _, stderr, code := runLedger(t, nil, "audit", "--dir", dir); code != 0 {
		t.Errorf("audit: exit %d: %s", code, stderr)
	}
}

// checkChain checks that rs are one chain of agent-7: positions 0..n-1,
// each continuing the receipt at the position before it.
func checkChain(t *testing.T, rs []receiptFields) {
	t.Helper()
	at := map[int64]receiptFields{}
	for _, r := range rs {
		if r.AgentID != "agent-7" || r.Metadata.ChainPosition == nil {
			t.Fatalf("receipt %s: agent %q, position %v", r.ReceiptID, r.AgentID, r.Metadata.ChainPosition)
		}
		p := *r.Metadata.ChainPosition
		if prev, dup := at[p]; dup {
			t.Fatalf("fork: %s and %s both at position %d", prev.ReceiptID, r.ReceiptID, p)
		}
		at[p] = r
	}
	for p := int64(0); p < int64(len(rs)); p++ {
		r, ok := at[p]
		if !ok {
			t.Fatalf("no receipt at position %d of %d", p, len(rs))
		}
		want := ""
		if p > 0 {
			want = at[p-1].ReceiptID
		}
		if r.Metadata.PreviousReceipt != want {
			t.Errorf("position %d: previous_receipt %q, want %q", p, r.Metadata.PreviousReceipt, want)
		}
	}
}

// runAVIRSpec is a specification whose benchmarks print fixed values: two
// pass, one fails, so the verdict is PARTIAL whatever the machine.
const runAVIRSpec = `avir_version: "1.0.0"
system: {name: "Fixed System", version: "0.1.0"}
capabilities:
  - {name: "speed", description: "How fast", category: "performance", benchmarks: [fast, slow, steady]}
benchmarks:
  - id: fast
    description: "Prints 100"
    methodology: "Print the value"
    target: 100
    unit: "ops/s"
    tolerance: 0.1
    setup: ["echo 100 >value"]
    command: "cat value"
  - id: slow
    description: "Prints 5"
    methodology: "Print the value"
    target: 50
    unit: "ops/s"
    tolerance: 0.1
    runs: 3
    outlier_policy: none
    command: "echo 5"
  - id: steady
    description: "Prints 2.5"
    methodology: "Print the value"
    target: 3
    unit: "ms"
    tolerance: 0.2
    lower_is_better: true
    command: "echo 2.5"
`

// avirLine is run avir's --json.
type avirLine struct {
	File       string `json:"file"`
	Status     string `json:"status"`
	Seq        *int64 `json:"seq"`
	Verdict    string `json:"verdict"`
	Level      string `json:"level"`
	Sandbox    string `json:"sandbox"`
	Benchmarks []struct {
		ID, Status, Verdict, Reason string
		Mean                        *float64
		Runs                        int
	} `json:"benchmarks"`
	Spec *struct {
		Status string `json:"status"`
		Seq    *int64 `json:"seq"`
		ID     string `json:"id"`
	} `json:"spec"`
	Attestation json.RawMessage `json:"attestation"`
}

// TestRunAVIR runs a specification's benchmarks through `ledger run
// avir`: the specification and the signed attestation are appended and
// the attestation verifies against the specification; a benchmark that
// cannot be measured makes the verdict INVALID with exit 4 and nothing
// appended; --benchmark attests the reduced specification.
func TestRunAVIR(t *testing.T) {
	dir := newRunLedger(t)
	sb := runSandboxFlags(t)
	spec := filepath.Join(t.TempDir(), "fixed.yaml")
	if err := os.WriteFile(spec, []byte(runAVIRSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(wantCode int, args ...string) avirLine {
		t.Helper()
		out, stderr, code := runLedger(t, nil, append(append([]string{"run", "avir", "--dir", dir, "--json"}, sb...), args...)...)
		if code != wantCode {
			t.Fatalf("run avir %v: exit %d, want %d\n%s%s", args, code, wantCode, out, stderr)
		}
		var l avirLine
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Fatalf("run avir %v: %v: %q", args, err, out)
		}
		return l
	}
	l := run(exitNotPass, "--fail-unless-pass", spec)
	if l.Status != "appended" || l.Verdict != "PARTIAL" || l.Seq == nil || *l.Seq != 1 || l.Spec == nil || l.Spec.Status != "appended" || *l.Spec.Seq != 0 {
		t.Fatalf("status %s verdict %s seq %v spec %+v", l.Status, l.Verdict, l.Seq, l.Spec)
	}
	if len(l.Benchmarks) != 3 || l.Benchmarks[0].Verdict != "PASS" || *l.Benchmarks[0].Mean != 100 || l.Benchmarks[1].Verdict != "FAIL" || l.Benchmarks[1].Runs != 3 {
		t.Errorf("benchmarks: %+v", l.Benchmarks)
	}
	if len(sb) == 0 && !strings.HasPrefix(l.Sandbox, "linux-namespaces(") {
		t.Errorf("sandbox %q", l.Sandbox)
	}
	att := filepath.Join(t.TempDir(), "att.json")
	raw, _, code := runLedger(t, nil, "get", "--dir", dir, "--raw", "1")
	if code != 0 {
		t.Fatal("get 1")
	}
	if err := os.WriteFile(att, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := runLedger(t, nil, "inspect", "--spec", spec, att); code != 0 || !strings.Contains(out, "VALID") {
		t.Errorf("inspect --spec: exit %d\n%s%s", code, out, stderr)
	}
	// The same specification again: it is already in the ledger, which is
	// fine; a new attestation is appended.
	l = run(0, spec)
	if l.Spec.Status != "replay" || *l.Spec.Seq != 0 || *l.Seq != 2 {
		t.Errorf("second run: spec %+v, seq %v", l.Spec, l.Seq)
	}
	// One benchmark: VERIFIED, over the reduced specification.
	l = run(0, "--benchmark", "fast", "--fail-unless-pass", spec)
	if l.Verdict != "VERIFIED" || l.Spec.Status != "appended" || len(l.Benchmarks) != 1 {
		t.Errorf("--benchmark fast: verdict %s, spec %+v, %d benchmarks", l.Verdict, l.Spec, len(l.Benchmarks))
	}
	reduced, _, _ := runLedger(t, nil, "get", "--dir", dir, "--raw", fmt.Sprint(*l.Spec.Seq))
	if !strings.Contains(reduced, "ledger_subset_of") {
		t.Errorf("reduced specification:\n%s", reduced)
	}
	// Not runnable: INVALID, nothing appended.
	l = run(exitInvalid, "testdata/run/avir_not_runnable.yaml")
	if l.Status != "invalid" || l.Verdict != "INVALID" || l.Seq != nil || string(l.Attestation) != "null" || l.Spec != nil ||
		len(l.Benchmarks) != 2 || l.Benchmarks[0].Status != "skipped" || l.Benchmarks[1].Status != "not_runnable" ||
		!strings.Contains(l.Benchmarks[1].Reason, `no "command" field`) {
		t.Errorf("not runnable: status %s verdict %s seq %v spec %v benchmarks %+v", l.Status, l.Verdict, l.Seq, l.Spec, l.Benchmarks)
	}
	out, _, _ := runLedger(t, nil, "log", "--dir", dir, "--json")
	if n := strings.Count(out, "\n"); n != 5 {
		t.Errorf("%d events after the INVALID run, want 5", n)
	}
	// Text output of an INVALID run.
	out, stderr, code := runLedger(t, nil, append([]string{"run", "avir", "--dir", dir, "testdata/run/avir_not_runnable.yaml"}, sb...)...)
	if code != exitInvalid || !strings.Contains(out, "INVALID: 2 of 2 benchmarks not measured") ||
		!strings.Contains(stderr, "nothing was signed or appended") {
		t.Errorf("text: exit %d\n%s%s", code, out, stderr)
	}
	// A malformed specification, and an unknown benchmark.
	if _, stderr, code := runLedger(t, nil, "run", "avir", "--dir", dir, "testdata/avir/bad_runs_zero.spec.json"); code != exitMalformed {
		t.Errorf("malformed spec: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runLedger(t, nil, append([]string{"run", "avir", "--dir", dir, "--benchmark", "nope", spec}, sb...)...); code != exitMalformed || !strings.Contains(stderr, "nope") {
		t.Errorf("unknown benchmark: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runLedger(t, nil, "audit", "--dir", dir); code != 0 {
		t.Errorf("audit: exit %d: %s", code, stderr)
	}
}
