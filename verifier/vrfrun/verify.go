package vrfrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/proofledger/ledger/codec/vrf"
	"github.com/proofledger/ledger/verifier/sandbox"
)

// Runner runs one command in a sandbox. *sandbox.Runner implements it.
type Runner interface {
	// Run runs cmd and reports how it ended.
	Run(ctx context.Context, cmd sandbox.Cmd) (sandbox.Result, error)
	// Sandbox describes the sandbox's layers, for metadata.sandbox.
	Sandbox() string
	// Mode says whether commands are isolated (ModeNamespaces) or not.
	Mode() sandbox.Mode
}

// Options configure a Verifier. The zero value is usable.
type Options struct {
	// Jobs is how many tests run at once; 0 means GOMAXPROCS. Results
	// are always in request order.
	Jobs int
	// Python is the interpreter for python tests and expr constraints: a
	// name looked up in the sandbox's system directories, or an absolute
	// path; "" means python3. An interpreter outside /usr (e.g. under
	// ~/.pyenv) has its installation prefix shown read-only in the
	// sandbox. Its sys.version is what tier-0 environment hashes are
	// over, so a verifier that must give the same hashes as a reference
	// server uses the interpreter that server runs on.
	Python string
	// Limits bound every run; zero fields take the sandbox's defaults.
	// Wall is always the test's own timeout; a zero CPUTime becomes the
	// test's timeout times the number of CPUs, so that only the wall clock
	// decides, as in the reference (which sets no CPU limit).
	Limits sandbox.Limits
	// MaxTimeout, when positive, caps every test's timeout (the reference
	// has no cap; a test that needed more is reported as a timeout).
	MaxTimeout time.Duration
	// ConstraintTimeout bounds the run that evaluates a tier-1 request's
	// expr constraints (all of them, in one process); 0 means 30 s. The
	// reference evaluates them in its own process with no limit.
	ConstraintTimeout time.Duration
	// MaxMessage caps a detail's error text, in characters; 0 means
	// 16384, negative means no cap. The reference has no cap.
	MaxMessage int
	// VerifierVersion is metadata.verifier_version; "" means
	// vrf.DefaultVerifierVersion.
	VerifierVersion string
	// Logger receives debug logs; nil means slog.Default().
	Logger *slog.Logger
}

// Verifier runs verification requests in a sandbox. It is safe for
// concurrent use.
type Verifier struct {
	r    Runner
	opts Options
	log  *slog.Logger

	// lookPath finds programs as the sandbox will (sandbox.LookPath);
	// tests replace it.
	lookPath func(string) (string, error)
	// pyReadOnly is the interpreter's prefix when it lives outside /usr.
	pyReadOnly []string

	mu sync.Mutex
	py *pythonInfo // probed once, on first use
}

// pythonInfo is what the interpreter says about itself.
type pythonInfo struct {
	version string // sys.version
	runtime string // "python3.11"
}

