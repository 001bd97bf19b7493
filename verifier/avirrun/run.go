package avirrun

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/proofledger/ledger/codec/avir"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/verifier/sandbox"
)

// Sentinel errors callers branch on.
var (
	// ErrSpec means the specification cannot be run as given: an
	// extension field is malformed, or Options.BenchmarkID names no
	// benchmark. The message names the field.
	ErrSpec = errors.New("avirrun: unusable specification")
	// ErrInvalid means at least one benchmark was not measured (not
	// runnable, failed, or skipped after another failed): the verdict is
	// INVALID and nothing was signed. Run returns it with a Result that
	// says what happened to each benchmark.
	ErrInvalid = errors.New("avirrun: verdict INVALID: a benchmark was not measured")
	// ErrNotRunnable is the error of a benchmark that was not run: it has
	// no command, its outlier policy's statistics are not known, or it
	// asks for more runs than Options.MaxRuns.
	ErrNotRunnable = errors.New("benchmark not runnable")
	// ErrStepFailed is the error of a benchmark one of whose steps
	// failed: a non-zero exit, a timeout, a sandbox limit, or a measured
	// run whose last line of output is not a number.
	ErrStepFailed = errors.New("benchmark step failed")
	// ErrSkipped is the error of a benchmark not started because another
	// was not runnable, or an earlier one failed (see Options.KeepGoing).
	ErrSkipped = errors.New("benchmark skipped")
)

// Runner runs one command in a sandbox. *sandbox.Runner implements it.
type Runner interface {
	// Run runs cmd and reports how it ended.
	Run(ctx context.Context, cmd sandbox.Cmd) (sandbox.Result, error)
	// Sandbox describes the sandbox's layers ("none" when commands are
	// not isolated); every attestation item records it.
	Sandbox() string
}

// Options configure Run. Key is required; the zero value of every other
// field is usable.
type Options struct {
	// BenchmarkID, when set, runs only that benchmark. The attestation is
	// then over the specification reduced to it (Result.Spec, see
	// subsetSpec), not over the whole specification, whose hash it
	// records in metadata.ledger_subset_of.
	BenchmarkID string
	// Key signs the attestation (Ed25519 over the ASCII chain_hash).
	Key ed25519.PrivateKey
	// Verifier is recorded as the attestation's verifier; an empty one is
	// {"provider": "ledger", "model": "avirrun"}.
	Verifier avir.Verifier
	// SpecSource is recorded as system.spec_source (a path or URL).
	SpecSource string
	// Environment, when set, is recorded and hashed instead of what
	// DetectEnvironment reads (tests, or a verifier that describes its
	// machine itself). Empty Container and PythonVersion are null.
	Environment *avir.Environment
	// Now is the clock: called once before the first benchmark (started_at)
	// and once after the last (completed_at, the chain timestamp). Nil
	// means time.Now.
	Now func() time.Time
	// Timeout is the per-step timeout of benchmarks without
	// timeout_seconds; 0 means 60 s.
	Timeout time.Duration
	// MaxTimeout, when positive, caps every step's timeout; a step that
	// needed more is reported as timed out.
	MaxTimeout time.Duration
	// MaxRuns caps warmup_runs + runs per benchmark; 0 means 10000. A
	// benchmark asking for more is not runnable.
	MaxRuns int
	// KeepGoing runs every runnable benchmark even when another is not
	// runnable or fails, so that the Result reports on all of them. By
	// default a benchmark that is not runnable stops everything before it
	// starts, and one that fails skips the benchmarks after it: the
	// verdict is INVALID either way.
	KeepGoing bool
	// Limits bound each benchmark's sandbox (memory, processes, files,
	// disk); Wall and CPUTime are computed from the step timeouts and the
	// Output cap is raised to fit the driver's report.
	Limits sandbox.Limits
	// Logger receives debug logs; nil means slog.Default().
	Logger *slog.Logger
}

// Status says what happened to a benchmark.
type Status string

// The statuses of a benchmark.
const (
	// StatusMeasured: every step succeeded and every measured run gave a
	// number; the benchmark has statistics and a PASS or FAIL verdict.
	StatusMeasured Status = "measured"
	// StatusFailed: a step failed (ErrStepFailed).
	StatusFailed Status = "failed"
	// StatusNotRunnable: the benchmark was not run (ErrNotRunnable).
	StatusNotRunnable Status = "not_runnable"
	// StatusSkipped: not started because another benchmark was not
	// runnable or an earlier one failed (ErrSkipped).
	StatusSkipped Status = "skipped"
)

