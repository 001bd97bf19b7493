package vrfrun

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/vrf"
	"github.com/proofledger/ledger/verifier/sandbox"
)

// fakeRunner answers commands without running them, so that the
// decisions taken from a sandbox.Result can be tested on any machine.
type fakeRunner struct {
	mode sandbox.Mode
	run  func(ctx context.Context, cmd sandbox.Cmd) (sandbox.Result, error)

	mu    sync.Mutex
	calls []sandbox.Cmd
}

const fakePython = "3.11.2 (main, fake) [GCC]"

func (f *fakeRunner) Run(ctx context.Context, cmd sandbox.Cmd) (sandbox.Result, error) {
	if len(cmd.Args) == 2 && cmd.Args[1] == probeScript {
		return sandbox.Result{Report: []byte(`["` + fakePython + `", "3.11"]`)}, nil
	}
	f.mu.Lock()
	f.calls = append(f.calls, cmd)
	f.mu.Unlock()
	return f.run(ctx, cmd)
}

func (f *fakeRunner) Sandbox() string    { return "fake-sandbox" }
func (f *fakeRunner) Mode() sandbox.Mode { return f.mode }

func answer(res sandbox.Result) func(context.Context, sandbox.Cmd) (sandbox.Result, error) {
	return func(context.Context, sandbox.Cmd) (sandbox.Result, error) { return res, nil }
}

