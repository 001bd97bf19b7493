package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/proofledger/ledger/verifier/sandbox"
	"github.com/proofledger/ledger/verifier/vrfrun"
)

// The verification figures: what the sandbox costs a VRF test, and how
// many tests per second `ledger run vrf` decides, each beside the same
// tests run by the same verifier (verifier/vrfrun) with the same
// interpreter started bare, as plain subprocesses (bareRunner), in the
// same run.

// verifySuite returns a tier-0 request of n quick python tests (each a
// fresh interpreter that runs the code and compares one value).
func verifySuite(n int) ([]byte, error) {
	tests := make([]any, n)
	for i := range tests {
		tests[i] = map[string]any{"name": fmt.Sprintf("t%03d", i), "input": fmt.Sprintf("inc(%d)", i),
			"expected_output": fmt.Sprint(i + 1), "timeout_ms": 30000}
	}
	return json.Marshal(map[string]any{
		"tier":         0,
		"output":       map[string]any{"content": "def inc(x):\n    return x + 1\n"},
		"verification": map[string]any{"test_suite": map[string]any{"tests": tests}},
	})
}

// verifyAll measures the per-test cost (one test at a time) and the
// throughput (GOMAXPROCS at a time) of the sandbox against bare
// subprocesses. It reports why it measured nothing where the machine has
// no python3 or refuses the sandbox's namespaces.
func (b *bench) verifyAll(ctx context.Context) error {
	if _, err := sandbox.LookPath("python3"); err != nil {
		b.progress.Warn("verify.* not measured: no python3 in the system directories", "err", err)
		return nil
	}
	if err := sandbox.Available(); err != nil {
		b.progress.Warn("verify.* not measured: the kernel refuses the sandbox's namespaces", "err", err)
		return nil
	}
	serialN, suiteN, trials := 100, 100, 3
	if b.sizes.Trials == 1 { // --quick
		serialN, suiteN, trials = 20, 40, 1
	}
	jobs := runtime.GOMAXPROCS(0)
	serialReq, err := parseSuite(serialN)
	if err != nil {
		return err
	}
	suiteReq, err := parseSuite(suiteN)
	if err != nil {
		return err
	}
	bare := &bareRunner{work: b.work}

	// One test at a time, each run in a pooled sandbox (as `ledger run
	// vrf` keeps them) and bare, in turn: on a shared machine the load
	// changes from second to second, and paired runs see the same load.
	one, err := sandbox.New(sandbox.Config{Pool: 1})
	if err != nil {
		return err
	}
	defer func() { _ = one.Close() }() // stops the pool; nothing to lose
	b.progress.Info("measuring the sandbox's cost per test", "tests", serialN)
	pair := &pairRunner{sb: one, bare: bare}
	v, err := vrfrun.New(pair, vrfrun.Options{Jobs: 1, Logger: b.log})
	if err != nil {
		return err
	}
	for i := range 2 { // the first is a warm-up: the interpreter's probe, the pool filled
		pair.sbD, pair.bareD = nil, nil
		res, err := v.Verify(ctx, serialReq)
		if err != nil {
			return err
		}
		if res.Verdict != "pass" {
			return fmt.Errorf("sandboxed suite: verdict %s (%s)", res.Verdict, res.Counts)
		}
		_ = i
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 }
	diffs := make([]time.Duration, len(pair.sbD))
	for i := range diffs {
		diffs[i] = pair.sbD[i] - pair.bareD[i]
	}
	sbMS, bareMS, overMS := ms(median(pair.sbD)), ms(median(pair.bareD)), ms(median(diffs))
	b.add(figure{Name: "verify.test", Value: sbMS, Unit: "ms/test", Limit: bareMS, Better: "lower",
		LimitName: "the same test with the same python3 started bare (os/exec), run right after or before it",
		Note: fmt.Sprintf("median over %d python tests decided by vrfrun one at a time in a pooled sandbox (Config.Pool 1); "+
			"each test is a fresh interpreter that runs the code, evaluates input and expected_output and compares them", len(pair.sbD))})
	b.add(figure{Name: "verify.sandbox_overhead", Value: overMS, Unit: "ms/test", Limit: bareMS, Better: "lower",
		LimitName: "the bare test's own time (ratio: what the sandbox adds to it)", Goal: 10, GoalName: "the issue's 10 ms per test",
		Note: fmt.Sprintf("median of the %d paired differences sandboxed - bare: namespaces, mounts, the exec stage, limits and teardown "+
			"of one sandbox, per test; fastest runs %.1f ms sandboxed, %.1f ms bare", len(diffs), ms(slices.Min(pair.sbD)), ms(slices.Min(pair.bareD)))})

	// A suite at the core count, as `ledger run vrf --jobs N` runs it.
	pool, err := sandbox.New(sandbox.Config{Pool: jobs})
	if err != nil {
		return err
	}
	defer func() { _ = pool.Close() }() // stops the pool; nothing to lose
	b.progress.Info("measuring verification throughput", "tests", suiteN, "jobs", jobs, "trials", trials)
	sbSuite, bareSuite, err := b.bestOf(ctx, trials, suiteReq, pool, bare, jobs)
	if err != nil {
		return err
	}
	rate := func(d time.Duration) float64 { return float64(suiteN) / d.Seconds() }
	b.add(figure{Name: fmt.Sprintf("verify.throughput.jobs=%d", jobs), Value: rate(sbSuite), Unit: "tests/s", Limit: rate(bareSuite),
		LimitName: fmt.Sprintf("the same suite as bare subprocesses, %d at a time", jobs),
		Note: fmt.Sprintf("a request of %d quick python tests decided by vrfrun with Jobs %d through sandboxes pooled %d deep (ledger run vrf --jobs %d), fastest of %d",
			suiteN, jobs, jobs, jobs, trials)})
	b.fact("verify.tests_per_suite", float64(suiteN), "tests")
	return nil
}

