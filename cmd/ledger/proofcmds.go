package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/mod/sumdb/note"

	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/proof"
)

func checkpointCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "checkpoint",
		Usage: "print the latest signed checkpoint (C2SP tlog-checkpoint)",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print the checkpoint's fields, signatures and note as one JSON object"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErrorf("checkpoint takes no arguments")
			}
			l, err := openLedger(c, e, true)
			if err != nil {
				return err
			}
			defer closeLedger(l)
			ck, err := l.Checkpoint()
			if err != nil {
				return exitf(exitInternal, "%w", err)
			}
			if c.Bool("json") {
				head, err := proof.OpenCheckpoint(ck, l.VerifierKey())
				if err != nil {
					return exitf(exitDamaged, "the latest checkpoint: %w", err)
				}
				return writeJSONLine(e.stdout, toCheckpointJSON(head, l.VerifierKey(), ck))
			}
			_, err = e.stdout.Write(ck)
			return err
		},
	}
}

func proveCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "prove",
		Usage:     "write an inclusion proof (C2SP tlog-proof) or, with --consistency, a consistency proof",
		ArgsUsage: "SEQ|ID|TASK_UUID|PREFIX  |  --consistency OLD NEW",
		Description: "The event is named by its sequence number, its document id, a task UUID (the task's latest witness\n" +
			"bundle) or a prefix of at least 8 characters of a document id or digest (sha256:… or bare hex) that\n" +
			"names one document; an ambiguous prefix lists up to 10 candidates on stderr (exit 2).",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.Int64Flag{Name: "size", Usage: "prove against the tree of this size (default: the latest)"},
			&cli.BoolFlag{Name: "consistency", Usage: "prove that the tree of size NEW extends the tree of size OLD"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "write the proof to FILE instead of standard output (- is standard output)"},
			&cli.BoolFlag{Name: "json", Usage: "print the proof's fields and its text as one JSON object (with -o FILE, the proof goes to FILE)"},
		},
		Action: func(c *cli.Context) error {
			out, asJSON := c.String("out"), c.Bool("json")
			if asJSON && out == "-" {
				return usageErrorf("prove: --json and -o - would both write to standard output")
			}
			var (
				text []byte
				rep  proveJSON
				ckpt []byte
			)
			if c.Bool("consistency") {
				if c.NArg() != 2 {
					return usageErrorf("prove --consistency takes OLD and NEW tree sizes")
				}
				if c.IsSet("size") {
					return usageErrorf("prove --consistency: --size does not apply (NEW is the size proven against)")
				}
				oldSize, err1 := strconv.ParseInt(c.Args().Get(0), 10, 64)
				newSize, err2 := strconv.ParseInt(c.Args().Get(1), 10, 64)
				if err1 != nil || err2 != nil || oldSize < 0 || newSize < 1 || oldSize > newSize {
					return usageErrorf("prove --consistency: want sizes 0 <= OLD <= NEW, NEW >= 1")
				}
				l, err := openLedger(c, e, true)
				if err != nil {
					return err
				}
				defer closeLedger(l)
				p, err := l.ProveConsistency(oldSize, newSize)
				if err != nil {
					return usageErrorf("%v", err)
				}
				text, ckpt = p.Marshal(), p.Checkpoint
				rep = proveJSON{Type: "consistency", OldSize: ptr(p.OldSize), OldRoot: ptr(b64(p.OldRoot[:])), Hashes: hashesB64(p.Hashes)}
			} else {
				if c.NArg() != 1 {
					return usageErrorf("prove takes one SEQ or ID")
				}
				l, err := openLedger(c, e, true)
				if err != nil {
					return err
				}
				defer closeLedger(l)
				ev, err := resolveArg(e, l, c.Args().First())
				if errors.Is(err, ledger.ErrNotFound) {
					return usageErrorf("%s: no such event or document in the ledger", c.Args().First())
				}
				if err != nil {
					return err
				}
				p, err := l.ProveInclusion(ev.Seq, c.Int64("size"))
				if err != nil {
					return usageErrorf("%v", err)
				}
				text, ckpt = p.Marshal(), p.Checkpoint
				rep = proveJSON{Type: "inclusion", Seq: ptr(p.Index), Kind: ptr(string(ev.Kind)), ID: ptr(ev.ID),
					Leaf: json.RawMessage(p.Leaf), Hashes: hashesB64(p.Hashes)}
			}
			if out != "" && out != "-" {
				if err := os.WriteFile(out, text, 0o644); err != nil {
					return exitf(exitInternal, "write %s: %v", out, pathless(err))
				}
				rep.File = &out
				if !asJSON {
					return nil
				}
			}
			if !asJSON {
				_, err := e.stdout.Write(text)
				return err
			}
			if body, _, ok := bytes.Cut(ckpt, []byte("\n\n")); ok {
				if head, err := proof.ParseCheckpoint(string(body) + "\n"); err == nil {
					rep.Size, rep.Root, rep.Origin = head.Size, b64(head.Root[:]), head.Origin
				}
			}
			rep.Checkpoint, rep.Proof = string(ckpt), string(text)
			return writeJSONLine(e.stdout, rep)
		},
	}
}