func mustParse(t *testing.T, body string, opts ParseOptions) *Request {
	t.Helper()
	r, err := ParseRequest([]byte(body), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fakeLookPath finds every program but the ones named "no-such-...".
func fakeLookPath(name string) (string, error) {
	if strings.HasPrefix(name, "no-such-") {
		return "", fmt.Errorf("%w: %q not found", sandbox.ErrStart, name)
	}
	return "/usr/bin/" + name, nil
}

// newFake returns a Verifier over a fake runner that finds every program.
func newFake(t *testing.T, f *fakeRunner, opts Options) *Verifier {
	t.Helper()
	v, err := New(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	v.lookPath = fakeLookPath
	return v
}

func fakeVerify(t *testing.T, f *fakeRunner, opts Options, body string, popts ParseOptions) *Result {
	t.Helper()
	v := newFake(t, f, opts)
	res, err := v.Verify(context.Background(), mustParse(t, body, popts))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestPythonTestDecisions checks how a FormPython test's status and error
// text follow from what the run reported.
func TestPythonTestDecisions(t *testing.T) {
	const body = `{"verification": {"test_suite": {"tests": [{"name": "t", "input": "f()", "expected_output": "1", "timeout_ms": 5000}]}}}`
	for _, c := range []struct {
		name   string
		res    sandbox.Result
		status string
		err    string
	}{
		{"pass", sandbox.Result{Report: []byte(`["pass", ""]`)}, "pass", ""},
		{"pass despite exit status and output", sandbox.Result{ExitCode: 3, Stdout: []byte("FAIL: printed"), Report: []byte(`["pass", ""]`)}, "pass", ""},
		{"fail", sandbox.Result{Report: []byte(`["fail", "FAIL: got 2, expected 1"]`)}, "fail", "FAIL: got 2, expected 1"},
		{"error from eval", sandbox.Result{Report: []byte(`["error", "ERROR: boom"]`)}, "error", "ERROR: boom"},
		{"error, stderr first", sandbox.Result{Stderr: []byte("  warning\n"), Report: []byte(`["error", "ERROR: boom"]`)}, "error", "warning"},
		{"no report, traceback", sandbox.Result{ExitCode: 1, Stderr: []byte("Traceback...\nValueError: x\n")}, "error", "Traceback...\nValueError: x"},
		{"no report, stdout", sandbox.Result{Stdout: []byte("  bye \r\n")}, "error", "bye"},
		{"no report, silent exit", sandbox.Result{}, "error", ""},
		{"no report, memory", sandbox.Result{ExitCode: -1, Signal: "SIGKILL", MemoryLimit: true}, "error", "sandbox: memory limit exceeded"},
		{"unreadable report", sandbox.Result{Report: []byte(`["pass"`)}, "error", ""},
		{"forged status", sandbox.Result{Report: []byte(`["weird", ""]`)}, "error", ""},
		{"timeout wins over a report", sandbox.Result{TimedOut: true, Report: []byte(`["pass", ""]`)}, "timeout", "Exceeded 5.0s"},
		{"cpu limit", sandbox.Result{CPULimit: true}, "timeout", "Exceeded 5.0s (CPU time)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeRunner{run: answer(c.res)}
			res := fakeVerify(t, f, Options{}, body, ParseOptions{})
			d := res.Details[0]
			if d.Status != c.status || d.Error != c.err {
				t.Errorf("%s %q, want %s %q", d.Status, d.Error, c.status, c.err)
			}
			if res.Environment != "python:"+fakePython || res.Runtime != "python3.11" || res.Language != "python" {
				t.Errorf("environment %q runtime %q language %q", res.Environment, res.Runtime, res.Language)
			}
		})
	}
}

// TestPythonTestCommand checks what a FormPython test hands the sandbox.
func TestPythonTestCommand(t *testing.T) {
	f := &fakeRunner{run: answer(sandbox.Result{Report: []byte(`["pass", ""]`)})}
	fakeVerify(t, f, Options{}, `{"output": {"content": "x = 'é\r\n'"}, "verification": {"test_suite": {"tests": [
		{"input": [1, {"a": NaN}], "expected_output": null, "timeout_ms": 1500}]}}}`, ParseOptions{})
	cmd := f.calls[0]
	if cmd.Path != "python3" || len(cmd.Args) != 2 || cmd.Args[0] != "-c" || cmd.Args[1] != pythonHarness || !cmd.Report {
		t.Errorf("command %q %q report=%v", cmd.Path, cmd.Args, cmd.Report)
	}
	if want := `{"code": "x = '\u00e9\r\n'", "input": [1, {"a": NaN}], "expected": null, "max": 16385}`; string(cmd.Files["test.json"]) != want {
		t.Errorf("test.json %s, want %s", cmd.Files["test.json"], want)
	}
	if cmd.Limits.Wall != 1500*time.Millisecond || cmd.Limits.CPUTime != 1500*time.Millisecond*time.Duration(runtime.NumCPU()) {
		t.Errorf("limits wall %v cpu %v", cmd.Limits.Wall, cmd.Limits.CPUTime)
	}
	if !strings.Contains(strings.Join(cmd.Env, " "), "PYTHONDONTWRITEBYTECODE=1") {
		t.Errorf("env %q lacks PYTHONDONTWRITEBYTECODE", cmd.Env)
	}
}

// TestTimeouts checks non-positive timeouts (no run at all) and
// Options.MaxTimeout.
func TestTimeouts(t *testing.T) {
	f := &fakeRunner{run: answer(sandbox.Result{TimedOut: true})}
	res := fakeVerify(t, f, Options{MaxTimeout: time.Second}, `{"verification": {"test_suite": {"tests": [
		{"timeout_ms": 0}, {"timeout_ms": -5}, {"timeout_ms": 1e-9}, {"timeout_ms": 60000}]}}}`, ParseOptions{})
	want := []string{"Exceeded 0.0s", "Exceeded -0.005s", "Exceeded 1e-12s", "Exceeded 60.0s (the verifier's limit of 1s)"}
	for i, w := range want {
		if d := res.Details[i]; d.Status != vrf.StatusTimeout || d.Error != w {
			t.Errorf("test %d: %s %q, want timeout %q", i, d.Status, d.Error, w)
		}
	}
	if len(f.calls) != 1 || f.calls[0].Limits.Wall != time.Second {
		t.Errorf("want one run with a 1s wall limit, got %d runs", len(f.calls))
	}
}

// TestHugeTimeout checks that a timeout too large for a time.Duration is
// capped, and that the CPU limit derived from it does not overflow.
func TestHugeTimeout(t *testing.T) {
	f := &fakeRunner{run: answer(sandbox.Result{Report: []byte(`["pass", ""]`)})}
	fakeVerify(t, f, Options{}, `{"verification": {"test_suite": {"tests": [{"timeout_ms": 1e300}, {"timeout_ms": 4611686018427}]}}}`, ParseOptions{})
	for i, cmd := range f.calls {
		if l := cmd.Limits; l.Wall <= 0 || l.CPUTime < l.Wall {
			t.Errorf("run %d: wall %v cpu %v", i, l.Wall, l.CPUTime)
		}
	}
}

// TestProgramDecisions checks FormProgram's statuses and texts.
func TestProgramDecisions(t *testing.T) {
	const body = `{"output": {"content": "cat"}, "verification": {"test_suite": {"language": "sh", "tests": [
		{"name": "t", "input": "in", "expected_output": " a\nb\n", "timeout_ms": 300}]}}}`
	long := strings.Repeat("é", 600)
	for _, c := range []struct {
		name        string
		res         sandbox.Result
		status, err string
		output      string
	}{
		{"pass, universal newlines", sandbox.Result{Stdout: []byte("\r\n a\r\nb \r\n")}, "pass", "", "a\nb"},
		{"fail", sandbox.Result{Stdout: []byte("a b")}, "fail", "got a b, expected a\nb", "a b"},
		{"exit status", sandbox.Result{ExitCode: 2, Stdout: []byte("a\nb"), Stderr: []byte(long)}, "error", strings.Repeat("é", 500), ""},
		{"signal, silent", sandbox.Result{ExitCode: -1, Signal: "SIGSEGV"}, "error", "", ""},
		{"timeout", sandbox.Result{TimedOut: true, ExitCode: -1}, "error", "timeout (300ms)", ""},
		{"stderr says timeout", sandbox.Result{Stdout: []byte("a\nb"), Stderr: []byte("timeout")}, "pass", "", "a\nb"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeRunner{run: answer(c.res)}
			res := fakeVerify(t, f, Options{}, body, ParseOptions{})
			d := res.Details[0]
			if d.Status != c.status || d.Error != c.err || d.Output != c.output {
				t.Errorf("%s %q output %q, want %s %q %q", d.Status, d.Error, d.Output, c.status, c.err, c.output)
			}
			cmd := f.calls[0]
			if cmd.Path != "sh" || len(cmd.Args) != 1 || cmd.Args[0] != "/box/solution.py" || string(cmd.Stdin) != "in" ||
				string(cmd.Files["solution.py"]) != "cat" || cmd.Limits.Wall != 300*time.Millisecond {
				t.Errorf("command %q %q stdin %q files %v wall %v", cmd.Path, cmd.Args, cmd.Stdin, cmd.Files, cmd.Limits.Wall)
			}
			if res.Language != "sh" || res.Runtime != "sh" || res.Environment != "python:"+fakePython {
				t.Errorf("language %q runtime %q environment %q", res.Language, res.Runtime, res.Environment)
			}
		})
	}
}

// TestLanguageMissing checks that a language without a program here is
// ErrLanguage, before anything runs.
func TestLanguageMissing(t *testing.T) {
	f := &fakeRunner{run: answer(sandbox.Result{})}
	v := newFake(t, f, Options{})
	_, err := v.Verify(context.Background(), mustParse(t,
		`{"verification": {"test_suite": {"language": "no-such-language-xyz", "tests": [{}]}}}`, ParseOptions{}))
	if !errors.Is(err, ErrLanguage) {
		t.Fatalf("want ErrLanguage, got %v", err)
	}
	if len(f.calls) != 0 {
		t.Errorf("%d runs", len(f.calls))
	}
}

// TestExpressionDecisions checks FormExpression's handling of the
// wrapper's run.
func TestExpressionDecisions(t *testing.T) {
	const body = `{"output": {"content": "function f() { return 1; }"}, "verification": {"test_suite": {"language": "node", "tests": [
		{"name": "a", "expression": "f()", "expected": "1", "timeout_ms": 1000}, {"name": "b", "expression": "g()", "timeout_ms": 3000}]}}}`
	for _, c := range []struct {
		name     string
		res      sandbox.Result
		statuses string
		errs     string
	}{
		{"results", sandbox.Result{Report: []byte(`[{"name":"a","status":"pass","expected":"1","actual":"1"},` +
			`{"name":"b","status":"fail","expected":"undefined","actual":"2"},{"name":7,"status":"error","message":"m"},` +
			`{"name":"d","status":"error"},{"name":"e","status":"odd","message":"x"}]`)},
			"pass fail error error error", "|got 2, expected undefined|m||"},
		{"timeout", sandbox.Result{TimedOut: true, Report: []byte(`[]`)}, "error", "timeout"},
		{"exit status", sandbox.Result{ExitCode: 1, Stderr: []byte("ReferenceError"), Report: []byte(`[]`)}, "error", "ReferenceError"},
		{"no output", sandbox.Result{}, "error", "no output"},
		{"not JSON", sandbox.Result{Report: []byte("hello\n[]")}, "error", "invalid JSON: hello\n[]"},
		{"not a list", sandbox.Result{Report: []byte(`{"a": 1}`)}, "error", "invalid results: want a list, got dict"},
		{"no status", sandbox.Result{Report: []byte(`[{"name": "a"}]`)}, "error", "invalid results: item 0 has no name or status"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeRunner{run: answer(c.res)}
			res := fakeVerify(t, f, Options{}, body, ParseOptions{})
			var st, es []string
			for _, d := range res.Details {
				st = append(st, d.Status)
				es = append(es, d.Error)
			}
			if strings.Join(st, " ") != c.statuses || strings.Join(es, "|") != c.errs {
				t.Errorf("statuses %v errors %q, want %s %q", st, es, c.statuses, c.errs)
			}
			cmd := f.calls[0]
			if cmd.Path != "node" || cmd.Args[0] != "/box/runner.js" || cmd.Limits.Wall != 5*time.Second || !cmd.Report {
				t.Errorf("command %q %q wall %v", cmd.Path, cmd.Args, cmd.Limits.Wall)
			}
			script := string(cmd.Files["runner.js"])
			if !strings.Contains(script, "const tests = "+`[{"name": "a", "expression": "f()", "expected": "1"}, {"name": "b", "expression": "g()", "expected": null}];`) {
				t.Errorf("script does not embed the tests as the reference does:\n%s", script)
			}
		})
	}
}

// TestConstraintDecisions checks how the constraint run's report lines,
// its end and its dump of the output become details and hashes.
func TestConstraintDecisions(t *testing.T) {
	const body = `{"output": {"content": "{\"a\": 1}"}, "constraints": [
		{"name": "one", "expr": "output['a'] == 1"}, {"name": "two", "expr": "False"}, {"name": "three", "expr": "x"}]}`
	orig := vrf.ShortHash([]byte(`{"a": 1}`))
	for _, c := range []struct {
		name     string
		res      sandbox.Result
		statuses string
		errs     string
		hash     string
	}{
		{"all", sandbox.Result{Report: []byte("[\"pass\", \"\"]\n[\"fail\", \"\"]\n[\"error\", \"name 'x' is not defined\"]\n[\"dump\", \"{\\\"a\\\": 1}\"]\n")},
			"pass fail error", "|Constraint failed: False|name 'x' is not defined", orig},
		{"mutated", sandbox.Result{Report: []byte("[\"pass\", \"\"]\n[\"pass\", \"\"]\n[\"pass\", \"\"]\n[\"dump\", \"{\\\"b\\\": 2}\"]\n")},
			"pass pass pass", "||", vrf.ShortHash([]byte(`{"b": 2}`))},
		{"timeout in the second", sandbox.Result{TimedOut: true, Report: []byte("[\"pass\", \"\"]\n")},
			"pass timeout error", "|Exceeded 30.0s|not evaluated: constraint two did not finish", orig},
		{"died in the first", sandbox.Result{ExitCode: -1, Signal: "SIGKILL", MemoryLimit: true},
			"error error error", "sandbox: memory limit exceeded|not evaluated: constraint one did not finish|not evaluated: constraint one did not finish", orig},
		{"exited silently", sandbox.Result{ExitCode: 0, Report: []byte("[\"pass\", \"\"]\n[\"pass\", \"\"]\n")},
			"pass pass error", "||the evaluating process ended without a result (exit status 0)", orig},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeRunner{run: answer(c.res)}
			res := fakeVerify(t, f, Options{}, body, ParseOptions{Schema: true})
			var st, es []string
			for _, d := range res.Details {
				st = append(st, d.Status)
				es = append(es, d.Error)
			}
			if strings.Join(st, " ") != c.statuses || strings.Join(es, "|") != c.errs {
				t.Errorf("statuses %v errors %q, want %s %q", st, es, c.statuses, c.errs)
			}
			if res.Hashes.Input != c.hash || res.Hashes.Output != c.hash || res.Hashes.Environment != "" {
				t.Errorf("hashes %+v, want input and output %s", res.Hashes, c.hash)
			}
			if !res.Sandboxed || res.Sandbox != "fake-sandbox" || res.Language != "" || res.Runtime != "" {
				t.Errorf("sandboxed %v sandbox %q language %q runtime %q", res.Sandboxed, res.Sandbox, res.Language, res.Runtime)
			}
			want := `{"output": {"a": 1}, "exprs": ["output['a'] == 1", "False", "x"], "max": 16385}`
			if got := string(f.calls[0].Files["constraints.json"]); got != want {
				t.Errorf("constraints.json %s, want %s", got, want)
			}
		})
	}
}