// New returns a Verifier that runs everything through r.
func New(r Runner, opts Options) (*Verifier, error) {
	if r == nil {
		return nil, errors.New("vrfrun: New: nil Runner")
	}
	if opts.Jobs <= 0 {
		opts.Jobs = runtime.GOMAXPROCS(0)
	}
	if opts.Python == "" {
		opts.Python = "python3"
	}
	if opts.ConstraintTimeout <= 0 {
		opts.ConstraintTimeout = 30 * time.Second
	}
	if opts.MaxMessage == 0 {
		opts.MaxMessage = 16384
	}
	if opts.VerifierVersion == "" {
		opts.VerifierVersion = vrf.DefaultVerifierVersion
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	v := &Verifier{r: r, opts: opts, log: log, lookPath: sandbox.LookPath}
	if filepath.IsAbs(opts.Python) {
		real, err := filepath.EvalSymlinks(opts.Python)
		if err != nil {
			return nil, fmt.Errorf("vrfrun: Options.Python: %w", err)
		}
		if !strings.HasPrefix(real, "/usr/") {
			prefix, err := sandbox.InterpreterPrefix(real)
			if err != nil {
				return nil, fmt.Errorf("vrfrun: Options.Python: %w", err)
			}
			v.pyReadOnly = []string{prefix}
		}
	}
	return v, nil
}

// Result is the outcome of one verification: everything a receipt says
// except its id, time, signer and chain link.
type Result struct {
	// Tier is 0 or 1.
	Tier int
	// Verdict follows from Counts by the reference rule: error if any
	// check errored or timed out, else fail if some failed and none
	// passed, partial if some failed and some passed, else pass.
	Verdict string
	// Counts are results.total, passed, failed and errors.
	Counts vrf.Counts
	// Details are the checks, in request order.
	Details []vrf.Detail
	// Hashes are the receipt's hashes, computed as the reference computes
	// them; Environment is empty (null) for tier 1.
	Hashes vrf.Hashes
	// Environment is the text hashed into Hashes.Environment:
	// "python:" + the interpreter's sys.version (tier 0).
	Environment string
	// Language and Runtime are metadata.language and metadata.runtime
	// (tier 0): runtime "python3.11" for python, the language itself for
	// any other.
	Language, Runtime string
	// Sandboxed is metadata.sandboxed: code ran, and ran isolated
	// (sandbox.ModeNamespaces).
	Sandboxed bool
	// Sandbox is metadata.sandbox, the layers the code ran under; empty
	// when nothing ran (tier 1 without expr constraints).
	Sandbox string
	// ExecutionMS is metadata.execution_ms, rounded to 2 decimals.
	ExecutionMS float64
	// VerifierVersion is metadata.verifier_version.
	VerifierVersion string
	// TaskID and TaskType are copied from the request.
	TaskID, TaskType string
}

// Verify runs req's tests or checks and returns the result. An error means
// no verdict could be reached: the request needs a runtime this machine
// lacks (ErrLanguage), the sandbox failed to start a command, or ctx
// ended.
func (v *Verifier) Verify(ctx context.Context, req *Request) (*Result, error) {
	if req == nil {
		return nil, errors.New("vrfrun: Verify: nil Request")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("vrfrun: %w", err)
	}
	res := &Result{
		Tier:            req.Tier,
		Hashes:          req.hashes,
		TaskID:          req.TaskID,
		TaskType:        req.TaskType,
		VerifierVersion: v.opts.VerifierVersion,
	}
	start := time.Now()
	var err error
	switch req.Form {
	case FormPython:
		err = v.runPython(ctx, req, res)
	case FormProgram:
		err = v.runProgram(ctx, req, res)
	case FormExpression:
		err = v.runExpression(ctx, req, res)
	case FormChecks:
		err = v.runChecks(ctx, req, res, start)
	default:
		err = fmt.Errorf("vrfrun: Verify: unknown form %v", req.Form)
	}
	if err != nil {
		return nil, err
	}
	res.ExecutionMS = math.Round(msSince(start)*100) / 100
	for _, d := range res.Details {
		res.Counts.Total++
		switch d.Status {
		case vrf.StatusPass:
			res.Counts.Passed++
		case vrf.StatusFail:
			res.Counts.Failed++
		default:
			res.Counts.Errors++
		}
	}
	res.Verdict = res.Counts.ExpectedVerdict()
	v.log.Debug("vrfrun: verified", "tier", res.Tier, "form", req.Form.String(), "language", res.Language,
		"verdict", res.Verdict, "counts", res.Counts.String(), "execution_ms", res.ExecutionMS)
	return res, nil
}

// tier0 fills what every tier-0 result carries: the environment hash over
// the interpreter's version (the reference hashes "python:" + its own
// sys.version whatever the language) and language/runtime metadata.
//
// On a machine without the interpreter, a request in another language
// still runs: its environment is "<language>:" + the program's path.
func (v *Verifier) tier0(ctx context.Context, req *Request, res *Result, program string) error {
	res.Language = req.Language
	res.Runtime = req.Language
	if _, err := v.lookPath(v.opts.Python); err != nil && req.Language != "python" {
		path, _ := v.lookPath(program)
		res.Environment = req.Language + ":" + path
	} else {
		py, err := v.python(ctx)
		if err != nil {
			return err
		}
		res.Environment = "python:" + py.version
		if req.Language == "python" {
			res.Runtime = py.runtime
		}
	}
	res.Hashes.Environment = vrf.ShortHash([]byte(res.Environment))
	res.Sandboxed = v.r.Mode() == sandbox.ModeNamespaces
	res.Sandbox = v.r.Sandbox()
	return nil
}

// python probes the interpreter once.
func (v *Verifier) python(ctx context.Context) (pythonInfo, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.py != nil {
		return *v.py, nil
	}
	out, err := v.r.Run(ctx, sandbox.Cmd{
		Path:     v.opts.Python,
		Args:     []string{"-c", probeScript},
		Env:      pythonEnv(),
		ReadOnly: v.pyReadOnly,
		Report:   true,
		Limits:   v.limits(10 * time.Second),
	})
	if err != nil {
		return pythonInfo{}, fmt.Errorf("vrfrun: probing %s: %w", v.opts.Python, err)
	}
	doc, perr := parseText(string(out.Report))
	if perr != nil || doc.k != kList || len(doc.list) != 2 || doc.list[0].k != kStr || doc.list[1].k != kStr {
		return pythonInfo{}, fmt.Errorf("vrfrun: probing %s: no version reported (exit %d, stderr %q)", v.opts.Python, out.ExitCode, clip(string(out.Stderr), 200))
	}
	v.py = &pythonInfo{version: doc.list[0].s, runtime: "python" + doc.list[1].s}
	return *v.py, nil
}

// pythonEnv is the environment of Python runs: the sandbox's default plus
// PYTHONDONTWRITEBYTECODE, which the reference sets.
func pythonEnv() []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/box", "TMPDIR=/tmp", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"}
}

