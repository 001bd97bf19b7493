package avirrun

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/avir"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/verifier/sandbox"
)

// TestStatistics runs scripted measurements through Run and compares each
// item's statistics, threshold and verdict with values computed by hand
// (and, for the standard deviations, with CPython's statistics.stdev):
// the reference's IQR filter (q1 = s[n//4], q3 = s[3n//4], 1.5 IQR fences,
// only from 4 values), sample standard deviation, p95 = s[int(0.95 n)],
// ints kept as ints. Every attestation must verify under codec/avir
// against its specification.
func TestStatistics(t *testing.T) {
	cases := []struct {
		name    string
		bench   bench
		values  []string
		stats   string // canonical JSON of the item's statistics
		thresh  string
		verdict string
		level   string
	}{
		{
			// sorted 10 11 12 13 100: q1 11, q3 13, fences 8..16: 100 goes.
			name:   "iqr removes an outlier",
			bench:  bench{"target": 12, "tolerance": 0.1},
			values: []string{"10", "12", "11", "13", "100"},
			stats:  `{"count":4,"max":13,"mean":11.5,"median":11.5,"min":10,"outliers_removed":1,"p95":13,"p99":13,"std_dev":1.291}`,
			thresh: "10.8", verdict: "PASS", level: "L2",
		},
		{
			name:   "policy none keeps it",
			bench:  bench{"target": 12, "tolerance": 0.1, "outlier_policy": "none"},
			values: []string{"10", "12", "11", "13", "100"},
			stats:  `{"count":5,"max":100,"mean":29.2,"median":12,"min":10,"outliers_removed":0,"p95":100,"p99":100,"std_dev":39.594}`,
			thresh: "10.8", verdict: "PASS", level: "L1",
		},
		{
			// q1 = q3 = 100: a zero IQR removes everything but 100; the mean
			// of ints stays the int 100; lower is better.
			name:   "zero iqr, lower is better",
			bench:  bench{"target": 110, "tolerance": 0.05, "lower_is_better": true},
			values: []string{"100", "102", "98", "100", "100"},
			stats:  `{"count":3,"max":100,"mean":100,"median":100,"min":100,"outliers_removed":2,"p95":100,"p99":100,"std_dev":0.0}`,
			thresh: "115.5", verdict: "PASS", level: "L2",
		},
		{
			// Three values: no IQR filter below 4.
			name:   "fewer than 4 runs are not filtered",
			bench:  bench{"target": 50, "tolerance": 0.2, "runs": 3},
			values: []string{"1", "100", "2"},
			stats:  `{"count":3,"max":100,"mean":34.333,"median":2,"min":1,"outliers_removed":0,"p95":100,"p99":100,"std_dev":56.871}`,
			thresh: "40.0", verdict: "FAIL", level: "L1",
		},
		{
			name:   "floats and a failing lower-is-better mean",
			bench:  bench{"target": 3, "tolerance": 0.1, "lower_is_better": true, "unit": "ms"},
			values: []string{"3.5", "3.5", "3.50", "35e-1", "3.5"},
			stats:  `{"count":5,"max":3.5,"mean":3.5,"median":3.5,"min":3.5,"outliers_removed":0,"p95":3.5,"p99":3.5,"std_dev":0.0}`,
			thresh: "3.3", verdict: "FAIL", level: "L2",
		},
		{
			// 20 values 1..20: p95 = s[19] = 20, p99 = s[19]; median of an
			// even count is the mean of the middle two.
			name:   "twenty runs",
			bench:  bench{"target": 10, "tolerance": 0, "runs": 20},
			values: []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18", "19", "20"},
			stats:  `{"count":20,"max":20,"mean":10.5,"median":10.5,"min":1,"outliers_removed":0,"p95":20,"p99":20,"std_dev":5.916}`,
			thresh: "10", verdict: "PASS", level: "L2",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := bench{"id": "b", "command": "measure"}
			for k, v := range c.bench {
				b[k] = v
			}
			spec := specOf(t, b)
			res, err := Run(context.Background(), &fakeRunner{script: values(c.values...)}, spec, opts())
			if err != nil {
				t.Fatal(err)
			}
			mustVerify(t, res)
			it := item(t, res.Attestation, 0)
			st, _ := it.Get("statistics")
			if got := string(canonjson.Canonical(st)); got != c.stats {
				t.Errorf("statistics\n got %s\nwant %s", got, c.stats)
			}
			th, _ := it.Get("threshold")
			vd, _ := it.Get("verdict")
			if got := string(canonjson.Canonical(th)); got != c.thresh {
				t.Errorf("threshold %s, want %s", got, c.thresh)
			}
			if s, _ := vd.Str(); s != c.verdict || res.Benchmarks[0].Verdict != c.verdict {
				t.Errorf("verdict %s / %s, want %s", s, res.Benchmarks[0].Verdict, c.verdict)
			}
			if res.Level != c.level || res.Attestation.Level() != c.level {
				t.Errorf("level %s, want %s", res.Level, c.level)
			}
			wantOverall := map[string]string{"PASS": "VERIFIED", "FAIL": "FAILED"}[c.verdict]
			if res.Verdict != wantOverall || res.Attestation.Verdict() != wantOverall {
				t.Errorf("overall verdict %s, want %s", res.Verdict, wantOverall)
			}
			// The item's ledger_run records the command and the values as
			// measured, before outlier removal.
			lr, _ := it.Get(runField)
			cmd, _ := lr.Get("command")
			if s, _ := cmd.Str(); s != "measure" {
				t.Errorf("ledger_run.command %q", s)
			}
			vals, _ := lr.Get("values")
			if vals.Len() != len(c.values) {
				t.Errorf("ledger_run.values has %d values, want %d", vals.Len(), len(c.values))
			}
		})
	}
}

