package avirrun

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/avir"
	"github.com/proofledger/ledger/verifier/sandbox"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testKey is a fixed signing key, so that attestations are reproducible.
var testKey = ed25519.NewKeyFromSeed([]byte("avirrun test key, 32 bytes long!"))

// testEnv is a fixed environment for fake-runner tests.
var testEnv = avir.Environment{Container: "", OS: "linux", Arch: "amd64", PythonVersion: "3.11.2", CPUCores: 2, MemoryGB: 23.5}

// clock returns a clock that reads start, then start+step, and so on.
func clock(start time.Time, step time.Duration) func() time.Time {
	var mu sync.Mutex
	t := start.Add(-step)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(step)
		return t
	}
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// outcome is what a scripted step does.
type outcome struct {
	stdout, stderr string
	status         int
	elapsed        time.Duration // 0 means 1 ms
	// cut ends the sandbox while the step runs, with the sandbox result
	// flags it sets (e.g. "wall", "memory").
	cut string
}

// script decides each step's outcome.
type script func(kind StepKind, index int, command string) outcome

// fakeRunner answers the python probe and runs the driver's protocol in
// Go: the same step order, the same stop-after-failure rule and the same
// report lines as driverScript, with each step's outcome from a script.
// The real driver is exercised by the sandbox tests.
type fakeRunner struct {
	script script
	python string // "" means no python3
	// report, when set, replaces the report of every driver run.
	report func(plan) ([]byte, sandbox.Result)

	mu   sync.Mutex
	cmds []sandbox.Cmd
}

func (f *fakeRunner) Sandbox() string { return "fake" }

func (f *fakeRunner) Run(ctx context.Context, cmd sandbox.Cmd) (sandbox.Result, error) {
	f.mu.Lock()
	f.cmds = append(f.cmds, cmd)
	f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return sandbox.Result{}, err
	}
	if len(cmd.Args) == 2 && cmd.Args[1] == pythonProbe {
		return sandbox.Result{Report: []byte(f.python)}, nil
	}
	p, err := planOf(cmd)
	if err != nil {
		return sandbox.Result{}, err
	}
	if f.report != nil {
		rep, res := f.report(p)
		res.Report = rep
		return res, nil
	}
	var rep strings.Builder
	var res sandbox.Result
	step := func(kind StepKind, i int, c string) (ok, cut bool) {
		fmt.Fprintf(&rep, "B %s %d\n", kind, i)
		o := f.script(kind, i, c)
		switch o.cut {
		case "":
		case "wall":
			res.TimedOut, res.ExitCode, res.Signal = true, -1, "SIGKILL"
			return false, true
		case "memory":
			res.MemoryLimit, res.ExitCode, res.Signal = true, -1, "SIGKILL"
			return false, true
		default:
			panic("unknown cut " + o.cut)
		}
		if o.elapsed == 0 {
			o.elapsed = time.Millisecond
		}
		errHex := "-"
		if o.status != 0 && o.stderr != "" {
			errHex = hex.EncodeToString([]byte(tail(o.stderr, stderrBytes)))
		}
		outHex := "-"
		if o.stdout != "" {
			outHex = hex.EncodeToString([]byte(tail(o.stdout, tailBytes)))
		}
		fmt.Fprintf(&rep, "E %s %d %d %d %d %s %s\n", kind, i, o.status, o.elapsed.Nanoseconds(), len(o.stdout), outHex, errHex)
		return o.status == 0, false
	}
	ok := true
	for i := 0; ok && i < len(p.setup); i++ {
		var cut bool
		if ok, cut = step(StepSetup, i, p.setup[i]); cut {
			return withReport(res, rep.String()), nil
		}
	}
	for i := 0; ok && i < p.warmup; i++ {
		var cut bool
		if ok, cut = step(StepWarmup, i, p.command); cut {
			return withReport(res, rep.String()), nil
		}
	}
	for i := 0; ok && i < p.runs; i++ {
		var cut bool
		if ok, cut = step(StepRun, i, p.command); cut {
			return withReport(res, rep.String()), nil
		}
	}
	for i := 0; i < len(p.teardown); i++ {
		if _, cut := step(StepTeardown, i, p.teardown[i]); cut {
			return withReport(res, rep.String()), nil
		}
	}
	rep.WriteString("D\n")
	return withReport(res, rep.String()), nil
}

