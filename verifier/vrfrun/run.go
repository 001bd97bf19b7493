package vrfrun

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/proofledger/ledger/codec/vrf"
	"github.com/proofledger/ledger/verifier/sandbox"
)

// runPython runs FormPython tests: one harness process per test.
func (v *Verifier) runPython(ctx context.Context, req *Request, res *Result) error {
	if err := v.tier0(ctx, req, res, v.opts.Python); err != nil {
		return err
	}
	code := appendJSONString(nil, req.code)
	res.Details = make([]vrf.Detail, len(req.tests))
	return v.each(ctx, len(req.tests), func(ctx context.Context, i int) error {
		d, err := v.pythonTest(ctx, code, req.tests[i])
		res.Details[i] = d
		return err
	})
}

// pythonTest runs one test and decides its status as the reference does,
// reading the harness's verdict from the report pipe.
func (v *Verifier) pythonTest(ctx context.Context, codeJSON []byte, tc testCase) (vrf.Detail, error) {
	d := vrf.Detail{Name: tc.name}
	exceeded := "Exceeded " + pyFloatRepr(tc.timeout) + "s"
	wall, ok, capped := v.wall(tc.timeout)
	if !ok {
		d.Status, d.Error = vrf.StatusTimeout, exceeded
		return d, nil
	}
	data := make([]byte, 0, len(codeJSON)+64)
	data = append(data, `{"code": `...)
	data = append(data, codeJSON...)
	data = append(data, `, "input": `...)
	data = appendDumps(data, tc.input, dumpOpts{})
	data = append(data, `, "expected": `...)
	data = appendDumps(data, tc.expected, dumpOpts{})
	data = append(data, `, "max": `...)
	data = strconv.AppendInt(data, int64(v.harnessCap()), 10)
	data = append(data, '}')

	start := time.Now()
	out, err := v.r.Run(ctx, sandbox.Cmd{
		Path:     v.opts.Python,
		Args:     []string{"-c", pythonHarness},
		Env:      pythonEnv(),
		ReadOnly: v.pyReadOnly,
		Files:    map[string][]byte{"test.json": data},
		Report:   true,
		Limits:   v.reportLimits(v.limits(wall), 1),
	})
	d.DurationMS = msSince(start)
	if err != nil {
		return d, fmt.Errorf("vrfrun: test %q: %w", tc.name, err)
	}
	switch {
	case out.TimedOut || out.CPULimit:
		d.Status, d.Error = vrf.StatusTimeout, exceeded
		if capped {
			d.Error += fmt.Sprintf(" (the verifier's limit of %v)", wall)
		} else if out.CPULimit {
			d.Error += " (CPU time)"
		}
	default:
		stderr := pyStrip(pyText(out.Stderr))
		status, msg, ok := harnessVerdict(out.Report)
		switch {
		case !ok:
			// The process ended without a verdict: the code failed to
			// compile or raised at import, or exited.
			d.Status = vrf.StatusError
			d.Error = firstNonEmpty(stderr, pyStrip(pyText(out.Stdout)), limitNote(out))
		case status == "pass":
			d.Status = vrf.StatusPass
		case status == "fail":
			d.Status, d.Error = vrf.StatusFail, msg
		default:
			d.Status, d.Error = vrf.StatusError, firstNonEmpty(stderr, msg)
		}
	}
	d.Error = clip(d.Error, v.opts.MaxMessage)
	return d, nil
}

