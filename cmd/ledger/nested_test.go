package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/verifier/sandbox"
)

// TestRunRefusesWithoutNamespaces runs the ledger binary where the kernel
// refuses it user namespaces: inside the sandbox itself, whose seccomp
// filter denies new namespaces. `run vrf` then refuses to run submitted
// code (exit 2, saying why and what to do) and appends nothing; with
// --sandbox none it runs it and the receipt says it was not sandboxed.
func TestRunRefusesWithoutNamespaces(t *testing.T) {
	requirePython(t)
	r, err := sandbox.New(sandbox.Config{})
	if err != nil {
		t.Skipf("skipping: no sandbox to make a host without namespaces in (%v)", err)
	}
	defer func() { _ = r.Close() }()
	bin, err := os.ReadFile(ledgerBin)
	if err != nil {
		t.Fatal(err)
	}
	req, err := os.ReadFile("../../testdata/run/tier0_sort.json")
	if err != nil {
		t.Fatal(err)
	}
	// Files are written without the execute bit (but scripts): copy.
	script := "#!/bin/sh\ncp ledger.bin ledger && chmod +x ledger && ./ledger init --dir l >/dev/null || exit 99\n" +
		"./ledger run vrf --dir l req.json; echo \"== refused: exit $?\"\n" +
		"echo \"== events: $(./ledger log --dir l --json | wc -l)\"\n" +
		"./ledger run vrf --dir l --sandbox none --json req.json; echo \"== none: exit $?\"\n"
	res, err := r.Run(context.Background(), sandbox.Cmd{Path: "/bin/sh", Args: []string{"run.sh"},
		Files:  map[string][]byte{"ledger.bin": bin, "req.json": req, "run.sh": []byte(script)},
		Limits: sandbox.Limits{Wall: 2 * time.Minute, CPUTime: 4 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	out, stderr := string(res.Stdout), string(res.Stderr)
	if res.ExitCode != 0 || !strings.Contains(out, "== refused: exit 2\n") || !strings.Contains(out, "== events: 0\n") || !strings.Contains(out, "== none: exit 0\n") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, out, stderr)
	}
	if !strings.Contains(stderr, "namespaces unavailable") || !strings.Contains(stderr, "give --sandbox none") {
		t.Errorf("the refusal does not say why and what to do:\n%s", stderr)
	}
	line := out[strings.Index(out, "== events: 0\n")+len("== events: 0\n") : strings.Index(out, "== none:")]
	var l runLine
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		t.Fatalf("%v: %q", err, line)
	}
	rc := receiptOf(t, l)
	if l.Status != "appended" || rc.Metadata.Sandboxed == nil || *rc.Metadata.Sandboxed || rc.Metadata.Sandbox != "none" || rc.Verdict != "pass" {
		t.Errorf("--sandbox none: %s", line)
	}
	if err := independentCheck(l.Receipt); err != nil {
		t.Errorf("receipt: %v", err)
	}
}
