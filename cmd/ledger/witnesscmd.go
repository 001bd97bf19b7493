package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/registry"
	"github.com/proofledger/ledger/verifier/witness"
)

func witnessCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "witness",
		Usage: "make RVWW witness bundles",
		Subcommands: []*cli.Command{
			witnessBuildCommand(e),
		},
	}
}

// witnessSections are the bundle's optional sections, in bundle order,
// with their flags.
var witnessSections = []struct{ flag, what string }{
	{"spec", "the task specification (SPEC section)"},
	{"plan", "the agent's plan (PLAN section)"},
	{"diff", "the change the agent made (DIFF section)"},
	{"test-log", "the test run's log (TEST_LOG section)"},
	{"postmortem", "the postmortem (POSTMORTEM section)"},
}

func witnessBuildCommand(e *env) *cli.Command {
	flags := []cli.Flag{
		dirFlag(),
		&cli.StringFlag{Name: "trace", Usage: "the tool calls, JSON Lines, one call per line in call order (TRACE section; format in verifier/witness's doc)"},
	}
	for _, s := range witnessSections {
		flags = append(flags, &cli.StringFlag{Name: s.flag, Usage: "file holding " + s.what})
	}
	flags = append(flags,
		&cli.StringFlag{Name: "outcome", Usage: "solved, failed, skipped or errored (required)"},
		&cli.StringFlag{Name: "policy", Usage: "governance policy the calls were made under (required): restricted, approved, autonomous, a policy file (JSON or YAML), or the name or hash of a policy registered in the ledger"},
		&cli.StringFlag{Name: "task-id", Usage: "the task's UUID; give every attempt of one task the same id (default: a new random UUID)"},
		&cli.StringFlag{Name: "created", Usage: "creation time: a date, an RFC 3339 time or a duration back from now (default: now)"},
		&cli.IntFlag{Name: "retry", Usage: "retry count of this attempt (0 to 65535)"},
		&cli.StringFlag{Name: "hmac-key-file", Usage: "sign the bundle with this raw HMAC-SHA256 key file (every byte is the key; - for standard input); unsigned without it"},
		&cli.StringFlag{Name: "o", Aliases: []string{"output"}, Usage: "write the bundle to this file, or - for standard output"},
		&cli.BoolFlag{Name: "append", Usage: "append the bundle to the ledger (--dir)"},
		&cli.BoolFlag{Name: "allow-unsigned", Usage: "with --append: admit the bundle although it is unsigned"},
		&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object (not with -o -)"},
	)
	return &cli.Command{
		Name:  "build",
		Usage: "build an RVWW witness bundle from its parts, as the reference builder does, and write or append it",
		Description: "Builds the bundle verifier/witness builds: the header (task id, creation time, outcome, the\n" +
			"policy's mode and hash, retry count, totals over the calls), the sections given (--spec, --plan,\n" +
			"--trace, --diff, --test-log, --postmortem; a file or - for standard input, once), and with\n" +
			"--hmac-key-file the HMAC-SHA256 signature. Each call is recorded with the policy's decision for\n" +
			"its tool; a trace line whose policy_check differs is an error. Violations of the policy (a denied\n" +
			"tool, the cost or call budget exceeded) are recorded and printed (stderr, or in --json), and do not\n" +
			"fail the build: the scorecard counts them from the ledger's own check of the trace.\n\n" +
			"--append appends the bundle to the ledger. A signed bundle is admitted because it verifies under\n" +
			"the --hmac-key-file key, registered in the ledger or not; an unregistered key is reported, since\n" +
			"later checks of the bundle (ledger inspect, ledger audit) need it registered (`ledger key add-hmac`).\n" +
			"An unsigned bundle is appended only with --allow-unsigned.\n\n" +
			"--json prints {\"output\": FILE or null, \"id\": \"<task>@<created_ns>\", \"task_id\", \"created_ns\",\n" +
			"\"created\", \"outcome\", \"bytes\", \"signed\", \"key\" (hmac:<fingerprint> or null), \"policy\": {\"name\",\n" +
			"\"hash\", \"mode\"}, \"calls\", \"violations\": [{\"code\", \"call_index\", \"tool\", \"reason\"}],\n" +
			"\"appended\": {\"status\", \"seq\", \"id\", \"reason\"} or null}.\n\n" +
			"Exit codes: 0 built (and appended), violations or not; 2 usage error (a flag's value included);\n" +
			"3 an input file cannot be read or is malformed (the message names the file, line and field);\n" +
			"4 or 5 the ledger refused the bundle (as append); 7 the ledger is damaged.",
		Flags:  flags,
		Action: func(c *cli.Context) error { return runWitnessBuild(c, e) },
	}
}

