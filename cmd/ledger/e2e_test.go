package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// ledgerBin is the real binary, built once by TestMain.
var ledgerBin string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "ledger-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ledgerBin = filepath.Join(dir, "ledger")
	build := exec.Command("go", "build", "-o", ledgerBin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build ledger:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir) // best effort: a temporary directory
	os.Exit(code)
}

// runLedger runs the binary with args (in the repository root, so that
// testdata paths read naturally) and returns stdout, stderr and the exit code.
func runLedger(t testing.TB, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(ledgerBin, args...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "LEDGER_DIR=")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run ledger %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}