// item returns the i-th results item of an attestation as written.
func item(t *testing.T, a *avir.Attestation, i int) canonjson.Value {
	t.Helper()
	res, _ := a.Value().Get("results")
	items, _ := res.Get("benchmarks")
	if i >= items.Len() {
		t.Fatalf("attestation has %d items", items.Len())
	}
	return items.Elems()[i]
}

// TestOverallVerdict checks the section 10.2 rule as the reference applies
// it: pass_rate 1 VERIFIED, >= 0.6 PARTIAL, else FAILED.
func TestOverallVerdict(t *testing.T) {
	pass, fail := values("20", "20", "20", "20", "20"), values("1", "1", "1", "1", "1")
	cases := []struct {
		name    string
		scripts []script
		verdict string
		details string
	}{
		{"all pass", []script{pass, pass, pass}, "VERIFIED", "All 3 benchmarks passed within tolerance"},
		{"two of three", []script{pass, pass, fail}, "PARTIAL", "2/3 benchmarks passed (1 failed)"},
		{"three of five is 0.6", []script{pass, pass, pass, fail, fail}, "PARTIAL", "3/5 benchmarks passed (2 failed)"},
		{"one of three", []script{pass, fail, fail}, "FAILED", "Only 1/3 benchmarks passed (2 failed)"},
		{"none", []script{fail}, "FAILED", "Only 0/1 benchmarks passed (1 failed)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var bs []bench
			m := map[string]script{}
			for i, s := range c.scripts {
				cmd := "cmd" + string(rune('a'+i))
				bs = append(bs, bench{"id": "b" + string(rune('a'+i)), "command": cmd})
				m[cmd] = s
			}
			res, err := Run(context.Background(), &fakeRunner{script: perCommand(m)}, specOf(t, bs...), opts())
			if err != nil {
				t.Fatal(err)
			}
			mustVerify(t, res)
			if res.Verdict != c.verdict || res.VerdictDetails != c.details {
				t.Errorf("verdict %s (%s), want %s (%s)", res.Verdict, res.VerdictDetails, c.verdict, c.details)
			}
		})
	}
}

// TestEmptySpec: a specification without benchmarks is INVALID by the
// section 10.2 rule; that attestation is signed (it verifies: there is no
// result it could contradict).
func TestEmptySpec(t *testing.T) {
	res, err := Run(context.Background(), &fakeRunner{}, specOf(t), opts())
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, res)
	if res.Verdict != "INVALID" || res.Level != "L1" {
		t.Errorf("verdict %s level %s", res.Verdict, res.Level)
	}
}

