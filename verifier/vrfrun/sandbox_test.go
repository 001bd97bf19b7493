package vrfrun

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/verifier/sandbox"
)

// TestConstraintHangs runs, in the sandbox, a constraint that never ends
// (the reference would hang): it times out, the one before it keeps its
// result and the one after it is not evaluated.
func TestConstraintHangs(t *testing.T) {
	r := testRunner(t)
	v, err := New(r, Options{ConstraintTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res, err := verifyBody(context.Background(), v, "schema", []byte(`{"output": {"content": "[1, 2]"},
		"constraints": [{"name": "first", "expr": "len(output) == 2"},
		                {"name": "hangs", "expr": "[0 for _ in iter(int, 1)]"},
		                {"name": "after", "expr": "True"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(statusesOf(res.Details), " ")
	if got != "pass timeout error" || res.Details[1].Error != "Exceeded 0.5s" || res.Verdict != "error" {
		t.Errorf("statuses %s, errors %q, verdict %s", got, []string{res.Details[1].Error, res.Details[2].Error}, res.Verdict)
	}
	if !res.Sandboxed || res.Sandbox != r.Sandbox() {
		t.Errorf("sandboxed %v sandbox %q", res.Sandboxed, res.Sandbox)
	}
}

// TestSubmittedCodeIsConfined checks, in the sandbox, that submitted code
// and constraints see neither the host's files nor the network.
func TestSubmittedCodeIsConfined(t *testing.T) {
	r := testRunner(t)
	v, err := New(r, Options{})
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := verifyBody(context.Background(), v, "verify", []byte(`{"output": {"content": "import os, socket\n`+
		`def sees(p):\n    return os.path.exists(p)\n`+
		`def net():\n    try:\n        socket.create_connection(('1.1.1.1', 53), timeout=1)\n        return True\n    except OSError:\n        return False\n"},
		"verification": {"test_suite": {"tests": [
			{"name": "host_file", "input": "sees('`+secret+`')", "expected_output": "False"},
			{"name": "network", "input": "net()", "expected_output": "False"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != "pass" {
		t.Errorf("verdict %s: %+v", res.Verdict, res.Details)
	}
	res, err = verifyBody(context.Background(), v, "schema", []byte(`{"output": {"content": "{}"},
		"constraints": [{"name": "host_file", "expr": "not __import__('os').path.exists('`+secret+`')"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != "pass" {
		t.Errorf("constraint saw the host's file: %+v", res.Details)
	}
}

// TestModeNone runs requests through a ModeNone sandbox, which works
// where namespaces do not: same verdicts, metadata says it was not
// isolated.
func TestModeNone(t *testing.T) {
	if _, err := sandbox.LookPath("python3"); err != nil {
		t.Skipf("skipping: no python3 (%v)", err)
	}
	r, err := sandbox.New(sandbox.Config{Mode: sandbox.ModeNone})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}()
	v, err := New(r, Options{})
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join("testdata", "requests", "verify", "ref04_partial.json"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := verifyBody(context.Background(), v, "verify", body)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != "partial" || res.Sandboxed || res.Sandbox != "none" {
		t.Errorf("verdict %s sandboxed %v sandbox %q", res.Verdict, res.Sandboxed, res.Sandbox)
	}
	if _, err := sandbox.LookPath("bash"); err == nil {
		body, err := os.ReadFile(filepath.Join("testdata", "requests", "verify", "bash_io.json"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := verifyBody(context.Background(), v, "verify", body)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(statusesOf(res.Details), " "); got != "pass fail pass" {
			t.Errorf("bash in ModeNone: %s", got)
		}
	}
}

// TestPythonOutsideUsr runs tests with an interpreter installed outside
// /usr (pyenv and the like), when $PATH has one: its prefix is shown in
// the sandbox and its version is the environment's.
func TestPythonOutsideUsr(t *testing.T) {
	r := testRunner(t)
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("skipping: no python3 on $PATH")
	}
	out, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skipf("skipping: %s: %v", p, err)
	}
	exe, err := filepath.EvalSymlinks(strings.TrimSpace(string(out)))
	if err != nil || strings.HasPrefix(exe, "/usr/") {
		t.Skipf("skipping: the python3 on $PATH (%s) is under /usr", exe)
	}
	v, err := New(r, Options{Python: exe})
	if err != nil {
		t.Fatal(err)
	}
	res, err := verifyBody(context.Background(), v, "verify", []byte(`{"verification": {"test_suite": {"tests": [
		{"input": "__import__('sys').executable", "expected_output": `+string(appendJSONString(nil, pyRepr(pyStrValue(exe))))+`}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != "pass" || !strings.HasPrefix(res.Environment, "python:") {
		t.Fatalf("verdict %s environment %q: %+v", res.Verdict, res.Environment, res.Details)
	}
	want, err := exec.Command(exe, "-c", "import sys; print(sys.version)").Output()
	if err != nil {
		t.Fatal(err)
	}
	if res.Environment != "python:"+strings.TrimSuffix(string(want), "\n") {
		t.Errorf("environment %q, want python:%s", res.Environment, want)
	}
}

// TestLargeOutputs checks, in the sandbox, messages and outputs larger
// than the report pipe's and the output streams' default caps: a failing
// comparison of two large lists stays a fail (its message clipped), a
// constraint's long exception text stays an error, and a program whose
// expected output is 1.5 MiB can pass.
func TestLargeOutputs(t *testing.T) {
	r := testRunner(t)
	v, err := New(r, Options{MaxMessage: 100})
	if err != nil {
		t.Fatal(err)
	}
	res, err := verifyBody(context.Background(), v, "verify", []byte(`{"verification": {"test_suite": {"tests": [
		{"name": "big", "input": "list(range(400000))", "expected_output": "[]"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := res.Details[0]; d.Status != "fail" || !strings.HasPrefix(d.Error, "FAIL: got [0, 1, 2") || !strings.HasSuffix(d.Error, " [...]") || pyLen(d.Error) != 106 {
		t.Errorf("big fail: %s %q", d.Status, d.Error)
	}
	res, err = verifyBody(context.Background(), v, "schema", []byte(`{"output": {"content": "{}"},
		"constraints": [{"name": "long_error", "expr": "output['x' * 3000000]"}, {"name": "after", "expr": "True"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(statusesOf(res.Details), " "); got != "error pass" || !strings.HasPrefix(res.Details[0].Error, "'xxx") {
		t.Errorf("long constraint error: %s %q", got, res.Details[0].Error)
	}
	if _, err := sandbox.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	big := strings.Repeat("0123456789abcde\n", 3<<16) // 3 MiB / 2
	body := `{"output": {"content": "cat"}, "verification": {"test_suite": {"language": "bash", "tests": [
		{"name": "echo_big", "input": ` + string(appendJSONString(nil, big)) + `, "expected_output": ` + string(appendJSONString(nil, big)) + `}]}}}`
	res, err = verifyBody(context.Background(), v, "verify", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if d := res.Details[0]; d.Status != "pass" {
		t.Errorf("1.5 MiB output: %s %q", d.Status, d.Error)
	}
}
