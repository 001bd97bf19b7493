package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/codec/avir"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/verifier/avirrun"
)

func runAVIRCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "avir",
		Usage:     "run an AVIR specification's benchmarks in the sandbox, sign the attestation and append it",
		ArgsUsage: "SPEC | -",
		Description: "Validates the specification (JSON or YAML), runs each benchmark's `command` extension field\n" +
			"in the sandbox (setup, warm-up runs, measured runs, teardown; docs/AVIR-RUN.md), computes the\n" +
			"statistics and verdicts as the reference does (verifier/avirrun), signs the attestation with the\n" +
			"ledger's log key (or --key) and appends the specification it is over, then the attestation. The\n" +
			"specification's outcome is informative: one the ledger already holds (a replay, or the same\n" +
			"spec_hash with other bytes) is fine. With --benchmark ID only that benchmark runs, and the\n" +
			"attestation is over the specification reduced to it (metadata.ledger_subset_of names the full one).\n\n" +
			"A benchmark that cannot be measured (no command, an unknown outlier policy, a failed or timed-out\n" +
			"step, a last line that is not a number) makes the verdict INVALID, as the protocol says for\n" +
			"missing results: nothing is signed or appended, each benchmark's status and reason is reported,\n" +
			"and the exit code is 4. It is never a silent pass.\n\n" +
			"--json prints one object: {\"file\", \"status\" (appended, invalid, or the ledger's refusal),\n" +
			"\"seq\", \"reason\", \"verdict\", \"verdict_details\", \"level\", \"sandbox\", \"benchmarks\": [{\"id\",\n" +
			"\"status\" (measured, failed, not_runnable, skipped), \"verdict\" (PASS, FAIL, ERROR), \"mean\",\n" +
			"\"unit\", \"runs\", \"values\", \"reason\"}], \"spec\": {\"status\", \"seq\", \"id\", \"reason\"},\n" +
			"\"attestation\": {the attestation as stored}}.\n\n" + runExitHelp,
		Flags: []cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object"},
			&cli.StringFlag{Name: "benchmark", Usage: "run only the benchmark with this id"},
			&cli.BoolFlag{Name: "keep-going", Usage: "run every runnable benchmark even when one cannot be measured, for a full report (the verdict is INVALID all the same)"},
			signingKeyFlag(),
			&cli.BoolFlag{Name: "fail-unless-pass", Usage: "exit 6 unless the verdict is VERIFIED"},
			sandboxFlag(),
		},
		Action: func(c *cli.Context) error { return runAVIR(c, e) },
	}
}

// runAVIRBench is one benchmark in run avir's --json.
type runAVIRBench struct {
	ID      string            `json:"id"`
	Status  string            `json:"status"`
	Verdict string            `json:"verdict"`
	Mean    *float64          `json:"mean"`
	Unit    string            `json:"unit,omitempty"`
	Runs    int               `json:"runs"`
	Values  []json.RawMessage `json:"values"`
	Reason  string            `json:"reason,omitempty"`
}