// TestWarmupAndSteps checks what runs, in which order, with which
// timeout: setup once, warm-up runs discarded, measured runs, teardown
// once; warm-up output is not a measurement.
func TestWarmupAndSteps(t *testing.T) {
	var seen []string
	s := func(kind StepKind, i int, c string) outcome {
		seen = append(seen, string(kind)+":"+c)
		switch kind {
		case StepWarmup:
			return outcome{stdout: "not a number\n"}
		case StepRun:
			return outcome{stdout: "5\n"}
		}
		return outcome{}
	}
	spec := specOf(t, bench{"id": "b", "command": "m", "warmup_runs": 2, "runs": 5, "setup": []string{"s1", "s2"}, "teardown": []string{"t1"}, "timeout_seconds": 2.5, "target": 5})
	f := &fakeRunner{script: s}
	res, err := Run(context.Background(), f, spec, opts())
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, res)
	want := "setup:s1 setup:s2 warmup:m warmup:m run:m run:m run:m run:m run:m teardown:t1"
	if got := strings.Join(seen, " "); got != want {
		t.Errorf("steps\n got %s\nwant %s", got, want)
	}
	b := res.Benchmarks[0]
	if len(b.Values) != 5 || b.Timeout != 2500*time.Millisecond || len(b.Steps) != 10 {
		t.Errorf("values %v, timeout %v, %d steps", b.Values, b.Timeout, len(b.Steps))
	}
	// One sandbox for the benchmark: its limits leave every step its
	// timeout.
	cmd := f.cmds[len(f.cmds)-1]
	if cmd.Limits.Wall < 10*2500*time.Millisecond || !cmd.Report || cmd.Path != "/bin/sh" {
		t.Errorf("sandbox command: wall %v, report %v, path %s", cmd.Limits.Wall, cmd.Report, cmd.Path)
	}
	lr, _ := item(t, res.Attestation, 0).Get(runField)
	to, _ := lr.Get("timeout_seconds")
	if to.Literal() != "2.5" {
		t.Errorf("ledger_run.timeout_seconds %s", to.Literal())
	}
}

