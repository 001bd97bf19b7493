package main

import (
	"encoding/json"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
)

const exitRefused = 5

func appendCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "append",
		Usage:     "verify documents and append them to the ledger",
		ArgsUsage: "FILE... | DIR | -",
		Description: "Decodes and verifies each input, then appends the accepted ones in durable batches (of at most\n" +
			"--batch documents and 64 MiB), each fsynced before it is reported. Receipts are placed after the\n" +
			"receipt they continue whatever order the files were given in. A document whose identity is already\n" +
			"in the ledger is refused: replay when its bytes are identical, conflict when they differ. Inputs are\n" +
			"regular files (symbolic links followed), directories (every file below) or - (standard input);\n" +
			"FIFOs and devices are refused, and a document may be at most 64 MiB. With --replay-ok a replay\n" +
			"(a byte-identical copy of a document already in the ledger) counts as success and is reported as\n" +
			"\"already present, seq N\" (JSON: status replay with that reason); a conflict is still refused.\n\n" +
			"--max-age and --max-skew replace the ledger's freshness rules (ledger freshness) for the call.\n\n" +
			exitCodeHelp + "\n   5  some input was refused as a replay, a conflict or stale (freshness rules)",
		Flags: append([]cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per input per line"},
			&cli.BoolFlag{Name: "allow-unsigned", Usage: "admit documents that carry no signature"},
			&cli.StringSliceFlag{Name: "hmac-key-file", Usage: "raw HMAC key for RVWW bundles, besides registered keys (repeatable)"},
			&cli.StringFlag{Name: "trusted-signers", Usage: "file of Ed25519 public keys (one per line) allowed to sign, for this call in place of the ledger's trusted signers (ledger trust)"},
			&cli.BoolFlag{Name: "replay-ok", Usage: "a byte-identical replay of a document already in the ledger is success (exit 0), not a refusal; conflicts still exit 5"},
			&cli.IntFlag{Name: "batch", Usage: "append in durable batches of at most N inputs, each reported as it is acknowledged (default 4096; batches also stop at 64 MiB)"},
		}, freshnessFlags()...),
		Action: func(c *cli.Context) error { return runAppend(c, e) },
	}
}

// readTrustedSigners reads a trusted-signers file (admit.ReadTrustedSigners).
func readTrustedSigners(path string) (map[string]bool, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only: nothing to lose
	return admit.ReadTrustedSigners(f)
}

func runAppend(c *cli.Context, e *env) error {
	var opts admit.Options
	opts.AllowUnsigned = c.Bool("allow-unsigned")
	opts.Submitter = submitter()
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
	if err := freshnessOptions(c, &opts); err != nil {
		return err
	}
	batch := c.Int("batch")
	if batch < 0 {
		return usageErrorf("--batch must not be negative")
	}
	refs, err := expandInputs(c.Args().Slice())
	if err != nil {
		return err
	}
	l, err := openLedger(c, e, false)
	if err != nil {
		return err
	}
	defer closeLedger(l)
	docs := make([]admit.DocRef, len(refs))
	var stdin []byte
	var stdinErr error
	stdinRead := false
	for i, r := range refs {
		r := r
		docs[i] = admit.DocRef{Name: r.name, Load: func() ([]byte, error) {
			switch {
			case r.err != nil:
				return nil, r.err
			case r.name == "-":
				// Standard input is read once (a retry reads it again).
				if !stdinRead {
					stdin, stdinErr = loadInput("-", e.stdin)
					stdinRead = true
				}
				return stdin, stdinErr
			}
			return loadInput(r.name, e.stdin)
		}}
	}
	worst := exitOK
	asJSON, replayOK := c.Bool("json"), c.Bool("replay-ok")
	bar := e.newProgress("append", "documents", int64(len(docs)))
	defer bar.done()
	err = l.AppendStream(c.Context, docs, admit.StreamOptions{Options: opts, MaxEvents: batch}, func(o ledger.Outcome) error {
		if replayOK && o.Status == ledger.StatusReplay {
			return writeAlreadyPresent(e, asJSON, o)
		}
		worst = worse(worst, outcomeExit(o))
		bar.clear()
		defer bar.add(1)
		return writeOutcome(e, asJSON, o)
	})
	bar.done()
	if err != nil {
		return exitf(exitInternal, "append: %w", err)
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
	case ledger.StatusReplay, ledger.StatusConflict, ledger.StatusStale:
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
	// Code is the refusal journal's reason code of a refusal (replay,
	// conflict, malformed, invalid, trust, link, stale, future); null
	// when appended.
	Code *string `json:"code"`
}

func writeOutcome(e *env, asJSON bool, o ledger.Outcome) error {
	if asJSON {
		line := appendLine{File: o.Name, Kind: string(o.Kind), ID: o.ID, Status: string(o.Status), Reason: o.Reason}
		if o.Seq >= 0 {
			s := o.Seq
			line.Seq = &s
		}
		if code := o.ReasonCode(); code != "" {
			line.Code = &code
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(line)
	}
	switch o.Status {
	case ledger.StatusAppended:
		_, _ = fmt.Fprintf(e.stdout, "%s: appended as event %d (%s %s)\n", o.Name, o.Seq, o.Kind, o.ID)
	case ledger.StatusReplay:
		_, _ = fmt.Fprintf(e.stdout, "%s: replay refused: %s %s is event %d\n", o.Name, o.Kind, o.ID, o.Seq)
	case ledger.StatusConflict:
		_, _ = fmt.Fprintf(e.stdout, "%s: conflict refused: %s %s is event %d with different bytes\n", o.Name, o.Kind, o.ID, o.Seq)
	case ledger.StatusStale:
		_, _ = fmt.Fprintf(e.stdout, "%s: stale refused (%s): %s\n", o.Name, o.Class, o.Reason)
	default:
		_, _ = fmt.Fprintf(e.stdout, "%s: rejected (%s): %s\n", o.Name, o.Class, o.Reason)
	}
	return nil
}