// limits returns the run limits for a wall-clock timeout.
func (v *Verifier) limits(wall time.Duration) sandbox.Limits {
	l := v.opts.Limits
	l.Wall = wall
	if l.CPUTime <= 0 {
		n := time.Duration(runtime.NumCPU())
		l.CPUTime = maxDuration
		if wall < maxDuration/n {
			l.CPUTime = wall * n
		}
		l.CPUTime = max(l.CPUTime, time.Second)
	}
	return l
}

// maxDuration is the longest timeout a test may ask for (about 146 years).
const maxDuration = time.Duration(1 << 62)

// wall turns a timeout in seconds into a duration: ok is false when it is
// not positive (the reference's subprocess then times out at once);
// capped is set when Options.MaxTimeout cut it.
func (v *Verifier) wall(secs float64) (d time.Duration, ok, capped bool) {
	if !(secs > 0) {
		return 0, false, false
	}
	if secs*1e9 >= float64(maxDuration) {
		d = maxDuration
	} else {
		d = time.Duration(secs * 1e9)
	}
	if d <= 0 {
		return 0, false, false
	}
	if v.opts.MaxTimeout > 0 && d > v.opts.MaxTimeout {
		return v.opts.MaxTimeout, true, true
	}
	return d, true, false
}

// each runs fn for i in [0, n) on up to Jobs goroutines and returns the
// first error.
func (v *Verifier) each(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, v.opts.Jobs)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { firstErr = err; cancel() })
			}
		}(i)
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("vrfrun: %w", err)
	}
	return nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t)) / float64(time.Millisecond) }

// limitNote says which sandbox limit ended a run, "" when none did.
func limitNote(out sandbox.Result) string {
	switch {
	case out.MemoryLimit:
		return "sandbox: memory limit exceeded"
	case out.FileSizeLimit:
		return "sandbox: file size limit exceeded"
	case out.CPULimit:
		return "sandbox: CPU time limit exceeded"
	}
	return ""
}