// TestFailures is the failure table: each row breaks one thing, and the
// verdict must be INVALID with nothing signed, the benchmark's status and
// error saying what broke. No failure may pass silently.
func TestFailures(t *testing.T) {
	ok := func(kind StepKind, i int, c string) outcome {
		if kind == StepRun {
			return outcome{stdout: "7\n"}
		}
		return outcome{}
	}
	at := func(kind StepKind, idx int, o outcome) script {
		return func(k StepKind, i int, c string) outcome {
			if k == kind && i == idx {
				return o
			}
			return ok(k, i, c)
		}
	}
	base := bench{"id": "b", "command": "m", "setup": []string{"s"}, "teardown": []string{"t"}, "warmup_runs": 1, "timeout_seconds": 1}
	with := func(kv ...any) bench {
		b := bench{}
		for k, v := range base {
			b[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(b, kv[i].(string))
			} else {
				b[kv[i].(string)] = kv[i+1]
			}
		}
		return b
	}
	cases := []struct {
		name   string
		bench  bench
		script script
		status Status
		sent   error
		err    string // substring of the benchmark's error
		steps  int    // steps recorded
	}{
		{"no command", with("command", nil), ok, StatusNotRunnable, ErrNotRunnable, `no "command" field`, 0},
		{"null command", with("command", nil, "timeout_seconds", nil), ok, StatusNotRunnable, ErrNotRunnable, `no "command" field`, 0},
		{"zscore", with("outlier_policy", "zscore"), ok, StatusNotRunnable, ErrNotRunnable, `outlier_policy "zscore"`, 0},
		{"too many runs", with("runs", 9000, "warmup_runs", 2000), ok, StatusNotRunnable, ErrNotRunnable, "exceed this verifier's limit of 10000", 0},
		{"setup fails", with(), at(StepSetup, 0, outcome{status: 3, stderr: "x\nno such service\n"}), StatusFailed, ErrStepFailed, "setup 0: exit status 3: no such service", 2},
		{"warm-up fails", with(), at(StepWarmup, 0, outcome{status: 1}), StatusFailed, ErrStepFailed, "warmup 0: exit status 1", 3},
		{"run exits non-zero", with(), at(StepRun, 2, outcome{status: 2, stdout: "9\n"}), StatusFailed, ErrStepFailed, "run 2: exit status 2", 6},
		{"run times out", with(), at(StepRun, 0, outcome{status: 124, elapsed: 1200 * time.Millisecond}), StatusFailed, ErrStepFailed, "run 0: timed out after 1s", 4},
		{"run killed after timeout", with(), at(StepRun, 0, outcome{status: 137, elapsed: 3 * time.Second}), StatusFailed, ErrStepFailed, "run 0: timed out after 1s", 4},
		{"exit 124 before the timeout", with(), at(StepRun, 0, outcome{status: 124, elapsed: 10 * time.Millisecond}), StatusFailed, ErrStepFailed, "run 0: exit status 124", 4},
		{"unparsable last line", with(), at(StepRun, 3, outcome{stdout: "7 ops/s\n"}), StatusFailed, ErrStepFailed, `run 3: last line "7 ops/s" is not a JSON number`, 8},
		{"empty output", with(), at(StepRun, 1, outcome{}), StatusFailed, ErrStepFailed, "run 1: standard output is empty", 8},
		{"NaN", with(), at(StepRun, 1, outcome{stdout: "NaN"}), StatusFailed, ErrStepFailed, `run 1: last line "NaN" is not a JSON number`, 8},
		{"overflow", with(), at(StepRun, 1, outcome{stdout: "1e400"}), StatusFailed, ErrStepFailed, "run 1: number 1e400 overflows a float64", 8},
		{"huge int", with(), at(StepRun, 1, outcome{stdout: "9007199254740993"}), StatusFailed, ErrStepFailed, "beyond ±2^53", 8},
		{"long last line", with(), at(StepRun, 1, outcome{stdout: strings.Repeat("1", 200)}), StatusFailed, ErrStepFailed, "longer than 128 bytes", 8},
		{"teardown fails", with(), at(StepTeardown, 0, outcome{status: 1}), StatusFailed, ErrStepFailed, "teardown 0: exit status 1", 8},
		{"sandbox wall clock", with(), at(StepRun, 1, outcome{cut: "wall"}), StatusFailed, ErrStepFailed, "run 1: the sandbox's wall-clock limit ended it", 4},
		{"sandbox memory", with(), at(StepSetup, 0, outcome{cut: "memory"}), StatusFailed, ErrStepFailed, "setup 0: the sandbox's memory limit ended it", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := specOf(t, c.bench, bench{"id": "other", "command": "o"})
			f := &fakeRunner{script: perCommand(map[string]script{"m": c.script, "s": c.script, "t": c.script, "o": ok})}
			res, err := Run(context.Background(), f, spec, opts())
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v, want ErrInvalid", err)
			}
			if res == nil || res.Attestation != nil || res.Verdict != "INVALID" || res.Level != "" {
				t.Fatalf("result %+v: want INVALID and nothing signed", res)
			}
			b := res.Benchmarks[0]
			if b.Status != c.status || !errors.Is(b.Err, c.sent) || b.Err == nil || !strings.Contains(b.Err.Error(), c.err) {
				t.Errorf("status %s, error %v; want %s, %v containing %q", b.Status, b.Err, c.status, c.sent, c.err)
			}
			if b.Verdict != "ERROR" || b.Item != nil {
				t.Errorf("verdict %s, item %v", b.Verdict, b.Item)
			}
			if len(b.Steps) != c.steps {
				t.Errorf("%d steps recorded, want %d: %+v", len(b.Steps), c.steps, b.Steps)
			}
			if !strings.Contains(err.Error(), c.err) || !strings.Contains(res.VerdictDetails, "b: ") {
				t.Errorf("error %q / details %q do not name the failure", err, res.VerdictDetails)
			}
			// The benchmark after it is skipped, not run.
			if o := res.Benchmarks[1]; o.Status != StatusSkipped || !errors.Is(o.Err, ErrSkipped) {
				t.Errorf("second benchmark: %s %v", o.Status, o.Err)
			}
		})
	}
}