func parseSuite(n int) (*vrfrun.Request, error) {
	body, err := verifySuite(n)
	if err != nil {
		return nil, err
	}
	return vrfrun.ParseRequest(body, vrfrun.ParseOptions{})
}

// bestOf decides req through the sandbox and the bare runner in turn,
// trials times each after one warm-up of each (the interpreter's probe,
// the pool filled), and returns the fastest time of each. Every test must
// pass: a verdict other than pass means the figure measured something
// else.
func (b *bench) bestOf(ctx context.Context, trials int, req *vrfrun.Request, sb *sandbox.Runner, bare *bareRunner, jobs int) (time.Duration, time.Duration, error) {
	vs, err := vrfrun.New(sb, vrfrun.Options{Jobs: jobs, Logger: b.log})
	if err != nil {
		return 0, 0, err
	}
	vb, err := vrfrun.New(bare, vrfrun.Options{Jobs: jobs, Logger: b.log})
	if err != nil {
		return 0, 0, err
	}
	once := func(v *vrfrun.Verifier, what string) (time.Duration, error) {
		start := time.Now()
		res, err := v.Verify(ctx, req)
		d := time.Since(start)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", what, err)
		}
		if res.Verdict != "pass" {
			for _, dt := range res.Details {
				if dt.Status != "pass" {
					return 0, fmt.Errorf("%s: verdict %s: test %s %s: %s", what, res.Verdict, dt.Name, dt.Status, dt.Error)
				}
			}
		}
		return d, nil
	}
	var bestS, bestB time.Duration
	for i := -1; i < trials; i++ {
		s, err := once(vs, "sandbox")
		if err != nil {
			return 0, 0, err
		}
		bt, err := once(vb, "bare")
		if err != nil {
			return 0, 0, err
		}
		if i < 0 {
			continue // warm-up
		}
		if bestS == 0 || s < bestS {
			bestS = s
		}
		if bestB == 0 || bt < bestB {
			bestB = bt
		}
	}
	return bestS, bestB, nil
}