// harnessVerdict reads one [status, message] report.
func harnessVerdict(report []byte) (status, msg string, ok bool) {
	v, err := parseText(strings.TrimSpace(string(report)))
	if err != nil || v.k != kList || len(v.list) != 2 || v.list[0].k != kStr || v.list[1].k != kStr {
		return "", "", false
	}
	switch v.list[0].s {
	case "pass", "fail", "error":
		return v.list[0].s, v.list[1].s, true
	}
	return "", "", false
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// runChecks decides a tier-1 request: type_check and required_<field>
// (already decided from the request), the expr constraints (one sandboxed
// Python run), then the spec's checks if enabled. Every detail's
// duration_ms is the whole evaluation's time over the number of details,
// as in the reference.
func (v *Verifier) runChecks(ctx context.Context, req *Request, res *Result, start time.Time) error {
	for _, c := range req.schemaRes {
		res.Details = append(res.Details, vrf.Detail{Name: c.name, Status: c.status, Error: c.err})
	}
	if len(req.constraints) > 0 {
		ds, dump, err := v.runConstraints(ctx, req)
		if err != nil {
			return err
		}
		res.Details = append(res.Details, ds...)
		res.Sandboxed = v.r.Mode() == sandbox.ModeNamespaces
		res.Sandbox = v.r.Sandbox()
		if dump != "" && dump != req.outputDump {
			// A constraint changed `output`: the reference hashes it
			// after the constraints ran.
			h := vrf.ShortHash([]byte(dump))
			res.Hashes.Input, res.Hashes.Output = h, h
		}
	}
	for _, c := range req.checks {
		r := c.eval(req)
		res.Details = append(res.Details, vrf.Detail{Name: r.name, Status: r.status, Error: clip(r.err, v.opts.MaxMessage)})
	}
	per := msSince(start) / float64(max(len(res.Details), 1))
	for i := range res.Details {
		res.Details[i].DurationMS = per
	}
	return nil
}

// runConstraints evaluates the expr constraints in one Python run and
// returns their details and the harness's json.dumps of the output after
// them ("" when it did not get that far).
func (v *Verifier) runConstraints(ctx context.Context, req *Request) ([]vrf.Detail, string, error) {
	data := []byte(`{"output": `)
	data = appendDumps(data, req.output, dumpOpts{})
	data = append(data, `, "exprs": [`...)
	for i, c := range req.constraints {
		if i > 0 {
			data = append(data, ", "...)
		}
		data = appendDumps(data, c.expr, dumpOpts{})
	}
	data = append(data, `], "max": `...)
	data = strconv.AppendInt(data, int64(v.harnessCap()), 10)
	data = append(data, '}')

	lim := v.reportLimits(v.limits(v.opts.ConstraintTimeout), len(req.constraints))
	if need := int64(3*len(req.outputDump)) + 1<<20; lim.Output < need {
		lim.Output = need
	}
	out, err := v.r.Run(ctx, sandbox.Cmd{
		Path:     v.opts.Python,
		Args:     []string{"-c", constraintHarness},
		Env:      pythonEnv(),
		ReadOnly: v.pyReadOnly,
		Files:    map[string][]byte{"constraints.json": data},
		Report:   true,
		Limits:   lim,
	})
	if err != nil {
		return nil, "", fmt.Errorf("vrfrun: constraints: %w", err)
	}
	var (
		ds   []vrf.Detail
		dump string
	)
	for _, line := range strings.Split(string(out.Report), "\n") {
		rv, err := parseText(line)
		if err != nil || rv.k != kList || len(rv.list) != 2 || rv.list[0].k != kStr || rv.list[1].k != kStr {
			break
		}
		status, msg := rv.list[0].s, rv.list[1].s
		if status == "dump" {
			dump = msg
			break
		}
		if len(ds) == len(req.constraints) {
			break
		}
		c := req.constraints[len(ds)]
		d := vrf.Detail{Name: c.name}
		switch status {
		case "pass":
			d.Status = vrf.StatusPass
		case "fail":
			d.Status, d.Error = vrf.StatusFail, "Constraint failed: "+pyStr(c.expr)
		default:
			d.Status, d.Error = vrf.StatusError, msg
		}
		d.Error = clip(d.Error, v.opts.MaxMessage)
		ds = append(ds, d)
	}
	if len(ds) < len(req.constraints) {
		// The run ended inside constraint len(ds).
		c := req.constraints[len(ds)]
		d := vrf.Detail{Name: c.name, Status: vrf.StatusError}
		switch {
		case out.TimedOut || out.CPULimit:
			d.Status = vrf.StatusTimeout
			d.Error = "Exceeded " + pyFloatRepr(lim.Wall.Seconds()) + "s"
		default:
			d.Error = firstNonEmpty(pyStrip(pyText(out.Stderr)), limitNote(out),
				"the evaluating process ended without a result (exit status "+strconv.Itoa(out.ExitCode)+")")
		}
		d.Error = clip(d.Error, v.opts.MaxMessage)
		ds = append(ds, d)
		for _, rest := range req.constraints[len(ds):] {
			ds = append(ds, vrf.Detail{Name: rest.name, Status: vrf.StatusError,
				Error: "not evaluated: constraint " + c.name + " did not finish"})
		}
	}
	return ds, dump, nil
}

// program resolves the program a FormProgram or FormExpression request
// runs.
func (v *Verifier) program(req *Request) (string, error) {
	prog := req.program.program
	if prog == "" {
		prog = v.opts.Python
	}
	if _, err := v.lookPath(prog); err != nil {
		return "", fmt.Errorf("%w: language %q needs the program %s: %v", ErrLanguage, req.Language, prog, err)
	}
	return prog, nil
}

// harnessCap is how many characters of a message the harnesses keep: one
// more than MaxMessage, so that clip still sees a message was cut.
func (v *Verifier) harnessCap() int {
	if v.opts.MaxMessage > 0 {
		return v.opts.MaxMessage + 1
	}
	return 1 << 20
}

// reportLimits makes room on the report pipe for n messages of
// harnessCap characters, each at most 12 bytes once escaped in JSON.
func (v *Verifier) reportLimits(l sandbox.Limits, n int) sandbox.Limits {
	need := int64(n)*(int64(v.harnessCap())*12+1<<10) + 1<<16
	if l.Output <= 0 {
		l.Output = sandbox.DefaultLimits().Output
	}
	l.Output = max(l.Output, need)
	return l
}

// readOnlyFor is what a program needs shown besides /usr: the
// interpreter's prefix when the program is Options.Python.
func (v *Verifier) readOnlyFor(prog string) []string {
	if prog == v.opts.Python {
		return v.pyReadOnly
	}
	return nil
}

// boxPath is where a file of the run is found: the sandbox's /box, or
// the working directory of ModeNone.
func (v *Verifier) boxPath(file string) string {
	if v.r.Mode() == sandbox.ModeNamespaces {
		return "/box/" + file
	}
	return file
}

// runProgram runs FormProgram tests as the reference's
// docker_runner.run_io_tests does: `<program> solution<ext>` with the
// test's input on standard input; exit status 0 and trimmed standard
// output equal to the trimmed expected output is a pass.
func (v *Verifier) runProgram(ctx context.Context, req *Request, res *Result) error {
	prog, err := v.program(req)
	if err != nil {
		return err
	}
	if err := v.tier0(ctx, req, res, prog); err != nil {
		return err
	}
	file := "solution" + req.program.ext
	files := map[string][]byte{file: []byte(req.code)}
	res.Details = make([]vrf.Detail, len(req.tests))
	return v.each(ctx, len(req.tests), func(ctx context.Context, i int) error {
		tc := req.tests[i]
		d := vrf.Detail{Name: tc.name}
		timeout := "timeout (" + pyStr(tc.timeoutMS) + "ms)"
		wall, ok, _ := v.wall(tc.timeout)
		if !ok {
			d.Status, d.Error = vrf.StatusError, timeout
			res.Details[i] = d
			return nil
		}
		lim := v.limits(wall)
		if lim.Output <= 0 {
			lim.Output = sandbox.DefaultLimits().Output
		}
		lim.Output = max(lim.Output, int64(2*len(tc.want))+1<<16) // room for a long expected output
		start := time.Now()
		out, err := v.r.Run(ctx, sandbox.Cmd{
			Path:     prog,
			Args:     []string{v.boxPath(file)},
			ReadOnly: v.readOnlyFor(prog),
			Files:    files,
			Stdin:    []byte(tc.stdin),
			Limits:   lim,
		})
		d.DurationMS = msSince(start)
		if err != nil {
			return fmt.Errorf("vrfrun: test %q: %w", tc.name, err)
		}
		switch {
		case out.TimedOut || out.CPULimit:
			d.Status, d.Error = vrf.StatusError, timeout
		case out.ExitCode != 0:
			d.Status = vrf.StatusError
			d.Error = clip(firstNonEmpty(pyPrefix(pyText(out.Stderr), 500), limitNote(out)), v.opts.MaxMessage)
		default:
			actual := pyStrip(pyText(out.Stdout))
			d.Output = clip(actual, v.opts.MaxMessage)
			if int64(len(out.Stdout)) >= lim.Output && actual == tc.want {
				// Only the first lim.Output bytes were kept (at least
				// twice the expected output): what followed may not
				// have been white space.
				d.Status = vrf.StatusError
				d.Error = fmt.Sprintf("standard output longer than the %d bytes the verifier keeps", lim.Output)
			} else if actual == tc.want {
				d.Status = vrf.StatusPass
			} else {
				d.Status = vrf.StatusFail
				d.Error = clip("got "+actual+", expected "+tc.want, v.opts.MaxMessage)
			}
		}
		res.Details[i] = d
		return nil
	})
}

// runExpression runs a FormExpression request as the reference's
// docker_runner.run_expression_tests does: one run of the language's
// wrapper over all tests, with a timeout of the largest test timeout plus
// two seconds. A run that ends without results gives one detail named
// "runner".
func (v *Verifier) runExpression(ctx context.Context, req *Request, res *Result) error {
	prog, err := v.program(req)
	if err != nil {
		return err
	}
	if err := v.tier0(ctx, req, res, prog); err != nil {
		return err
	}
	w := req.program.wrapper
	runner := func(msg string) {
		res.Details = []vrf.Detail{{Name: "runner", Status: vrf.StatusError, Error: clip(msg, v.opts.MaxMessage)}}
	}
	wall, ok, _ := v.wall(req.exprWall)
	if !ok {
		runner("timeout")
		return nil
	}
	start := time.Now()
	out, err := v.r.Run(ctx, sandbox.Cmd{
		Path:     prog,
		Args:     []string{v.boxPath(w.file)},
		ReadOnly: v.readOnlyFor(prog),
		Files:    map[string][]byte{w.file: []byte(w.script(req.exprJSON, req.code))},
		Report:   true,
		Limits:   v.reportLimits(v.limits(wall), 64),
	})
	elapsed := msSince(start)
	if err != nil {
		return fmt.Errorf("vrfrun: expression tests: %w", err)
	}
	report := pyText(out.Report)
	switch {
	case out.TimedOut || out.CPULimit:
		runner("timeout")
		return nil
	case out.ExitCode != 0 || pyStrip(report) == "":
		runner(firstNonEmpty(pyPrefix(pyText(out.Stderr), 500), limitNote(out), "no output"))
		return nil
	}
	results, err := parseText(pyStrip(report))
	if err != nil {
		runner("invalid JSON: " + pyPrefix(report, 200))
		return nil
	}
	if results.k != kList {
		runner("invalid results: want a list, got " + results.typeName())
		return nil
	}
	for i, r := range results.list {
		name, okName := r.get("name")
		st, okStatus := r.get("status")
		if !okName || !okStatus {
			runner(fmt.Sprintf("invalid results: item %d has no name or status", i))
			return nil
		}
		d := vrf.Detail{Name: pyStr(name)}
		actual, hasActual := r.get("actual")
		if hasActual && actual.k != kNull {
			d.Output = clip(pyStr(actual), v.opts.MaxMessage)
		}
		switch {
		case st.k == kStr && st.s == "pass":
			d.Status = vrf.StatusPass
		case st.k == kStr && st.s == "fail":
			expected, _ := r.get("expected")
			d.Status = vrf.StatusFail
			d.Error = clip("got "+pyStr(actual)+", expected "+pyStr(expected), v.opts.MaxMessage)
		default:
			d.Status = vrf.StatusError
			if st.k == kStr && st.s == "error" {
				if m, ok := r.get("message"); ok && m.k != kNull {
					d.Error = clip(pyStr(m), v.opts.MaxMessage)
				}
			}
		}
		res.Details = append(res.Details, d)
	}
	for i := range res.Details {
		res.Details[i].DurationMS = elapsed / float64(len(res.Details))
	}
	return nil
}