// TestKeepGoing: by default a benchmark that cannot run stops everything
// before it starts, even benchmarks listed before it; with KeepGoing the
// other benchmarks still run and get statistics (computed, never signed).
func TestKeepGoing(t *testing.T) {
	first := specOf(t, bench{"id": "b", "command": "m"}, bench{"id": "a"})
	f := &fakeRunner{script: values("6", "6", "6", "6", "6")}
	o := opts()
	o.Environment = nil
	res, err := Run(context.Background(), f, first, o)
	if !errors.Is(err, ErrInvalid) || len(f.cmds) != 0 {
		t.Fatalf("err %v, %d sandbox runs", err, len(f.cmds))
	}
	if res.Benchmarks[0].Status != StatusSkipped || res.Benchmarks[1].Status != StatusNotRunnable {
		t.Errorf("statuses %s %s", res.Benchmarks[0].Status, res.Benchmarks[1].Status)
	}

	spec := specOf(t, bench{"id": "a"}, bench{"id": "b", "command": "m", "target": 5})
	o = opts()
	o.KeepGoing = true
	res, err = Run(context.Background(), &fakeRunner{script: values("6", "6", "6", "6", "6")}, spec, o)
	if !errors.Is(err, ErrInvalid) || res.Attestation != nil {
		t.Fatalf("err %v, attestation %v", err, res.Attestation != nil)
	}
	a, b := res.Benchmarks[0], res.Benchmarks[1]
	if a.Status != StatusNotRunnable || b.Status != StatusMeasured || b.Item == nil || b.Verdict != "PASS" || b.Item.Statistics.Mean != 6 {
		t.Errorf("a %s, b %s %s %+v", a.Status, b.Status, b.Verdict, b.Item)
	}
	if res.VerdictDetails != `1 of 2 benchmarks not measured; a: benchmark not runnable: no "command" field: the methodology is prose, and the ledger runs only commands` {
		t.Errorf("details %q", res.VerdictDetails)
	}
}