// Result is the outcome of Run.
type Result struct {
	// Spec is the specification the attestation is over: the one given,
	// or, with Options.BenchmarkID, the one reduced to that benchmark.
	Spec *avir.Spec
	// Verdict is VERIFIED, PARTIAL, FAILED or INVALID, and VerdictDetails
	// the attestation's verdict_details or why the verdict is INVALID.
	Verdict, VerdictDetails string
	// Level is the attestation's verification_level; "" when nothing was
	// signed.
	Level string
	// Benchmarks are the benchmarks run or considered, in spec order.
	Benchmarks []BenchmarkResult
	// Environment is what env_hash is over.
	Environment avir.Environment
	// Sandbox is the Runner's description of its sandbox.
	Sandbox string
	// Started and Completed are the clock's readings around the runs.
	Started, Completed time.Time
	// Attestation is the signed attestation (its Bytes are the document);
	// nil when the verdict is INVALID because a benchmark was not
	// measured. Every attestation Run returns verifies under codec/avir
	// against Spec.
	Attestation *avir.Attestation
}

// BenchmarkResult is what happened to one benchmark.
type BenchmarkResult struct {
	// ID is the benchmark's id, Command its command extension field.
	ID, Command string
	// Timeout is the per-step timeout used.
	Timeout time.Duration
	// Status says whether the benchmark was measured; Err says why not
	// (wrapping ErrNotRunnable, ErrStepFailed or ErrSkipped).
	Status Status
	Err    error
	// Steps are the steps the driver reported, in the order they ran.
	Steps []Step
	// Values are the measured runs' values in run order (warm-up runs
	// excluded), as JSON numbers: ints stay ints.
	Values []canonjson.Value
	// Item is the attestation's results item for the benchmark, read by
	// codec/avir: statistics, threshold, verdict, reason. Nil unless
	// Status is StatusMeasured. For an INVALID result it is computed the
	// same way but not signed.
	Item *avir.BenchmarkResult
	// Verdict is Item's PASS or FAIL, or ERROR when not measured.
	Verdict string
}

// Step is one step the driver ran.
type Step struct {
	Kind  StepKind
	Index int
	// ExitStatus is the shell's exit status (128+n for a signal).
	ExitStatus int
	// TimedOut: the step's timeout ended it.
	TimedOut bool
	// Elapsed is the step's wall time as the driver measured it.
	Elapsed time.Duration
	// LastLine is a measured run's last line of standard output.
	LastLine string
	// Stderr is the end of a failed step's standard error.
	Stderr string
	// Err is why the step failed; nil when it succeeded.
	Err error
}

