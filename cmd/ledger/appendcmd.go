package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/ledger"
)

const exitRefused = 5

func appendCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "append",
		Usage:     "verify documents and append them to the ledger",
		ArgsUsage: "FILE... | DIR | -",
		Description: "Decodes and verifies each input, then appends the accepted ones in one durable batch\n" +
			"(receipts in chain order whatever order the files were given). A document whose identity is\n" +
			"already in the ledger is refused: replay when its bytes are identical, conflict when they differ.\n\n" +
			exitCodeHelp + "\n   5  some input was refused as a replay or conflict",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per input per line"},
			&cli.BoolFlag{Name: "allow-unsigned", Usage: "admit documents that carry no signature"},
			&cli.StringSliceFlag{Name: "hmac-key-file", Usage: "raw HMAC key for RVWW bundles, besides registered keys (repeatable)"},
			&cli.StringFlag{Name: "trusted-signers", Usage: "file of Ed25519 public keys (one per line) allowed to sign"},
			&cli.IntFlag{Name: "batch", Usage: "append in calls of at most N inputs, reporting each call as it is acknowledged (0: one call)"},
		},
		Action: func(c *cli.Context) error { return runAppend(c, e) },
	}
}

// readTrustedSigners reads one public key per line, in any spelling
// keys.ParsePublicKey accepts; blank lines and # comments are skipped.
func readTrustedSigners(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		pub, err := keys.ParsePublicKey(s)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		out[keys.SignerID(pub)] = true
	}
	return out, sc.Err()
}

func runAppend(c *cli.Context, e *env) error {
	var opts ledger.AppendOptions
	opts.AllowUnsigned = c.Bool("allow-unsigned")
	for _, p := range c.StringSlice("hmac-key-file") {
		k, err := keys.LoadHMACKey(p)
		if err != nil {
			return usageErrorf("--hmac-key-file %s: %v", p, pathless(err))
		}
		opts.HMACKeys = append(opts.HMACKeys, k)
	}
	if p := c.String("trusted-signers"); p != "" {
		ts, err := readTrustedSigners(p)
		if err != nil {
			return usageErrorf("--trusted-signers %s: %v", p, pathless(err))
		}
		opts.TrustedSigners = ts
	}
	names, err := expandInputs(c.Args().Slice())
	if err != nil {
		return err
	}
	l, err := openLedger(c, e, false)
	if err != nil {
		return err
	}
	defer l.Close()

	batch := c.Int("batch")
	if batch < 0 {
		return usageErrorf("--batch must not be negative")
	}
	if batch == 0 {
		batch = len(names)
	}
	worst := exitOK
	for start := 0; start < len(names); start += batch {
		code, err := appendChunk(c, e, l, names[start:min(start+batch, len(names))], opts)
		if err != nil {
			return err
		}
		worst = worse(worst, code)
	}
	if worst != exitOK {
		return &exitError{code: worst}
	}
	return nil
}

func outcomeExit(o ledger.Outcome) int {
	switch o.Status {
	case ledger.StatusAppended:
		return exitOK
	case ledger.StatusReplay, ledger.StatusConflict:
		return exitRefused
	}
	if o.Class == ledger.RejectMalformed {
		return exitMalformed
	}
	return exitInvalid
}

type appendLine struct {
	File   string `json:"file"`
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Status string `json:"status"`
	Seq    *int64 `json:"seq"`
	Reason string `json:"reason"`
}

func writeOutcome(e *env, asJSON bool, o ledger.Outcome) error {
	if asJSON {
		line := appendLine{File: o.Name, Kind: string(o.Kind), ID: o.ID, Status: string(o.Status), Reason: o.Reason}
		if o.Seq >= 0 {
			s := o.Seq
			line.Seq = &s
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(line)
	}
	switch o.Status {
	case ledger.StatusAppended:
		fmt.Fprintf(e.stdout, "%s: appended as event %d (%s %s)\n", o.Name, o.Seq, o.Kind, o.ID)
	case ledger.StatusReplay:
		fmt.Fprintf(e.stdout, "%s: replay refused: %s %s is event %d\n", o.Name, o.Kind, o.ID, o.Seq)
	case ledger.StatusConflict:
		fmt.Fprintf(e.stdout, "%s: conflict refused: %s %s is event %d with different bytes\n", o.Name, o.Kind, o.ID, o.Seq)
	default:
		fmt.Fprintf(e.stdout, "%s: rejected (%s): %s\n", o.Name, o.Class, o.Reason)
	}
	return nil
}

// appendChunk reads and appends one call's worth of inputs and reports each
// outcome; it returns the worst exit code among them.
func appendChunk(c *cli.Context, e *env, l *ledger.Ledger, names []string, opts ledger.AppendOptions) (int, error) {
	var subs []ledger.Submission
	var unreadable []input
	for _, n := range names {
		in := readInput(n, e.stdin)
		if in.err != nil {
			unreadable = append(unreadable, in)
			continue
		}
		subs = append(subs, ledger.Submission{Name: n, Data: in.data})
	}
	outcomes, err := l.AppendWithRetry(c.Context, subs, opts)
	if err != nil {
		return 0, exitf(exitInternal, "append: %v", err)
	}
	worst := exitOK
	for _, in := range unreadable {
		o := ledger.Outcome{Name: in.name, Status: ledger.StatusRejected, Seq: -1, Class: ledger.RejectMalformed,
			Reason: "cannot read: " + pathless(in.err).Error()}
		if err := writeOutcome(e, c.Bool("json"), o); err != nil {
			return 0, err
		}
		worst = worse(worst, exitMalformed)
	}
	for _, o := range outcomes {
		if err := writeOutcome(e, c.Bool("json"), o); err != nil {
			return 0, err
		}
		worst = worse(worst, outcomeExit(o))
	}
	return worst, nil
}