// TestTier1WithoutCode checks that a tier-1 request without expr
// constraints runs nothing and says so.
func TestTier1WithoutCode(t *testing.T) {
	f := &fakeRunner{run: answer(sandbox.Result{})}
	res := fakeVerify(t, f, Options{}, `{"output": {"content": "[1]"}, "schema": {"type": "object"}}`, ParseOptions{Schema: true})
	if len(f.calls) != 0 || res.Sandboxed || res.Sandbox != "" || res.Verdict != vrf.VerdictFail {
		t.Errorf("runs %d sandboxed %v sandbox %q verdict %s", len(f.calls), res.Sandboxed, res.Sandbox, res.Verdict)
	}
}

// TestJobs checks that tests run concurrently, at most Jobs at a time,
// and that details come back in request order.
func TestJobs(t *testing.T) {
	const jobs, n = 3, 12
	var inFlight, most atomic.Int32
	started := make(chan struct{}, n)
	release := make(chan struct{})
	f := &fakeRunner{run: func(ctx context.Context, cmd sandbox.Cmd) (sandbox.Result, error) {
		cur := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if cur <= m || most.CompareAndSwap(m, cur) {
				break
			}
		}
		started <- struct{}{}
		<-release
		// Echo the test's own input as its verdict, so order is visible.
		return sandbox.Result{Report: []byte(`["fail", ` + string(appendJSONString(nil, string(cmd.Files["test.json"]))) + `]`)}, nil
	}}
	var tests []string
	for i := 0; i < n; i++ {
		tests = append(tests, fmt.Sprintf(`{"name": "t%d", "input": "%d"}`, i, i))
	}
	v := newFake(t, f, Options{Jobs: jobs})
	done := make(chan *Result)
	go func() {
		res, err := v.Verify(context.Background(), mustParse(t, `{"verification": {"test_suite": {"tests": [`+strings.Join(tests, ",")+`]}}}`, ParseOptions{}))
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	for i := 0; i < jobs; i++ {
		<-started // blocks forever (test timeout) if runs were not concurrent
	}
	close(release)
	res := <-done
	if m := most.Load(); m != jobs {
		t.Errorf("at most %d runs at once, want %d", m, jobs)
	}
	for i, d := range res.Details {
		if d.Name != fmt.Sprintf("t%d", i) || !strings.Contains(d.Error, fmt.Sprintf(`"input": "%d"`, i)) {
			t.Errorf("detail %d is %q %q", i, d.Name, d.Error)
		}
	}
}

