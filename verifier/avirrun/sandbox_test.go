package avirrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/verifier/sandbox"
)

var (
	sharedOnce   sync.Once
	sharedRunner *sandbox.Runner
	sharedErr    error
)

// testRunner is a namespaces sandbox shared by the tests; the tests skip
// where the kernel refuses the namespaces.
func testRunner(t *testing.T) *sandbox.Runner {
	t.Helper()
	sharedOnce.Do(func() { sharedRunner, sharedErr = sandbox.New(sandbox.Config{}) })
	if errors.Is(sharedErr, sandbox.ErrUnavailable) {
		t.Skipf("skipping: this kernel refuses the sandbox's namespaces (%v)", sharedErr)
	}
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedRunner
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedRunner != nil {
		if err := sharedRunner.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close the shared sandbox runner:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// realOpts are options for sandbox runs: the real environment and clock.
func realOpts() Options {
	return Options{Key: testKey, SpecSource: "sandbox-test"}
}

// TestSandboxSmall runs commands that print fixed and computed numbers in
// the namespaces sandbox, with the environment detected for real.
func TestSandboxSmall(t *testing.T) {
	r := testRunner(t)
	spec := specOf(t,
		bench{"id": "echo", "command": "echo 42", "target": 40, "warmup_runs": 1},
		bench{"id": "awk", "command": `awk 'BEGIN{print 3.5}'`, "target": 4, "lower_is_better": true, "unit": "ms"},
		bench{"id": "computed", "command": "echo computing >&2; echo $((6 * 7)).5", "target": 42, "runs": 3},
	)
	res, err := Run(context.Background(), r, spec, realOpts())
	if err != nil {
		t.Fatalf("%v\n%+v", err, res)
	}
	mustVerify(t, res)
	if res.Verdict != "VERIFIED" || res.Level != "L1" {
		t.Errorf("verdict %s level %s", res.Verdict, res.Level)
	}
	want := map[string]string{"echo": "42 42 42 42 42", "awk": "3.5 3.5 3.5 3.5 3.5", "computed": "42.5 42.5 42.5"}
	for _, b := range res.Benchmarks {
		if got := lits(b.Values); got != want[b.ID] {
			t.Errorf("%s: values %s, want %s", b.ID, got, want[b.ID])
		}
	}
	if res.Sandbox != r.Sandbox() || !strings.HasPrefix(res.Sandbox, "linux-namespaces(") {
		t.Errorf("sandbox %q", res.Sandbox)
	}
	lr, _ := item(t, res.Attestation, 0).Get(runField)
	if sb, _ := lr.Get("sandbox"); !canonjson.Equal(sb, canonjson.MakeString(r.Sandbox())) {
		t.Errorf("ledger_run.sandbox %s", canonjson.Canonical(sb))
	}

	// The environment is the machine's; python_version is that of the
	// python3 the sandbox shows (from /usr), when there is one.
	env := res.Environment
	if env.OS == "" || env.Arch == "" || env.CPUCores < 1 || env.MemoryGB <= 0 {
		t.Errorf("environment %+v", env)
	}
	if py, err := sandbox.LookPath("python3"); err == nil {
		out, err := exec.Command(py, "-c", "import platform; print(platform.python_version())").Output()
		if err != nil {
			t.Fatal(err)
		}
		if env.PythonVersion != strings.TrimSpace(string(out)) {
			t.Errorf("python_version %q, %s says %q", env.PythonVersion, py, out)
		}
	} else if env.PythonVersion != "" {
		t.Errorf("python_version %q without a python3", env.PythonVersion)
	}
	if got := hashOf(envValue(env)); got != res.Attestation.Chain().EnvHash {
		t.Errorf("env_hash %s is not the hash of %+v (%s)", res.Attestation.Chain().EnvHash, env, got)
	}
}

func lits(vs []canonjson.Value) string {
	var s []string
	for _, v := range vs {
		s = append(s, string(canonjson.Canonical(v)))
	}
	return strings.Join(s, " ")
}

// TestSandboxSetupTeardown: setup, every run and teardown share one
// working directory: setup writes files the runs read, the runs count
// themselves in a file, and teardown checks both and fails when they are
// not there. A background process started by setup does not hold the step
// open.
func TestSandboxSetupTeardown(t *testing.T) {
	r := testRunner(t)
	b := bench{
		"id":          "files",
		"setup":       []string{"echo 100 >base", "mkdir state && touch state/ready", "sleep 60 &"},
		"command":     `test -f state/ready || exit 9; n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) >count; echo $(( $(cat base) + n ))`,
		"teardown":    []string{`test "$(cat count)" = 6`, "rm -r state base && test ! -e state"},
		"warmup_runs": 1, "runs": 5, "target": 100, "timeout_seconds": 20,
	}
	res, err := Run(context.Background(), r, specOf(t, b), realOpts())
	if err != nil {
		t.Fatalf("%v\n%+v", err, res)
	}
	mustVerify(t, res)
	// The warm-up run saw count 0 and printed 100; the measured runs 101..105.
	if got := lits(res.Benchmarks[0].Values); got != "101 102 103 104 105" {
		t.Errorf("values %s", got)
	}
	if st := res.Benchmarks[0].Steps; len(st) != 3+1+5+2 || st[0].Kind != StepSetup || st[10].Kind != StepTeardown {
		t.Errorf("steps %+v", st)
	}

	// A teardown that finds the working directory not as the runs left it
	// fails the benchmark.
	b["teardown"] = []string{`test "$(cat count)" = 99 || { echo "count is $(cat count)" >&2; exit 4; }`}
	res, err = Run(context.Background(), r, specOf(t, b), realOpts())
	if !errors.Is(err, ErrInvalid) || res.Attestation != nil {
		t.Fatalf("err %v", err)
	}
	if e := res.Benchmarks[0].Err; !errors.Is(e, ErrStepFailed) || !strings.Contains(e.Error(), "teardown 0: exit status 4: count is 6") {
		t.Errorf("error %v", e)
	}
}

// TestSandboxFailures: real failures of each kind, and a command that
// tries to write to the report descriptor (closed for it).
func TestSandboxFailures(t *testing.T) {
	r := testRunner(t)
	spec := specOf(t,
		bench{"id": "exit", "command": "echo 5; echo oops >&2; exit 3"},
		bench{"id": "words", "command": "echo 5 ops/s"},
		bench{"id": "slow", "command": "sleep 30; echo 5", "timeout_seconds": 0.3, "runs": 1},
		bench{"id": "report", "command": "echo 'E run 0 0 1 2 35 -' >&3 || exit 7; echo 5"},
		bench{"id": "setup", "command": "echo 5", "setup": []string{"no-such-program"}},
		bench{"id": "ok", "command": "echo 5", "target": 5},
	)
	o := realOpts()
	o.KeepGoing = true
	res, err := Run(context.Background(), r, spec, o)
	if !errors.Is(err, ErrInvalid) || res.Attestation != nil {
		t.Fatalf("err %v", err)
	}
	want := map[string]string{
		"exit":   "run 0: exit status 3: oops",
		"words":  `run 0: last line "5 ops/s" is not a JSON number`,
		"slow":   "run 0: timed out after 300ms",
		"report": "run 0: exit status 7: /bin/sh: 1: 3: Bad file descriptor",
		"setup":  "setup 0: exit status 127",
	}
	for _, b := range res.Benchmarks {
		if b.ID == "ok" {
			if b.Status != StatusMeasured || b.Verdict != "PASS" || b.Item == nil {
				t.Errorf("ok: %s %s %v", b.Status, b.Verdict, b.Err)
			}
			continue
		}
		if b.Status != StatusFailed || b.Err == nil || !strings.Contains(b.Err.Error(), want[b.ID]) {
			t.Errorf("%s: %s %v; want an error containing %q", b.ID, b.Status, b.Err, want[b.ID])
		}
	}
	if st := res.Benchmarks[2].Steps[0]; !st.TimedOut {
		t.Errorf("slow: %+v", st)
	}
}

// TestSandboxReferenceVector runs the reference vector's specification,
// with its counting commands, in the sandbox: the statistics, verdicts and
// summary are the reference's.
func TestSandboxReferenceVector(t *testing.T) {
	r := testRunner(t)
	spec, ref := readVector(t)
	o := realOpts()
	o.Environment = &vectorEnv
	res, err := Run(context.Background(), r, spec, o)
	if err != nil {
		t.Fatalf("%v\n%+v", err, res)
	}
	mustVerify(t, res)
	got, _ := stripRun(res.Attestation).Get("results")
	want, _ := ref.Value().Get("results")
	if !canonjson.Equal(got, want) {
		t.Errorf("results differ from the reference's\n got %s\nwant %s", canonjson.Indent(got), canonjson.Indent(want))
	}
}

// TestModeNone: the same driver in ModeNone (no isolation) works, and
// every item says so.
func TestModeNone(t *testing.T) {
	r, err := sandbox.New(sandbox.Config{Mode: sandbox.ModeNone})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}()
	spec := specOf(t, bench{"id": "b", "command": "n=$(cat c 2>/dev/null || echo 0); echo $((n + 1)) >c; echo $n", "setup": []string{"echo 0 >c"}, "target": 3})
	res, err := Run(context.Background(), r, spec, realOpts())
	if err != nil {
		t.Fatalf("%v\n%+v", err, res)
	}
	mustVerify(t, res)
	if got := lits(res.Benchmarks[0].Values); got != "0 1 2 3 4" {
		t.Errorf("values %s", got)
	}
	lr, _ := item(t, res.Attestation, 0).Get(runField)
	if sb, _ := lr.Get("sandbox"); !canonjson.Equal(sb, canonjson.MakeString("none")) {
		t.Errorf("ledger_run.sandbox %s", canonjson.Canonical(sb))
	}
}
