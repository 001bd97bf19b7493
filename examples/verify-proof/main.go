// Command verify-proof is a third-party verifier of the ledger's proofs. It
// imports nothing of the ledger but the storage-free proof package, and
// shows all a client needs: the proof file, the log's verifier key and,
// for an inclusion proof, optionally the document.
//
//	verify-proof -key KEY [-doc DOCUMENT] PROOF
//
// KEY is the log's signed-note verifier key ("<origin>+<hash>+<base64>")
// or a file holding it (the ledger's log.pub). PROOF is an inclusion proof
// (C2SP tlog-proof, as `ledger prove SEQ` writes) or a consistency proof
// (`ledger prove --consistency OLD NEW`). With -doc, an inclusion proof
// must also be of that document: its SHA-256 and length are the leaf's.
//
// It prints one line and exits 0 when the proof verifies, 4 when it does
// not (it does not parse, a signature, path or digest disagrees), and 2 on
// a usage error (bad arguments, an unreadable file, an unusable key).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/proofledger/ledger/proof"
)

// Exit codes.
const (
	exitOK      = 0
	exitUsage   = 2
	exitInvalid = 4
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run verifies the proof named in args and returns the exit code; the
// verdict goes to stdout, usage errors to stderr.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify-proof", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyArg := fs.String("key", "", "the log's verifier key, or a file holding it (log.pub)")
	docArg := fs.String("doc", "", "also check that this file is the proven event's document (inclusion proofs)")
	fs.Usage = func() {
		_, _ = fmt.Fprintln(stderr, "usage: verify-proof -key KEY [-doc DOCUMENT] PROOF")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	usage := func(format string, a ...any) int {
		_, _ = fmt.Fprintf(stderr, "verify-proof: "+format+"\n", a...)
		return exitUsage
	}
	if fs.NArg() != 1 || *keyArg == "" {
		fs.Usage()
		return exitUsage
	}
	name := fs.Arg(0)
	vkey, err := readKey(*keyArg)
	if err != nil {
		return usage("%v", err)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return usage("%v", err)
	}
	var doc []byte
	if *docArg != "" {
		if doc, err = os.ReadFile(*docArg); err != nil {
			return usage("-doc: %v", err)
		}
	}
	fail := func(err error) int {
		if errors.Is(err, proof.ErrVerifierKey) {
			return usage("-key %s: %v", *keyArg, err)
		}
		_, _ = fmt.Fprintf(stdout, "%s: FAIL: %v\n", name, err)
		return exitInvalid
	}

	if bytes.HasPrefix(data, []byte(proof.ConsistencyHeader+"\n")) {
		if doc != nil {
			return usage("-doc applies to inclusion proofs; %s is a consistency proof", name)
		}
		p, err := proof.ParseConsistencyProof(data)
		if err != nil {
			return fail(err)
		}
		v, err := p.Verify(vkey)
		if err != nil {
			return fail(err)
		}
		_, _ = fmt.Fprintf(stdout, "%s: OK: the tree of size %d (root %s) extends the tree of size %d (root %s); checkpoint signed by %s\n",
			name, v.New.Size, v.New.Root, v.Old.Size, v.Old.Root, v.New.Origin)
		return exitOK
	}
	p, err := proof.ParseInclusionProof(data)
	if err != nil {
		return fail(err)
	}
	v, err := p.Verify(vkey, doc)
	if err != nil {
		return fail(err)
	}
	docNote := ""
	if doc != nil {
		docNote = "; the document matches its digest"
	}
	_, _ = fmt.Fprintf(stdout, "%s: OK: event %d (%s %q) is in the tree of size %d (root %s) signed by %s%s\n",
		name, v.Leaf.Seq, v.Leaf.Kind, v.Leaf.ID, v.Checkpoint.Size, v.Checkpoint.Root, v.Checkpoint.Origin, docNote)
	return exitOK
}

// readKey returns the verifier key arg names: the contents of the file arg
// when there is one, else arg itself. The key is checked when it is used.
func readKey(arg string) (string, error) {
	if st, err := os.Stat(arg); err == nil && st.Mode().IsRegular() {
		data, err := os.ReadFile(arg)
		if err != nil {
			return "", fmt.Errorf("-key: %w", err)
		}
		return strings.TrimSpace(string(data)), nil
	}
	if !strings.Contains(arg, "+") {
		return "", fmt.Errorf("-key %s: no such file, and not a verifier key (<origin>+<hash>+<base64>)", arg)
	}
	return strings.TrimSpace(arg), nil
}