// TestCancel checks that ending ctx ends Verify with ctx's error, and
// that a sandbox failure is an error, not a verdict.
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fakeRunner{run: func(ctx context.Context, cmd sandbox.Cmd) (sandbox.Result, error) {
		cancel()
		<-ctx.Done()
		return sandbox.Result{}, fmt.Errorf("sandbox: %w", ctx.Err())
	}}
	v := newFake(t, f, Options{Jobs: 2})
	req := mustParse(t, `{"verification": {"test_suite": {"tests": [{}, {}, {}, {}]}}}`, ParseOptions{})
	if _, err := v.Verify(ctx, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if _, err := v.Verify(ctx, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("done context: want context.Canceled, got %v", err)
	}

	f = &fakeRunner{run: func(context.Context, sandbox.Cmd) (sandbox.Result, error) {
		return sandbox.Result{}, fmt.Errorf("%w: exec failed", sandbox.ErrStart)
	}}
	v = newFake(t, f, Options{})
	if _, err := v.Verify(context.Background(), req); !errors.Is(err, sandbox.ErrStart) {
		t.Fatalf("want sandbox.ErrStart, got %v", err)
	}
}

// TestNoPython checks the environment of a program request on a machine
// without the Python interpreter.
func TestNoPython(t *testing.T) {
	f := &fakeRunner{run: answer(sandbox.Result{Stdout: []byte("x")})}
	res := fakeVerify(t, f, Options{Python: "no-such-python"}, `{"verification": {"test_suite": {"language": "bash", "tests": [{"expected_output": "x"}]}}}`, ParseOptions{})
	if res.Environment != "bash:/usr/bin/bash" || res.Hashes.Environment != vrf.ShortHash([]byte("bash:/usr/bin/bash")) || res.Verdict != "pass" {
		t.Errorf("environment %q hash %s verdict %s", res.Environment, res.Hashes.Environment, res.Verdict)
	}
}

// TestVerdictAndMetadata checks counts, verdict and the metadata of a
// ModeNone run.
func TestVerdictAndMetadata(t *testing.T) {
	reports := []string{`["pass", ""]`, `["fail", "FAIL"]`, `["pass", ""]`}
	var i atomic.Int32
	f := &fakeRunner{mode: sandbox.ModeNone, run: func(context.Context, sandbox.Cmd) (sandbox.Result, error) {
		return sandbox.Result{Report: []byte(reports[i.Add(1)-1])}, nil
	}}
	res := fakeVerify(t, f, Options{Jobs: 1, VerifierVersion: "test/1"}, `{"task_id": "t1", "task_type": "code",
		"verification": {"test_suite": {"tests": [{}, {}, {}]}}}`, ParseOptions{})
	if res.Verdict != vrf.VerdictPartial || res.Counts != (vrf.Counts{Total: 3, Passed: 2, Failed: 1}) {
		t.Errorf("verdict %s counts %v", res.Verdict, res.Counts)
	}
	if res.Sandboxed || res.Sandbox != "fake-sandbox" || res.VerifierVersion != "test/1" || res.TaskID != "t1" || res.TaskType != "code" {
		t.Errorf("metadata %+v", res)
	}
}