// pairRunner runs each command in the sandbox and bare, in alternating
// order, records both times and returns the sandbox's result. Not for
// concurrent use (Jobs 1).
type pairRunner struct {
	sb         *sandbox.Runner
	bare       *bareRunner
	flip       bool
	sbD, bareD []time.Duration
}

// Sandbox implements vrfrun.Runner.
func (p *pairRunner) Sandbox() string { return p.sb.Sandbox() }

// Mode implements vrfrun.Runner.
func (p *pairRunner) Mode() sandbox.Mode { return p.sb.Mode() }

// Run implements vrfrun.Runner.
func (p *pairRunner) Run(ctx context.Context, c sandbox.Cmd) (sandbox.Result, error) {
	var res sandbox.Result
	runSB := func() error {
		t := time.Now()
		r, err := p.sb.Run(ctx, c)
		p.sbD = append(p.sbD, time.Since(t))
		res = r
		return err
	}
	runBare := func() error {
		t := time.Now()
		r, err := p.bare.Run(ctx, c)
		p.bareD = append(p.bareD, time.Since(t))
		if err == nil && (r.ExitCode != 0 || r.TimedOut) {
			err = fmt.Errorf("bare run: exit %d, timed out %v: %s", r.ExitCode, r.TimedOut, r.Stderr)
		}
		return err
	}
	first, second := runSB, runBare
	if p.flip {
		first, second = runBare, runSB
	}
	p.flip = !p.flip
	if err := first(); err != nil {
		return res, err
	}
	return res, second()
}

// median returns the median of ds (the upper middle of an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// bareRunner runs commands as plain subprocesses (os/exec) in a fresh
// directory under work, with the files, standard input, report pipe (file
// descriptor 3) and wall-clock limit of the Cmd, and nothing else: the
// sandbox's limit of what the same interpreter costs started bare. It
// implements vrfrun.Runner.
type bareRunner struct{ work string }

// Sandbox implements vrfrun.Runner.
func (*bareRunner) Sandbox() string { return "bare" }

// Mode implements vrfrun.Runner.
func (*bareRunner) Mode() sandbox.Mode { return sandbox.ModeNone }

// Run implements vrfrun.Runner.
func (r *bareRunner) Run(ctx context.Context, c sandbox.Cmd) (sandbox.Result, error) {
	var res sandbox.Result
	path, err := sandbox.LookPath(c.Path)
	if err != nil {
		return res, err
	}
	dir, err := os.MkdirTemp(r.work, "bare-")
	if err != nil {
		return res, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // best effort: a temporary directory
	for name, data := range c.Files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return res, err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return res, err
		}
	}
	if c.Limits.Wall > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Limits.Wall)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, path, c.Args...)
	cmd.Dir, cmd.Env = dir, c.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(c.Stdin), &stdout, &stderr
	var report bytes.Buffer
	var pr, pw *os.File
	if c.Report {
		if pr, pw, err = os.Pipe(); err != nil {
			return res, err
		}
		cmd.ExtraFiles = []*os.File{pw}
	}
	start := time.Now()
	err = cmd.Start()
	if pw != nil {
		_ = pw.Close() // the child holds its own copy
	}
	if err != nil {
		if pr != nil {
			_ = pr.Close()
		}
		return res, err
	}
	done := make(chan struct{})
	if pr != nil {
		go func() {
			_, _ = report.ReadFrom(pr)
			_ = pr.Close()
			close(done)
		}()
	} else {
		close(done)
	}
	err = cmd.Wait()
	<-done
	res.Wall = time.Since(start)
	res.Stdout, res.Stderr, res.Report = stdout.Bytes(), stderr.Bytes(), report.Bytes()
	res.Sandbox = "bare"
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.TimedOut, res.ExitCode = true, -1
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		if res.ExitCode < 0 {
			res.Signal = strings.TrimPrefix(ee.String(), "signal: ")
		}
	case err != nil:
		return res, err
	}
	if ps := cmd.ProcessState; ps != nil {
		res.CPU = ps.UserTime() + ps.SystemTime()
	}
	return res, nil
}