// TestSpecErrors: malformed extension fields and options are refused
// before anything runs, naming the field.
func TestSpecErrors(t *testing.T) {
	cases := []struct {
		name  string
		bench bench
		opt   func(*Options)
		err   string
	}{
		{"command not a string", bench{"command": 42}, nil, "benchmarks[0].command: want string, got number"},
		{"command empty", bench{"command": "  "}, nil, "benchmarks[0].command: empty command"},
		{"command with NUL", bench{"command": "a\x00b"}, nil, "benchmarks[0].command: NUL byte at offset 1"},
		{"command too long", bench{"command": strings.Repeat("x", 65537)}, nil, "benchmarks[0].command: 65537 bytes, at most 65536 allowed"},
		{"teardown too long", bench{"command": "x", "teardown": []string{strings.Repeat("x", 70000)}}, nil, "benchmarks[0].teardown[0]: 70000 bytes"},
		{"setup with NUL", bench{"command": "x", "setup": []string{"ok", "\x00"}}, nil, "benchmarks[0].setup[1]: NUL byte at offset 0"},
		{"timeout a string", bench{"command": "x", "timeout_seconds": "5"}, nil, "benchmarks[0].timeout_seconds: want number, got string"},
		{"timeout zero", bench{"command": "x", "timeout_seconds": 0}, nil, "benchmarks[0].timeout_seconds: 0 is not in (0, 86400] seconds"},
		{"timeout too long", bench{"command": "x", "timeout_seconds": 1e9}, nil, "is not in (0, 86400] seconds"},
		{"timeout below 1ns", bench{"command": "x", "timeout_seconds": 1e-12}, nil, "below a nanosecond"},
		{"unknown benchmark id", bench{"command": "x"}, func(o *Options) { o.BenchmarkID = "nope" }, `Options.BenchmarkID: no benchmark "nope"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := bench{"id": "b"}
			for k, v := range c.bench {
				b[k] = v
			}
			o := opts()
			if c.opt != nil {
				c.opt(&o)
			}
			f := &fakeRunner{script: values("1", "1", "1", "1", "1")}
			res, err := Run(context.Background(), f, specOf(t, b), o)
			if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), c.err) || res != nil {
				t.Errorf("error %v, want ErrSpec containing %q", err, c.err)
			}
			if len(f.cmds) != 0 {
				t.Errorf("%d sandbox runs before the error", len(f.cmds))
			}
		})
	}
	o := opts()
	o.Key = nil
	if _, err := Run(context.Background(), &fakeRunner{}, specOf(t), o); err == nil || !strings.Contains(err.Error(), "Options.Key is 0 bytes") {
		t.Errorf("no key: %v", err)
	}
}

// TestCommandNotInSpecHash: codec/avir's normalized spec (the reference's
// to_dict) drops unknown fields, so a spec with commands parses and
// hashes exactly as without them. That is why the attestation binds the
// command through ledger_run instead: a changed command changes the
// attestation's results_hash and chain_hash.
func TestCommandNotInSpecHash(t *testing.T) {
	with := specOf(t, bench{"id": "b", "command": "echo 1", "timeout_seconds": 3})
	without := specOf(t, bench{"id": "b"})
	if with.Hash() != without.Hash() {
		t.Fatalf("spec hash changes with the command: %s vs %s", with.Hash(), without.Hash())
	}
	other := specOf(t, bench{"id": "b", "command": "echo 2"})
	run := func(s *avir.Spec) *Result {
		res, err := Run(context.Background(), &fakeRunner{script: values("1", "1", "1", "1", "1")}, s, opts())
		if err != nil {
			t.Fatal(err)
		}
		mustVerify(t, res)
		return res
	}
	a, b := run(with), run(other)
	if a.Attestation.Chain().SpecHash != b.Attestation.Chain().SpecHash {
		t.Error("spec hashes differ")
	}
	if a.Attestation.Chain().ResultsHash == b.Attestation.Chain().ResultsHash || a.Attestation.ID() == b.Attestation.ID() {
		t.Error("two commands, same results_hash: the command is not bound")
	}
}

// TestDeterministic: the same measurements, environment and clock give
// the same bytes; another clock reading gives another chain.
func TestDeterministic(t *testing.T) {
	spec := specOf(t, bench{"id": "b", "command": "m"}, bench{"id": "c", "command": "m", "lower_is_better": true})
	run := func(start time.Time) []byte {
		o := opts()
		o.Now = clock(start, 1500*time.Millisecond+123456789)
		res, err := Run(context.Background(), &fakeRunner{script: values("9.5", "10", "10.5", "11", "8")}, spec, o)
		if err != nil {
			t.Fatal(err)
		}
		mustVerify(t, res)
		return res.Attestation.Bytes()
	}
	a, b, c := run(t0), run(t0), run(t0.Add(time.Second))
	if !bytes.Equal(a, b) {
		t.Error("same inputs, different attestations")
	}
	if bytes.Equal(a, c) {
		t.Error("different clocks, same attestation")
	}
}

// TestBenchmarkID: one benchmark of several runs against the specification
// reduced to it, whose metadata names the full specification's hash; the
// attestation verifies against the reduced specification and not against
// the full one (it does not claim the others).
func TestBenchmarkID(t *testing.T) {
	spec := specOf(t, bench{"id": "a", "command": "ma"}, bench{"id": "b", "command": "mb", "setup": []string{"true"}}, bench{"id": "c"})
	o := opts()
	o.BenchmarkID = "b"
	var ran []string
	s := func(kind StepKind, i int, c string) outcome {
		ran = append(ran, c)
		if kind == StepRun {
			return outcome{stdout: "12"}
		}
		return outcome{}
	}
	res, err := Run(context.Background(), &fakeRunner{script: s}, spec, o)
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, res)
	if strings.Join(ran, " ") != "true mb mb mb mb mb" {
		t.Errorf("ran %q", ran)
	}
	if len(res.Spec.Benchmarks()) != 1 || res.Spec.Benchmarks()[0].ID != "b" || len(res.Benchmarks) != 1 {
		t.Fatalf("reduced spec has %v", res.Spec.Benchmarks())
	}
	if caps := res.Spec.Capabilities(); len(caps) != 1 || strings.Join(caps[0].Benchmarks, ",") != "b" {
		t.Errorf("capabilities %+v", caps)
	}
	meta, _ := res.Spec.Value().Get("metadata")
	sub, _ := meta.Get("ledger_subset_of")
	h, _ := sub.Get("spec_hash")
	if s, _ := h.Str(); s != spec.Hash() {
		t.Errorf("ledger_subset_of.spec_hash %q, want %s", s, spec.Hash())
	}
	if res.Attestation.SpecHash() != res.Spec.Hash() || res.Spec.Hash() == spec.Hash() {
		t.Error("attestation is not over the reduced specification")
	}
	fs := res.Attestation.Verify(avir.VerifyOptions{Spec: spec})
	codes := map[string]bool{}
	for _, f := range fs {
		codes[f.Code] = true
	}
	if !codes["spec_hash_mismatch"] || !codes["spec_benchmarks_mismatch"] {
		t.Errorf("against the full specification: %v", fs)
	}
	// The reduced spec still carries the command.
	ext, err := readExtensions(res.Spec)
	if err != nil || ext["b"].command != "mb" {
		t.Errorf("reduced spec's extensions %+v %v", ext, err)
	}

	// A specification of one benchmark is attested as it is.
	one := specOf(t, bench{"id": "b", "command": "mb"})
	o = opts()
	o.BenchmarkID = "b"
	res, err = Run(context.Background(), &fakeRunner{script: s}, one, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Spec != one {
		t.Error("a one-benchmark specification was reduced")
	}
}

// TestRunnerErrors: a sandbox that fails, or a cancelled context, is an
// error of Run, not a verdict.
func TestRunnerErrors(t *testing.T) {
	spec := specOf(t, bench{"id": "b", "command": "m"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, &fakeRunner{script: values("1", "1", "1", "1", "1")}, spec, opts()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	bad := &errRunner{err: sandbox.ErrStart}
	if _, err := Run(context.Background(), bad, spec, opts()); !errors.Is(err, sandbox.ErrStart) || !strings.Contains(err.Error(), `benchmark "b"`) {
		t.Errorf("sandbox error: %v", err)
	}
}

type errRunner struct{ err error }

func (e *errRunner) Run(context.Context, sandbox.Cmd) (sandbox.Result, error) {
	return sandbox.Result{}, e.err
}
func (e *errRunner) Sandbox() string { return "broken" }

// TestBrokenReports: a driver report that is cut, truncated or does not
// follow the protocol fails the benchmark; it never yields values.
func TestBrokenReports(t *testing.T) {
	const full = "B run 0\nE run 0 0 1 2 3130 -\nB run 1\nE run 1 0 1 2 3130 -\nB teardown 0\nE teardown 0 0 1 0 - -\nD\n"
	cases := []struct {
		name string
		rep  string
		res  sandbox.Result
		err  string
	}{
		{"valid", full, sandbox.Result{}, ""},
		{"empty, driver failed", "", sandbox.Result{ExitCode: 70, Stderr: []byte("mktemp: failed\n")}, "the driver ended before finishing (the driver exited with status 70): mktemp: failed"},
		{"no D line", "B run 0\nE run 0 0 1 2 3130 -\n", sandbox.Result{}, "the driver ended before finishing"},
		{"incomplete line", "B run 0\nE run 0 0 1 2 31", sandbox.Result{}, "incomplete line"},
		{"unknown kind", "X\n", sandbox.Result{}, `unknown line kind "X"`},
		{"out of order", "B run 1\n", sandbox.Result{}, "step run 1 out of order"},
		{"end without begin", "E run 0 0 1 2 3130 -\n", sandbox.Result{}, "step run 0 ends without having begun"},
		{"bad hex", "B run 0\nE run 0 0 1 2 zz -\n", sandbox.Result{}, "stdout tail"},
		{"bad status", "B run 0\nE run 0 300 1 2 3130 -\n", sandbox.Result{}, "is not a count"},
		{"after D", full + "D\n", sandbox.Result{}, "line 8: line after the final D line"},
		{"truncated", full, sandbox.Result{Truncated: true}, "cut at the sandbox's output limit"},
		{"too few runs", "B run 0\nE run 0 0 1 2 3130 -\nD\n", sandbox.Result{}, "line 3: done before step run 1"},
		{"skips without a failure", "B run 0\nE run 0 0 1 2 3130 -\nB teardown 0\n", sandbox.Result{}, "line 3: step teardown 0 out of order"},
		{"skips the teardown", "B run 0\nE run 0 1 1 2 3130 -\nD\n", sandbox.Result{}, "line 3: done before step teardown 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := specOf(t, bench{"id": "b", "command": "m", "runs": 2, "teardown": []string{"t"}})
			f := &fakeRunner{report: func(plan) ([]byte, sandbox.Result) { return []byte(c.rep), c.res }}
			res, err := Run(context.Background(), f, spec, opts())
			if c.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				mustVerify(t, res)
				return
			}
			if !errors.Is(err, ErrInvalid) || res.Attestation != nil {
				t.Fatalf("err %v", err)
			}
			b := res.Benchmarks[0]
			if b.Status != StatusFailed || !errors.Is(b.Err, ErrStepFailed) || !strings.Contains(b.Err.Error(), c.err) {
				t.Errorf("status %s, error %v, want one containing %q", b.Status, b.Err, c.err)
			}
		})
	}
}