// runAVIRDoc is the outcome of one appended document.
type runAVIRDoc struct {
	Status string `json:"status"`
	Seq    *int64 `json:"seq"`
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// runAVIRLine is run avir's --json shape.
type runAVIRLine struct {
	File           string          `json:"file"`
	Status         string          `json:"status"`
	Seq            *int64          `json:"seq"`
	Reason         string          `json:"reason,omitempty"`
	Verdict        string          `json:"verdict"`
	VerdictDetails string          `json:"verdict_details"`
	Level          string          `json:"level,omitempty"`
	Sandbox        string          `json:"sandbox"`
	Benchmarks     []runAVIRBench  `json:"benchmarks"`
	Spec           *runAVIRDoc     `json:"spec"`
	Attestation    json.RawMessage `json:"attestation"`
}

func runAVIR(c *cli.Context, e *env) error {
	if c.NArg() != 1 {
		return usageErrorf("run avir takes one SPEC (a file, or - for standard input)")
	}
	name := c.Args().First()
	data, err := loadInput(name, e.stdin)
	if err != nil {
		return exitf(exitMalformed, "%s: cannot read: %v", name, err)
	}
	spec, err := avir.ParseSpec(data)
	if err != nil {
		return exitf(exitMalformed, "%s: not a valid AVIR specification: %v", name, err)
	}
	key, hidden, err := runPrepare(c, e)
	if err != nil {
		return err
	}
	r, err := newRunner(c, e, 1, hidden)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // stops the pool; nothing to lose
	source := name
	if name == "-" {
		source = ""
	}
	res, err := avirrun.Run(c.Context, r, spec, avirrun.Options{
		BenchmarkID: c.String("benchmark"),
		Key:         key,
		SpecSource:  source,
		KeepGoing:   c.Bool("keep-going"),
		Logger:      e.log,
	})
	switch {
	case errors.Is(err, avirrun.ErrSpec):
		return exitf(exitMalformed, "%s: %v", name, err)
	case errors.Is(err, avirrun.ErrInvalid):
		if werr := writeRunAVIR(c, e, name, res, "invalid", nil, nil); werr != nil {
			return werr
		}
		return exitf(exitInvalid, "%s: verdict INVALID: %d of %d benchmarks not measured (%s); nothing was signed or appended",
			name, notMeasured(res), len(res.Benchmarks), notMeasuredIDs(res))
	case err != nil:
		return exitf(exitInternal, "%s: %w", name, err)
	}
	l, err := openLedger(c, e, false)
	if err != nil {
		return err
	}
	defer closeLedger(l)
	out, err := l.AppendWithRetry(c.Context, []admit.Submission{
		{Name: name, Data: res.Spec.Bytes()},
		{Name: name, Data: res.Attestation.Bytes()},
	}, admit.Options{})
	if err != nil {
		return exitf(exitInternal, "append: %w", err)
	}
	specOut, attOut := out[0], out[1]
	if err := writeRunAVIR(c, e, name, res, string(attOut.Status), &specOut, &attOut); err != nil {
		return err
	}
	code := outcomeExit(attOut)
	if specOut.Status == ledger.StatusRejected {
		code = worse(code, outcomeExit(specOut))
	}
	if attOut.Status == ledger.StatusAppended && res.Verdict != "VERIFIED" && c.Bool("fail-unless-pass") {
		code = worse(code, exitNotPass)
	}
	if code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// notMeasured counts the benchmarks that were not measured.
func notMeasured(res *avirrun.Result) int {
	n := 0
	for _, b := range res.Benchmarks {
		if b.Status != avirrun.StatusMeasured {
			n++
		}
	}
	return n
}

// notMeasuredIDs names them with their status.
func notMeasuredIDs(res *avirrun.Result) string {
	var parts []string
	for _, b := range res.Benchmarks {
		if b.Status != avirrun.StatusMeasured {
			parts = append(parts, b.ID+" "+strings.ReplaceAll(string(b.Status), "_", " "))
		}
	}
	return strings.Join(parts, ", ")
}

func benchLines(res *avirrun.Result) []runAVIRBench {
	out := make([]runAVIRBench, 0, len(res.Benchmarks))
	for _, b := range res.Benchmarks {
		rb := runAVIRBench{ID: b.ID, Status: string(b.Status), Verdict: b.Verdict, Runs: len(b.Values), Values: []json.RawMessage{}}
		for _, v := range b.Values {
			rb.Values = append(rb.Values, json.RawMessage(v.Literal()))
		}
		if b.Item != nil {
			m := b.Item.Statistics.Mean
			rb.Mean, rb.Unit = &m, b.Item.Unit
			if b.Item.Reason != "" {
				rb.Reason = b.Item.Reason
			}
		}
		if b.Err != nil {
			rb.Reason = b.Err.Error()
		}
		out = append(out, rb)
	}
	return out
}

func docOutcome(o *ledger.Outcome) *runAVIRDoc {
	if o == nil {
		return nil
	}
	d := &runAVIRDoc{Status: string(o.Status), ID: o.ID, Reason: o.Reason}
	if o.Seq >= 0 {
		s := o.Seq
		d.Seq = &s
	}
	return d
}

func writeRunAVIR(c *cli.Context, e *env, name string, res *avirrun.Result, status string, specOut, attOut *ledger.Outcome) error {
	if c.Bool("json") {
		line := runAVIRLine{File: name, Status: status, Verdict: res.Verdict, VerdictDetails: res.VerdictDetails,
			Level: res.Level, Sandbox: res.Sandbox, Benchmarks: benchLines(res), Spec: docOutcome(specOut),
			Attestation: json.RawMessage("null")}
		if attOut != nil {
			d := docOutcome(attOut)
			line.Seq, line.Reason = d.Seq, d.Reason
			if attOut.Status == ledger.StatusAppended {
				line.Attestation = res.Attestation.Bytes()
			}
		}
		return encodeLine(e, line)
	}
	w := e.stdout
	level := ""
	if res.Level != "" {
		level = " " + res.Level
	}
	details := res.VerdictDetails
	if res.Attestation == nil {
		details = fmt.Sprintf("%d of %d benchmarks not measured, nothing signed", notMeasured(res), len(res.Benchmarks))
	}
	_, _ = fmt.Fprintf(w, "%s: %s %s%s: %s\n", name, res.Spec.SystemKey(), res.Verdict, level, details)
	for _, b := range res.Benchmarks {
		switch {
		case b.Item != nil:
			_, _ = fmt.Fprintf(w, "  %-22s %-4s mean %s %s over %d runs (target %s, tolerance %s)\n", b.ID, b.Item.Verdict,
				strconv.FormatFloat(b.Item.Statistics.Mean, 'g', -1, 64), b.Item.Unit, len(b.Values),
				strconv.FormatFloat(b.Item.Target, 'g', -1, 64), strconv.FormatFloat(b.Item.Tolerance, 'g', -1, 64))
		default:
			_, _ = fmt.Fprintf(w, "  %-22s %v\n", b.ID, b.Err)
		}
	}
	_, _ = fmt.Fprintf(w, "  sandbox  %s\n", res.Sandbox)
	if specOut != nil {
		switch specOut.Status {
		case ledger.StatusAppended:
			_, _ = fmt.Fprintf(w, "  specification %s appended as event %d\n", specOut.ID, specOut.Seq)
		case ledger.StatusReplay, ledger.StatusConflict:
			_, _ = fmt.Fprintf(w, "  specification %s is already in the ledger as event %d\n", specOut.ID, specOut.Seq)
		default:
			_, _ = fmt.Fprintf(w, "  specification not appended: %s (%s)\n", specOut.Status, specOut.Reason)
		}
	}
	if attOut != nil {
		if attOut.Status == ledger.StatusAppended {
			_, _ = fmt.Fprintf(w, "  attestation %s appended as event %d\n", attOut.ID, attOut.Seq)
		} else {
			_, _ = fmt.Fprintf(w, "  attestation not appended: %s (%s)\n", attOut.Status, attOut.Reason)
		}
	}
	return nil
}