// readVerifierKey takes a signed-note verifier key, or a file holding one
// (log.pub).
func readVerifierKey(s string) (string, error) {
	if _, err := note.NewVerifier(s); err == nil {
		return s, nil
	}
	data, err := os.ReadFile(s)
	if err != nil {
		return "", fmt.Errorf("--key %s: not a verifier key (<origin>+<hash>+<base64>) and not a readable file: %v", s, pathless(err))
	}
	return strings.TrimSpace(string(data)), nil
}

func verifyProofCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "verify-proof",
		Usage:     "check an inclusion or consistency proof offline (no ledger directory needed)",
		ArgsUsage: "PROOF_FILE | -",
		Description: "Checks the proof's signed checkpoint against --key (required), then the Merkle path of an\n" +
			"inclusion proof (and with --doc, that the document is the proven event's) or the consistency\n" +
			"of two trees. The proof or the document (not both) may be - for standard input.\n\n" +
			"Exit codes: 0 the proof verifies, 2 usage (--key missing or not a verifier key), 3 the proof or\n" +
			"a checkpoint in it does not parse, 4 it does not verify.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key", Usage: "the log's verifier key, or a file holding it (the ledger's log.pub); required"},
			&cli.StringFlag{Name: "doc", Usage: "also check that this document (- for standard input) is the proven event's document"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object (also when the proof does not verify)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf("verify-proof takes one PROOF file (- for standard input)")
			}
			if c.String("key") == "" {
				return usageErrorf("verify-proof needs --key: the log's verifier key or the ledger's log.pub")
			}
			name := c.Args().First()
			if name == "-" && c.String("doc") == "-" {
				return usageErrorf("verify-proof: the proof and --doc cannot both be standard input")
			}
			rep := verifyJSON{File: name}
			report := func(err error) error {
				if c.Bool("json") {
					if err != nil {
						rep.OK, rep.Error = false, ptr(oneLine(err.Error()))
					}
					if werr := writeJSONLine(e.stdout, rep); werr != nil {
						return werr
					}
				}
				return err
			}
			data, err := loadBounded(name, e.stdin, maxProofFile)
			if err != nil {
				return report(exitf(exitMalformed, "%s: cannot read: %v", name, err))
			}
			in := input{name: name, data: data}
			vkey, err := readVerifierKey(c.String("key"))
			if err != nil {
				return usageErrorf("%v", err)
			}
			proofErr := func(err error) error {
				switch {
				case errors.Is(err, proof.ErrVerifierKey):
					return usageErrorf("--key: %v", err)
				case errors.Is(err, proof.ErrMalformed):
					return report(exitf(exitMalformed, "%s: %v", name, err))
				}
				return report(exitf(exitInvalid, "%s: %v", name, err))
			}
			ok := e.painter(e.stdout).paint(toneGood, "OK")
			if bytes.HasPrefix(in.data, []byte(proof.ConsistencyHeader+"\n")) {
				rep.Type = ptr("consistency")
				p, err := proof.ParseConsistencyProof(in.data)
				if err != nil {
					return proofErr(err)
				}
				v, err := p.Verify(vkey)
				if err != nil {
					return proofErr(err)
				}
				if c.Bool("json") {
					rep.OK, rep.OldSize, rep.OldRoot = true, ptr(v.Old.Size), ptr(b64(v.Old.Root[:]))
					rep.Size, rep.Root, rep.Origin = ptr(v.New.Size), ptr(b64(v.New.Root[:])), ptr(v.New.Origin)
					return report(nil)
				}
				_, _ = fmt.Fprintf(e.stdout, "%s: %s: the tree of size %d (root %s) extends the tree of size %d (root %s); checkpoint signed by %s\n",
					name, ok, v.New.Size, b64(v.New.Root[:]), v.Old.Size, b64(v.Old.Root[:]), v.New.Origin)
				return nil
			}
			rep.Type = ptr("inclusion")
			p, err := proof.ParseInclusionProof(in.data)
			if err != nil {
				return proofErr(err)
			}
			var doc []byte
			if d := c.String("doc"); d != "" {
				din := readInput(d, e.stdin)
				if din.err != nil {
					return usageErrorf("--doc %s: %v", d, pathless(din.err))
				}
				doc = din.data
			}
			v, err := p.Verify(vkey, doc)
			if err != nil {
				return proofErr(err)
			}
			if c.Bool("json") {
				rep.OK, rep.Seq, rep.Kind, rep.ID = true, ptr(v.Leaf.Seq), ptr(string(v.Leaf.Kind)), ptr(v.Leaf.ID)
				rep.Size, rep.Root, rep.Origin = ptr(v.Checkpoint.Size), ptr(b64(v.Checkpoint.Root[:])), ptr(v.Checkpoint.Origin)
				rep.DocumentChecked = doc != nil
				return report(nil)
			}
			docNote := ""
			if doc != nil {
				docNote = "; the document matches its digest"
			}
			_, _ = fmt.Fprintf(e.stdout, "%s: %s: event %d (%s %s) is in the tree of size %d (root %s) signed by %s%s\n",
				name, ok, v.Leaf.Seq, v.Leaf.Kind, v.Leaf.ID, v.Checkpoint.Size, b64(v.Checkpoint.Root[:]), v.Checkpoint.Origin, docNote)
			return nil
		},
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// maxProofFile bounds a proof file: a proof is a few KB (its leaf, at most
// 63 hashes and a signed checkpoint).
const maxProofFile = 1 << 20