// witnessLine is witness build's --json shape.
type witnessLine struct {
	Output     *string                `json:"output"`
	ID         string                 `json:"id"`
	TaskID     string                 `json:"task_id"`
	CreatedNS  uint64                 `json:"created_ns"`
	Created    string                 `json:"created"`
	Outcome    string                 `json:"outcome"`
	Bytes      int                    `json:"bytes"`
	Signed     bool                   `json:"signed"`
	Key        *string                `json:"key"`
	Policy     witnessPolicy          `json:"policy"`
	Calls      int                    `json:"calls"`
	Violations []governance.Violation `json:"violations"`
	Appended   *runAVIRDoc            `json:"appended"`
}

type witnessPolicy struct {
	Name string `json:"name"`
	Hash string `json:"hash"`
	Mode string `json:"mode"`
}

func runWitnessBuild(c *cli.Context, e *env) error {
	if c.NArg() != 0 {
		return usageErrorf("witness build takes no arguments: the parts are flags (--spec, --trace, ...)")
	}
	out, appendIt, asJSON := c.String("o"), c.Bool("append"), c.Bool("json")
	switch {
	case out == "" && !appendIt:
		return usageErrorf("witness build: nothing to do: give -o FILE, -o - (standard output) or --append")
	case out == "-" && asJSON:
		return usageErrorf("witness build: -o - writes the bundle to standard output, where --json would write too")
	case c.Bool("allow-unsigned") && !appendIt:
		return usageErrorf("--allow-unsigned applies to --append")
	}
	var parts witness.Parts
	if !c.IsSet("outcome") {
		return usageErrorf("--outcome is required: solved, failed, skipped or errored")
	}
	o, err := witness.ParseOutcome(c.String("outcome"))
	if err != nil {
		return usageErrorf("--outcome: %s", inputReason(err))
	}
	parts.Outcome = o
	// Before any input is read, so that a usage error is exit 2 whatever
	// the inputs hold: --policy, and --wait (checked again when the
	// ledger is opened, if it is).
	if c.String("policy") == "" {
		return usageErrorf(policyRequired)
	}
	if _, err := waitOf(c); err != nil {
		return err
	}
	if s := c.String("task-id"); s != "" {
		if parts.TaskID, err = witness.ParseTaskID(s); err != nil {
			return usageErrorf("--task-id: %s", inputReason(err))
		}
	}
	if s := c.String("created"); s != "" {
		if parts.Created, err = ledger.ParseTime(s, time.Now()); err != nil {
			return usageErrorf("--created: %v", err)
		}
	}
	if n := c.Int("retry"); n < 0 || n > 0xffff {
		return usageErrorf("--retry: %d is not between 0 and 65535", n)
	} else {
		parts.RetryCount = uint16(n)
	}
	var opts witness.Options
	var key *keys.HMACKey
	stdinUsed := "" // the flag that reads standard input (-)
	// notes go to stderr once the bundle is built: a failure is one line.
	var notes []string
	if p := c.String("hmac-key-file"); p != "" {
		if p == "-" {
			stdinUsed = "hmac-key-file"
		}
		k, err := loadHMACKeyArg(p, e)
		if err != nil {
			return usageErrorf("--hmac-key-file %s: %v", p, pathless(err))
		}
		if bytes.HasSuffix(k.Secret, []byte("\n")) {
			name := p
			if p == "-" {
				name = "the key on standard input"
			}
			notes = append(notes, name+" ends in a newline, which is part of the key as the reference uses it")
		}
		key, opts.Key = &k, k.Secret
	}
	if appendIt && key == nil && !c.Bool("allow-unsigned") {
		return usageErrorf("witness build --append: the bundle would be unsigned, and the ledger admits unsigned bundles only with --allow-unsigned; sign it with --hmac-key-file FILE")
	}
	opts.Logger = e.log

	// Inputs: each section file, and the trace.
	read := func(flag string) ([]byte, error) {
		p := c.String(flag)
		if p == "" {
			return nil, nil
		}
		if p == "-" {
			if stdinUsed != "" {
				return nil, usageErrorf("--%s -: standard input is already --%s", flag, stdinUsed)
			}
			stdinUsed = flag
		}
		data, err := loadInput(p, e.stdin)
		if err != nil {
			return nil, exitf(exitMalformed, "--%s %s: cannot read: %v", flag, p, err)
		}
		if data == nil {
			data = []byte{}
		}
		return data, nil
	}
	sections := []*[]byte{&parts.Spec, &parts.Plan, &parts.Diff, &parts.TestLog, &parts.Postmortem}
	for i, s := range witnessSections {
		if *sections[i], err = read(s.flag); err != nil {
			return err
		}
	}
	if trace, err := read("trace"); err != nil {
		return err
	} else if trace != nil {
		parts.TraceInput = c.String("trace")
		if parts.Calls, err = witness.ParseTrace(parts.TraceInput, trace); err != nil {
			return exitf(exitMalformed, "%v", err)
		}
	}

	// The policy, then the ledger when it is needed.
	var l *admit.Ledger
	if appendIt {
		if l, err = openLedger(c, e, false); err != nil {
			return err
		}
		defer closeLedger(l)
	}
	var policyData []byte
	if c.String("policy") == "-" {
		if policyData, err = read("policy"); err != nil {
			return err
		}
	}
	pol, err := resolveWitnessPolicy(c, e, l, policyData)
	if err != nil {
		return err
	}
	parts.Policy = &pol

	res, err := witness.Build(parts, opts)
	if err != nil {
		var ie *witness.InputError
		if errors.As(err, &ie) && ie.Input == "" {
			return usageErrorf("%v", err)
		}
		return exitf(exitMalformed, "%v", err)
	}
	var outPath *string
	if out != "" {
		if err := writeOutput(e, out, res.Bundle); err != nil {
			return err
		}
		outPath = &out
	}
	line := witnessLine{Output: outPath, TaskID: uuid.UUID(res.TaskID).String(), CreatedNS: res.CreatedNS,
		Created: time.Unix(0, int64(res.CreatedNS)).UTC().Format(time.RFC3339Nano), Outcome: parts.Outcome.String(),
		Bytes: len(res.Bundle), Signed: key != nil, Calls: len(parts.Calls), Violations: res.Violations,
		Policy: witnessPolicy{Name: pol.Name, Hash: pol.HashString(), Mode: pol.Mode.String()}}
	line.ID = fmt.Sprintf("%s@%d", line.TaskID, res.CreatedNS)
	if line.Violations == nil {
		line.Violations = []governance.Violation{}
	}
	if key != nil {
		id := registry.KeyID(key.Secret)
		line.Key = &id
	}
	code := exitOK
	if appendIt {
		var hk []keys.HMACKey
		if key != nil {
			hk = []keys.HMACKey{*key}
			if !keyRegistered(l, key.Secret) {
				notes = append(notes, fmt.Sprintf("HMAC key %s is not registered in this ledger: the bundle was admitted because --hmac-key-file verifies it, "+
					"but the ledger's later checks of its signature (an import of an export, an audit that re-verifies signatures) look for registered keys; "+
					"register it with `ledger key add-hmac NAME %s`", *line.Key, c.String("hmac-key-file")))
			}
		}
		outs, err := l.AppendWithRetry(c.Context, []admit.Submission{{Name: "witness bundle " + line.ID, Data: res.Bundle}},
			admit.Options{HMACKeys: hk, AllowUnsigned: c.Bool("allow-unsigned")})
		if err != nil {
			return exitf(exitInternal, "append: %w", err)
		}
		line.Appended = docOutcome(&outs[0])
		code = outcomeExit(outs[0])
	}
	if asJSON {
		if err := encodeLine(e, line); err != nil {
			return err
		}
	} else {
		w := e.stdout
		if out == "-" {
			w = e.stderr // standard output holds the bundle
		}
		signed := "unsigned"
		if line.Key != nil {
			signed = "signed with " + *line.Key
		}
		dest := ""
		if outPath != nil && out != "-" {
			dest = " to " + out
		}
		_, _ = fmt.Fprintf(w, "built witness bundle %s (%d bytes, %s, %s, %d calls under policy %s %s)%s\n",
			line.ID, line.Bytes, line.Outcome, signed, line.Calls, pol.Name, line.Policy.Hash, dest)
		if a := line.Appended; a != nil {
			if a.Seq != nil && a.Status == string(ledger.StatusAppended) {
				_, _ = fmt.Fprintf(w, "appended as event %d\n", *a.Seq)
			} else {
				_, _ = fmt.Fprintf(w, "not appended: %s (%s)\n", a.Status, a.Reason)
			}
		}
	}
	for _, v := range res.Violations {
		if !asJSON {
			_, _ = fmt.Fprintf(e.stderr, "policy violation: %s: %s\n", v.Code, v.Reason)
		}
	}
	for _, n := range notes {
		_, _ = fmt.Fprintf(e.stderr, "ledger: note: %s\n", n)
	}
	if code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// policyRequired is witness build's message when --policy is missing.
const policyRequired = "--policy is required: restricted, approved, autonomous, a policy file, or a registered policy's name or hash"

// resolveWitnessPolicy reads --policy: a default policy's name, a policy
// file (stdin is data, already read), or a policy registered in the ledger
// (by name or hash). l is the open ledger, or nil: the ledger is then
// opened read-only, and only if the reference is neither a default nor a
// file.
func resolveWitnessPolicy(c *cli.Context, e *env, l *admit.Ledger, stdin []byte) (governance.Policy, error) {
	ref := c.String("policy")
	if ref == "" {
		return governance.Policy{}, usageErrorf(policyRequired)
	}
	if p, ok := witness.DefaultPolicy(ref); ok {
		return p, nil
	}
	if st, err := os.Stat(ref); err == nil && !st.IsDir() || ref == "-" {
		data := stdin
		if ref != "-" {
			if data, err = loadInput(ref, e.stdin); err != nil {
				return governance.Policy{}, exitf(exitMalformed, "--policy %s: cannot read: %v", ref, err)
			}
		}
		p, err := witness.ParsePolicy(ref, data)
		if err != nil {
			return governance.Policy{}, exitf(exitMalformed, "--policy %v", err)
		}
		return p, nil
	}
	notFound := func(why string) error {
		return usageErrorf("--policy %q: not a default policy (restricted, approved, autonomous), not a file, and %s", ref, why)
	}
	if l == nil {
		if !fileExists(filepath.Join(c.String("dir"), "LEDGER")) {
			return governance.Policy{}, notFound(fmt.Sprintf("there is no ledger at %s to look it up in", c.String("dir")))
		}
		var err error
		if l, err = openLedger(c, e, true); err != nil {
			return governance.Policy{}, err
		}
		defer closeLedger(l)
	}
	h, _, err := l.Registry().ResolvePolicy(ref)
	if errors.Is(err, registry.ErrUnknownPolicy) {
		return governance.Policy{}, notFound("no policy of that name is registered in the ledger")
	}
	if err != nil {
		return governance.Policy{}, usageErrorf("--policy: %v", err)
	}
	all, err := l.Registry().All()
	if err != nil {
		return governance.Policy{}, exitf(exitInternal, "%w", err)
	}
	for _, k := range all {
		if k.Policy.HashString() == hex.EncodeToString(h) {
			return k.Policy, nil
		}
	}
	return governance.Policy{}, notFound("no policy with that hash is registered in the ledger")
}

// inputReason is an *witness.InputError's reason (the caller names the
// flag), or the error's text.
func inputReason(err error) string {
	var ie *witness.InputError
	if errors.As(err, &ie) {
		return ie.Reason
	}
	return err.Error()
}

// keyRegistered reports whether secret is one of the ledger's registered
// HMAC keys.
func keyRegistered(l *admit.Ledger, secret []byte) bool {
	ks, err := l.Registry().HMACKeys()
	if err != nil {
		return false
	}
	for _, k := range ks {
		for _, cand := range k.Candidates() {
			if bytes.Equal(cand.Secret, secret) {
				return true
			}
		}
	}
	return false
}

// writeOutput writes data to path ("-": standard output). A file is
// written whole under a temporary name in its directory and renamed into
// place, so that a failed write leaves no partial bundle; an existing
// path that is not a regular file (a device, a FIFO) is written to as it
// is.
func writeOutput(e *env, path string, data []byte) error {
	if path == "-" {
		if _, err := e.stdout.Write(data); err != nil {
			return exitf(exitInternal, "write standard output: %w", err)
		}
		return nil
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return usageErrorf("-o %s: %v", path, pathless(err))
		}
		_, werr := f.Write(data)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return exitf(exitInternal, "-o %s: %v", path, pathless(werr))
		}
		return nil
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return usageErrorf("-o %s: %v", path, pathless(err))
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Chmod(0o644)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		_ = os.Remove(tmp) // best effort: the temporary file is ours
		return exitf(exitInternal, "-o %s: %v", path, pathless(werr))
	}
	return nil
}
