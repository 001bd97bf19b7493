package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/inspect"
)

func inspectCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "decode and verify documents and report on each",
		ArgsUsage: "FILE... | DIR | -",
		Description: "Detects each input's kind by content (VRF receipt, AVIR specification or attestation,\n" +
			"RVWW witness bundle), decodes it, verifies everything its format allows and prints a report.\n" +
			"An unsigned document is valid with signed: false; a signed witness bundle whose signature\n" +
			"could not be checked (no --hmac-key-file) is not valid.\n\n" + exitCodeHelp,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per input per line"},
			&cli.StringSliceFlag{Name: "hmac-key-file", Usage: "raw HMAC key for RVWW bundles (repeatable; each is tried in turn; - for standard input)"},
			&cli.StringFlag{Name: "spec", Usage: "AVIR specification that attestations are checked against (- for standard input)"},
			&cli.StringSliceFlag{Name: "policy", Usage: "governance policy file known besides the three defaults (repeatable; - for standard input)"},
		},
		Action: func(c *cli.Context) error { return runInspect(c, e) },
	}
}

// verifyOptions loads the key, spec and policy files named by the common
// verification flags. Every file is read before any is parsed, so that a
// file that cannot be read (a usage error, exit 2) is reported before one
// that does not parse (exit 3).
func verifyOptions(c *cli.Context, e *env, ins *inspect.Inspector) (inspect.Options, error) {
	var opts inspect.Options
	for _, p := range c.StringSlice("hmac-key-file") {
		k, err := loadHMACKeyArg(p, e)
		if err != nil {
			return opts, usageErrorf("--hmac-key-file %s: %v", p, pathless(err))
		}
		opts.HMACKeys = append(opts.HMACKeys, k)
	}
	var specData []byte
	if p := c.String("spec"); p != "" {
		data, err := readFileArg(p, e, maxInputSize)
		if err != nil {
			return opts, usageErrorf("--spec %s: %v", p, pathless(err))
		}
		specData = data
	}
	var policyData [][]byte
	for _, p := range c.StringSlice("policy") {
		data, err := readFileArg(p, e, maxPolicyFile)
		if err != nil {
			return opts, usageErrorf("--policy %s: %v", p, pathless(err))
		}
		policyData = append(policyData, data)
	}
	if p := c.String("spec"); p != "" {
		s, err := ins.ParseSpec(specData)
		if err != nil {
			return opts, exitf(exitMalformed, "--spec %s: %v", p, err)
		}
		opts.Spec = s
	}
	for i, p := range c.StringSlice("policy") {
		pol, err := governance.ParsePolicy(policyData[i])
		if err != nil {
			return opts, exitf(exitMalformed, "--policy %s: %v", p, err)
		}
		opts.Policies = append(opts.Policies, pol)
	}
	return opts, nil
}

// pathless drops the path from an *fs.PathError, which the caller names itself.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func runInspect(c *cli.Context, e *env) error {
	ins, err := inspect.New()
	if err != nil {
		return exitf(exitInternal, "%w", err)
	}
	// The inputs are named before the flags' files are read, so that no
	// input is a usage error (exit 2) whatever those files hold.
	refs, err := expandInputs(c.Args().Slice())
	if err != nil {
		return err
	}
	places := [][2]string{{"--spec", c.String("spec")}}
	for _, a := range c.Args().Slice() {
		places = append(places, [2]string{"an input", a})
	}
	for _, f := range []string{"hmac-key-file", "policy"} {
		for _, v := range c.StringSlice(f) {
			places = append(places, [2]string{"--" + f, v})
		}
	}
	if err := oneStdin(places); err != nil {
		return err
	}
	opts, err := verifyOptions(c, e, ins)
	if err != nil {
		return err
	}
	asJSON := c.Bool("json")
	worst := exitOK
	for _, ref := range refs {
		name := ref.name
		in := input{name: name, err: ref.err}
		if ref.err == nil {
			in = readInput(name, e.stdin)
		}
		var res *inspect.Result
		if in.err != nil {
			res = &inspect.Result{Kind: inspect.KindUnknown, Status: inspect.Malformed,
				Findings: []codec.Finding{{Code: "unreadable", Offset: codec.NoOffset, Reason: "cannot read: " + pathless(in.err).Error()}}}
		} else {
			res = ins.Inspect(in.data, opts)
		}
		if asJSON {
			if err := writeInspectJSON(e.stdout, name, res); err != nil {
				return err
			}
		} else {
			writeInspectText(e.stdout, name, res)
		}
		worst = worse(worst, statusExit(res.Status))
	}
	if worst != exitOK {
		return &exitError{code: worst}
	}
	return nil
}

