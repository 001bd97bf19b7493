package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/verifier/witness"
)

// witnessJSON is witness build's --json.
type witnessJSON struct {
	Output     *string `json:"output"`
	ID         string  `json:"id"`
	TaskID     string  `json:"task_id"`
	CreatedNS  uint64  `json:"created_ns"`
	Outcome    string  `json:"outcome"`
	Bytes      int     `json:"bytes"`
	Signed     bool    `json:"signed"`
	Key        *string `json:"key"`
	Policy     struct{ Name, Hash, Mode string }
	Calls      int `json:"calls"`
	Violations []struct {
		Code      string `json:"code"`
		CallIndex int    `json:"call_index"`
	} `json:"violations"`
	Appended *struct {
		Status string `json:"status"`
		Seq    *int64 `json:"seq"`
	} `json:"appended"`
}

// TestWitnessBuild builds bundles through `ledger witness build`: the
// bytes are verifier/witness's for the same parts, the bundle verifies
// under its key, violations are reported without failing the build, and
// --append admits it (with a note while its key is not registered).
func TestWitnessBuild(t *testing.T) {
	work := t.TempDir()
	dir := newRunLedger(t)
	key := filepath.Join(work, "ci.hmac")
	if err := os.WriteFile(key, []byte("ci-runner-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(work, "spec.md")
	if err := os.WriteFile(spec, []byte("Fix the off-by-one in pagination\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	trace := "verifier/witness/testdata/traces/failed_restricted.jsonl"
	out := filepath.Join(work, "b.rvww")
	const task = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
	stdout, stderr, code := runLedger(t, nil, "witness", "build", "--json", "--spec", spec, "--trace", trace,
		"--outcome", "failed", "--policy", "restricted", "--task-id", task, "--created", "2026-11-01T10:00:00Z",
		"--retry", "2", "--hmac-key-file", key, "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	var j witnessJSON
	if err := json.Unmarshal([]byte(stdout), &j); err != nil {
		t.Fatal(err)
	}
	if j.TaskID != task || j.Outcome != "failed" || !j.Signed || j.Key == nil || j.Policy.Name != "restricted" ||
		j.Policy.Hash != "66fb836fa37e48ef" || j.Calls != 4 || len(j.Violations) != 2 || j.Appended != nil || j.Output == nil {
		t.Errorf("--json: %s", stdout)
	}
	// The same parts through the library give the same bytes.
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	traceData, _ := os.ReadFile("../../" + trace)
	calls, err := witness.ParseTrace(trace, traceData)
	if err != nil {
		t.Fatal(err)
	}
	pol, _ := witness.DefaultPolicy("restricted")
	id, _ := witness.ParseTaskID(task)
	want, err := witness.Build(witness.Parts{TaskID: id, Created: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC),
		Outcome: rvww.OutcomeFailed, Policy: &pol, RetryCount: 2, Spec: []byte("Fix the off-by-one in pagination\n"),
		Calls: calls, TraceInput: trace}, witness.Options{Key: []byte("ci-runner-secret")})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want.Bundle) || j.Bytes != len(got) {
		t.Errorf("the command wrote %d bytes that differ from witness.Build's %d", len(got), len(want.Bundle))
	}
	if o, stderr, code := runLedger(t, nil, "inspect", "--hmac-key-file", key, out); code != 0 || !strings.Contains(o, "VALID") {
		t.Errorf("inspect: exit %d\n%s%s", code, o, stderr)
	}

	// --append with an unregistered key: admitted, with a note; text
	// output names the violations on stderr.
	stdout, stderr, code = runLedger(t, nil, "witness", "build", "--dir", dir, "--trace", trace, "--outcome", "failed",
		"--policy", "restricted", "--task-id", task, "--hmac-key-file", key, "--append")
	if code != 0 || !strings.Contains(stdout, "appended as event 0") || !strings.Contains(stderr, "is not registered in this ledger") ||
		strings.Count(stderr, "policy violation: denied_tool") != 2 {
		t.Errorf("--append: exit %d\n%s%s", code, stdout, stderr)
	}
	// Registered key, registered policy (by name), bundle to stdout too.
	if _, stderr, code := runLedger(t, nil, "key", "add-hmac", "--dir", dir, "ci", key); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runLedger(t, nil, "policy", "add", "--dir", dir, "testdata/rvww/policies/custom_read_grep.json"); code != 0 {
		t.Fatal(stderr)
	}
	bundle, stderr, code := runLedger(t, nil, "witness", "build", "--dir", dir, "--outcome", "solved", "--policy", "read-grep-small",
		"--task-id", task, "--hmac-key-file", key, "--append", "-o", "-")
	if code != 0 || strings.Contains(stderr, "not registered") || !strings.Contains(stderr, "appended as event 1") {
		t.Errorf("registered key and policy: exit %d: %s", code, stderr)
	}
	b, err := rvww.Decode([]byte(bundle))
	if err != nil || b.Header.PolicyHash != [8]byte{0x7c, 0xc2, 0xa0, 0xd5, 0xea, 0x56, 0x2a, 0xc8} {
		t.Errorf("bundle on stdout: %v", err)
	}
	if o, _, _ := runLedger(t, nil, "chain", "--dir", dir, task); strings.Count(o, "\n") != 2 {
		t.Errorf("task history:\n%s", o)
	}
	if _, stderr, code := runLedger(t, nil, "audit", "--dir", dir); code != 0 {
		t.Errorf("audit: %s", stderr)
	}

	// Refusals before anything is built.
	bad := filepath.Join(work, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"tool\":\"Read\"}\n{\"tool\":\"Bash\",\"latency_ms\":-1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--policy", "restricted", "-o", out}, exitUsage, "--outcome is required"},
		{[]string{"--outcome", "solved", "-o", out}, exitUsage, "--policy is required"},
		{[]string{"--outcome", "done", "--policy", "restricted", "-o", out}, exitUsage, `got "done"`},
		{[]string{"--outcome", "solved", "--policy", "restricted"}, exitUsage, "nothing to do"},
		{[]string{"--outcome", "solved", "--policy", "restricted", "-o", "-", "--json"}, exitUsage, "-o -"},
		{[]string{"--outcome", "solved", "--policy", "restricted", "--append", "--dir", dir}, exitUsage, "--allow-unsigned"},
		{[]string{"--outcome", "solved", "--policy", "nobody", "-o", out, "--dir", dir}, exitUsage, "no policy of that name"},
		{[]string{"--outcome", "solved", "--policy", "restricted", "--task-id", "xyz", "-o", out}, exitUsage, "--task-id"},
		{[]string{"--outcome", "solved", "--policy", "restricted", "--retry", "70000", "-o", out}, exitUsage, "--retry"},
		{[]string{"--outcome", "solved", "--policy", "restricted", "--trace", bad, "-o", out}, exitMalformed, "bad.jsonl:2"},
		{[]string{"--outcome", "solved", "--policy", "restricted", "--plan", filepath.Join(work, "none"), "-o", out}, exitMalformed, "--plan"},
	} {
		_, stderr, code := runLedger(t, nil, append([]string{"witness", "build"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, want %d with %q; stderr %q", tc.args, code, tc.code, tc.msg, stderr)
		}
	}
	// A policy file on standard input; standard input only once.
	pf, err := os.ReadFile("../../testdata/rvww/policies/custom_read_grep.json")
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runLedger(t, pf, "witness", "build", "--outcome", "solved", "--policy", "-", "--json", "-o", filepath.Join(work, "p.rvww"))
	if code != 0 || !strings.Contains(stdout, `"name":"read-grep-small","hash":"7cc2a0d5ea562ac8"`) {
		t.Errorf("--policy -: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, stderr, code := runLedger(t, pf, "witness", "build", "--outcome", "solved", "--policy", "-", "--spec", "-", "-o", out); code != exitUsage || !strings.Contains(stderr, "already") {
		t.Errorf("stdin twice: exit %d: %s", code, stderr)
	}
	// An unsigned bundle with --allow-unsigned.
	stdout, stderr, code = runLedger(t, nil, "witness", "build", "--dir", dir, "--outcome", "skipped", "--policy", "approved",
		"--append", "--allow-unsigned", "--json")
	if code != 0 || !strings.Contains(stdout, `"appended":{"status":"appended","seq":2`) {
		t.Errorf("--allow-unsigned: exit %d\n%s%s", code, stdout, stderr)
	}
}