// Run runs spec's benchmarks (or the one Options.BenchmarkID names) in
// the sandbox r, computes their statistics and verdicts as the reference
// does (through codec/avir's builder), hashes the environment and signs
// the attestation with Options.Key. docs/AVIR-RUN.md describes what a
// benchmark needs and how each outcome is recorded.
//
// Errors: ErrSpec before anything runs; ErrInvalid, with a Result, when a
// benchmark was not measured; an error from r or ctx (wrapped, no
// Result) when the sandbox itself failed or the run was cancelled.
// Given the same measurements, environment and clock, Run returns the
// same attestation bytes.
func Run(ctx context.Context, r Runner, spec *avir.Spec, opts Options) (*Result, error) {
	if r == nil || spec == nil {
		return nil, errors.New("avirrun: Run: nil Runner or Spec")
	}
	if len(opts.Key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("avirrun: Options.Key is %d bytes, want an Ed25519 private key of %d", len(opts.Key), ed25519.PrivateKeySize)
	}
	o := opts.withDefaults()
	exts, err := readExtensions(spec)
	if err != nil {
		return nil, err
	}
	target := spec
	selected := spec.Benchmarks()
	if o.BenchmarkID != "" {
		b, ok := spec.Benchmark(o.BenchmarkID)
		if !ok {
			return nil, fmt.Errorf("%w: Options.BenchmarkID: no benchmark %q in the specification", ErrSpec, o.BenchmarkID)
		}
		selected = []avir.Benchmark{b}
		if len(spec.Benchmarks()) > 1 {
			if target, err = subsetSpec(spec, []string{b.ID}, true); err != nil {
				return nil, err
			}
		}
	}

	res := &Result{Spec: target, Sandbox: r.Sandbox()}
	res.Benchmarks = make([]BenchmarkResult, len(selected))
	plans := make([]plan, len(selected))
	// A benchmark that cannot run makes the verdict INVALID before anything
	// runs: unless KeepGoing, nothing else is run (or detected) for it.
	failed := false
	for i, b := range selected {
		res.Benchmarks[i], plans[i] = o.prepare(b, exts[b.ID])
		failed = failed || res.Benchmarks[i].Status == StatusNotRunnable
	}

	if o.Environment != nil {
		res.Environment = *o.Environment
	} else if !failed || o.KeepGoing {
		if res.Environment, err = DetectEnvironment(ctx, r); err != nil {
			return nil, err
		}
	}

	res.Started = o.Now()
	for i := range res.Benchmarks {
		br := &res.Benchmarks[i]
		if br.Status == StatusNotRunnable {
			continue
		}
		if failed && !o.KeepGoing {
			br.Status, br.Err = StatusSkipped, fmt.Errorf("%w: another benchmark was not measured", ErrSkipped)
			continue
		}
		if err := o.runBenchmark(ctx, r, plans[i], br); err != nil {
			return nil, err
		}
		if br.Status != StatusMeasured {
			failed = true
		}
	}
	res.Completed = o.Now()

	if failed {
		return res, o.invalid(res)
	}
	if err := o.attest(res); err != nil {
		return nil, err
	}
	return res, nil
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.MaxRuns <= 0 {
		o.MaxRuns = 10000
	}
	if o.Verifier == (avir.Verifier{}) {
		o.Verifier = avir.Verifier{Provider: "ledger", Model: "avirrun"}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// prepare decides whether b can run and with which plan.
func (o Options) prepare(b avir.Benchmark, ext extension) (BenchmarkResult, plan) {
	br := BenchmarkResult{ID: b.ID, Command: ext.command, Verdict: "ERROR"}
	p := plan{timeout: o.Timeout, setup: b.Setup, command: ext.command, warmup: b.WarmupRuns, runs: b.Runs, teardown: b.Teardown}
	if ext.timeout > 0 {
		p.timeout = ext.timeout
	}
	if o.MaxTimeout > 0 && p.timeout > o.MaxTimeout {
		p.timeout = o.MaxTimeout
	}
	br.Timeout = p.timeout
	notRunnable := func(format string, args ...any) {
		br.Status = StatusNotRunnable
		br.Err = fmt.Errorf("%w: %s", ErrNotRunnable, fmt.Sprintf(format, args...))
	}
	switch {
	case ext.command == "":
		notRunnable("no %q field: the methodology is prose, and the ledger runs only commands", fieldCommand)
	case b.OutlierPolicy != "iqr" && b.OutlierPolicy != "none":
		notRunnable("outlier_policy %q: the reference's statistics are known only for iqr and none", b.OutlierPolicy)
	case b.WarmupRuns > o.MaxRuns || b.Runs > o.MaxRuns-b.WarmupRuns:
		notRunnable("warmup_runs %d + runs %d exceed this verifier's limit of %d", b.WarmupRuns, b.Runs, o.MaxRuns)
	}
	return br, p
}

// runBenchmark runs one benchmark's plan in one sandbox and records its
// steps, values and status. It returns an error only when the sandbox
// failed or ctx ended.
func (o Options) runBenchmark(ctx context.Context, r Runner, p plan, br *BenchmarkResult) error {
	o.Logger.Debug("avirrun: benchmark", "id", br.ID, "runs", p.runs, "warmup", p.warmup, "setup", len(p.setup), "teardown", len(p.teardown), "timeout", p.timeout)
	sr, err := r.Run(ctx, p.cmd(o.Limits, runtime.NumCPU()))
	if err != nil {
		return fmt.Errorf("avirrun: benchmark %q: %w", br.ID, err)
	}
	fail := func(format string, args ...any) {
		if br.Err == nil {
			br.Status = StatusFailed
			br.Err = fmt.Errorf("%w: %s", ErrStepFailed, fmt.Sprintf(format, args...))
		}
	}
	rep, perr := parseReport(sr.Report, p)
	for _, e := range rep.ended {
		st := o.step(e, p)
		if e.key.kind == StepRun && st.Err == nil {
			v, err := parseMeasurement(st.LastLine)
			if err != nil {
				st.Err = err
			} else {
				br.Values = append(br.Values, v)
			}
		}
		br.Steps = append(br.Steps, st)
		if st.Err != nil {
			fail("%s: %v", e.key, st.Err)
		}
	}
	switch {
	case perr != nil:
		// The report cannot be trusted past this point: say so, whatever
		// a step said before.
		br.Status = StatusFailed
		br.Err = fmt.Errorf("%w: %v (%s)", ErrStepFailed, perr, sandboxEnd(sr))
	case sr.Truncated:
		fail("the driver's report or output was cut at the sandbox's output limit")
	case rep.open != nil:
		st := Step{Kind: rep.open.kind, Index: rep.open.index, ExitStatus: -1, Err: errors.New(sandboxEnd(sr))}
		br.Steps = append(br.Steps, st)
		fail("%s: %v", *rep.open, st.Err)
	case !rep.done:
		fail("the driver ended before finishing (%s): %s", sandboxEnd(sr), lastText(sr.Stderr))
	case len(br.Values) != p.runs && br.Err == nil:
		fail("%d of %d measured runs reported", len(br.Values), p.runs)
	}
	if br.Err == nil {
		br.Status = StatusMeasured
	}
	o.Logger.Debug("avirrun: benchmark done", "id", br.ID, "status", br.Status, "values", len(br.Values), "err", br.Err)
	return nil
}

// step turns a reported step end into a Step, deciding whether it failed.
func (o Options) step(e stepEnd, p plan) Step {
	st := Step{Kind: e.key.kind, Index: e.key.index, ExitStatus: e.status, Elapsed: e.elapsed}
	if e.status != 0 {
		st.Stderr = string(e.stderr)
	}
	// coreutils' timeout exits 124 when its SIGTERM ended the command,
	// 137 when SIGKILL had to follow; a command exiting 124 by itself
	// before its time is an ordinary failure.
	switch {
	case (e.status == 124 || e.status == 137) && e.elapsed >= p.timeout:
		st.TimedOut = true
		st.Err = fmt.Errorf("timed out after %s", p.timeout)
	case e.status != 0:
		st.Err = fmt.Errorf("exit status %d%s", e.status, stderrSuffix(e.stderr))
	case e.key.kind == StepRun:
		line, err := lastLine(e.stdout, e.size)
		st.LastLine = line
		st.Err = err
	}
	return st
}

func stderrSuffix(b []byte) string {
	if len(strings.TrimSpace(string(b))) == 0 {
		return ""
	}
	return ": " + lastText(b)
}

// sandboxEnd says how the sandbox ended, for a step it cut short.
func sandboxEnd(sr sandbox.Result) string {
	switch {
	case sr.TimedOut:
		return "the sandbox's wall-clock limit ended it"
	case sr.CPULimit:
		return "the sandbox's CPU time limit ended it"
	case sr.MemoryLimit:
		return "the sandbox's memory limit ended it"
	case sr.FileSizeLimit:
		return "the sandbox's file size limit ended it"
	case sr.Signal != "":
		return "the driver was killed by " + sr.Signal
	}
	return fmt.Sprintf("the driver exited with status %d", sr.ExitCode)
}

// invalid fills an INVALID result: per-benchmark statistics for the
// benchmarks that were measured (built, never signed) and the reason.
func (o Options) invalid(res *Result) error {
	res.Verdict = "INVALID"
	var measured, reasons []string
	for _, b := range res.Benchmarks {
		if b.Status == StatusMeasured {
			measured = append(measured, b.ID)
		} else if b.Status != StatusSkipped {
			reasons = append(reasons, fmt.Sprintf("%s: %v", b.ID, b.Err))
		}
	}
	n := len(res.Benchmarks) - len(measured)
	res.VerdictDetails = fmt.Sprintf("%d of %d benchmarks not measured; %s", n, len(res.Benchmarks), strings.Join(reasons, "; "))
	if len(measured) > 0 {
		sub, err := subsetSpec(res.Spec, measured, false)
		if err != nil {
			return err
		}
		att, err := o.build(sub, res, "L1")
		if err != nil {
			return err
		}
		o.attachItems(res, att)
	}
	return fmt.Errorf("%w: %s", ErrInvalid, res.VerdictDetails)
}