func statusExit(s inspect.Status) int {
	switch s {
	case inspect.Malformed:
		return exitMalformed
	case inspect.Invalid:
		return exitInvalid
	}
	return exitOK
}

// worse combines per-input exit codes: any failure beats success, and the
// lower failure code wins (3 before 4 before 5).
func worse(a, b int) int {
	switch {
	case a == exitOK:
		return b
	case b == exitOK:
		return a
	case b < a:
		return b
	}
	return a
}

// inspectLine is the --json shape of one result.
type inspectLine struct {
	File             string                 `json:"file"`
	Kind             codec.Kind             `json:"kind"`
	Form             *codec.Form            `json:"form"`
	ID               string                 `json:"id"`
	Signed           bool                   `json:"signed"`
	SignatureChecked bool                   `json:"signature_checked"`
	Signer           *string                `json:"signer"`
	Subject          string                 `json:"subject,omitempty"`
	Time             string                 `json:"time,omitempty"`
	Valid            bool                   `json:"valid"`
	Status           string                 `json:"status"`
	Errors           []string               `json:"errors"`
	Findings         []codec.Finding        `json:"findings"`
	Violations       []governance.Violation `json:"violations,omitempty"`
	Facts            []codec.Fact           `json:"facts,omitempty"`
}

func statusName(s inspect.Status) string {
	switch s {
	case inspect.Malformed:
		return "malformed"
	case inspect.Invalid:
		return "invalid"
	}
	return "valid"
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func writeInspectJSON(w io.Writer, name string, res *inspect.Result) error {
	line := inspectLine{
		File: name, Kind: res.Kind, ID: res.ID, Signed: res.Signed, SignatureChecked: res.SignatureChecked,
		Subject: res.Subject, Time: formatTime(res.Time), Valid: res.Valid(), Status: statusName(res.Status),
		Errors: []string{}, Findings: res.Findings, Violations: res.Violations, Facts: res.Facts,
	}
	if res.Form != "" {
		f := res.Form
		line.Form = &f
	}
	if res.Signer != "" {
		s := res.Signer
		line.Signer = &s
	}
	if line.Findings == nil {
		line.Findings = []codec.Finding{}
	}
	for _, f := range res.Findings {
		line.Errors = append(line.Errors, f.String())
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(line); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

func writeInspectText(w io.Writer, name string, res *inspect.Result) {
	kind := string(res.Kind)
	if res.Form != "" {
		kind += " (" + string(res.Form) + " form)"
	}
	_, _ = fmt.Fprintf(w, "%s: %s: %s\n", name, kind, strings.ToUpper(statusName(res.Status)))
	row := func(label, value string) {
		if value != "" {
			_, _ = fmt.Fprintf(w, "  %-16s %s\n", label, value)
		}
	}
	row("id", res.ID)
	if res.Status != inspect.Malformed {
		switch {
		case !res.Signed:
			row("signed", "no")
		case res.SignatureChecked && res.Signer != "":
			row("signed", "yes, by "+res.Signer)
		case res.SignatureChecked:
			row("signed", "yes")
		default:
			row("signed", "yes, signature NOT checked")
		}
	}
	row("subject", res.Subject)
	row("time", formatTime(res.Time))
	for _, f := range res.Facts {
		row(f.Label, f.Value)
	}
	for _, v := range res.Violations {
		row("violation", fmt.Sprintf("call %d (%s): %s", v.CallIndex, v.Tool, v.Reason))
	}
	for _, f := range res.Findings {
		row("error", f.String())
	}
}