// planOf reads the driver's arguments back into a plan.
func planOf(cmd sandbox.Cmd) (plan, error) {
	a := cmd.Args
	if len(a) < 9 || a[0] != "-c" || a[1] != driverScript || a[2] != "avirrun" {
		return plan{}, fmt.Errorf("fake runner: unexpected command %q", a)
	}
	a = a[3:]
	secs, err := strconv.ParseFloat(a[0], 64)
	if err != nil {
		return plan{}, err
	}
	n := make([]int, 4)
	for i := range n {
		if n[i], err = strconv.Atoi(a[1+i]); err != nil {
			return plan{}, err
		}
	}
	a = a[5:]
	if len(a) != n[2]+1+n[3] {
		return plan{}, fmt.Errorf("fake runner: %d command arguments, want %d", len(a), n[2]+1+n[3])
	}
	return plan{
		timeout:  time.Duration(secs * float64(time.Second)),
		warmup:   n[0],
		runs:     n[1],
		setup:    a[:n[2]],
		command:  a[n[2]],
		teardown: a[n[2]+1:],
	}, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func withReport(res sandbox.Result, rep string) sandbox.Result {
	res.Report = []byte(rep)
	return res
}

// values returns a script whose measured runs print vals[i] (and whose
// other steps succeed silently).
func values(vals ...string) script {
	return func(kind StepKind, i int, _ string) outcome {
		if kind == StepRun {
			return outcome{stdout: "measuring...\n" + vals[i] + "\n"}
		}
		return outcome{}
	}
}

// perCommand dispatches on the command: each benchmark's command is a key.
func perCommand(m map[string]script) script {
	return func(kind StepKind, i int, c string) outcome {
		if s, ok := m[c]; ok {
			return s(kind, i, c)
		}
		return outcome{}
	}
}

// bench is a benchmark for specOf.
type bench map[string]any

// specOf writes a specification with the given benchmarks, all in one
// capability.
func specOf(t testing.TB, benches ...bench) *avir.Spec {
	t.Helper()
	ids := []string{}
	list := []map[string]any{}
	for _, b := range benches {
		full := map[string]any{"description": "d", "methodology": "m", "unit": "ops/s", "tolerance": 0.1, "target": 10}
		for k, v := range b {
			full[k] = v
		}
		ids = append(ids, full["id"].(string))
		list = append(list, full)
	}
	doc := map[string]any{
		"avir_version": "1.0.0",
		"system":       map[string]any{"name": "sut", "version": "1.2.3"},
		"capabilities": []any{map[string]any{"name": "c", "description": "all", "category": "performance", "benchmarks": ids}},
		"benchmarks":   list,
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := avir.ParseSpec(data)
	if err != nil {
		t.Fatalf("spec: %v\n%s", err, data)
	}
	return s
}

// opts are the fake-runner tests' options.
func opts() Options {
	return Options{Key: testKey, Environment: &testEnv, Now: clock(t0, 90*time.Second), SpecSource: "test.json"}
}

// mustVerify checks an attestation against its specification with
// codec/avir, as `ledger inspect --spec` does.
func mustVerify(t testing.TB, res *Result) {
	t.Helper()
	if res.Attestation == nil {
		t.Fatal("no attestation")
	}
	att, err := avir.ParseAttestation(res.Attestation.Bytes())
	if err != nil {
		t.Fatalf("attestation does not parse: %v", err)
	}
	spec, err := avir.ParseSpec(res.Spec.Bytes())
	if err != nil {
		t.Fatalf("spec does not parse: %v", err)
	}
	rep := att.VerifyReport(avir.VerifyOptions{Spec: spec})
	if len(rep.Findings) > 0 || !rep.SignatureChecked {
		t.Fatalf("attestation does not verify (signature checked %v): %v", rep.SignatureChecked, rep.Findings)
	}
}
