package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The fixtures the real ledger binary wrote (proof/testdata/make-fixtures.sh).
var fixtures = filepath.Join("..", "..", "proof", "testdata", "fixtures")

func fixture(name string) string { return filepath.Join(fixtures, name) }

// tampered writes a copy of fixture name with old replaced by new.
func tampered(t *testing.T, name, old, new string) string {
	t.Helper()
	data, err := os.ReadFile(fixture(name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("%s has no %q", name, old)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, bytes.Replace(data, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type runCase struct {
	name string
	args []string
	code int
	out  string // in stdout when the code is not 2, in stderr otherwise
}

func cases(t *testing.T) []runCase {
	key := fixture("log.pub")
	keyText, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	doc := fixture("document.json")
	incl := fixture("inclusion-0.tlog-proof")
	otherDoc := filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(otherDoc, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return []runCase{
		{"inclusion", []string{"-key", key, incl}, 0, "OK: event 0 (vrf"},
		{"inclusion with document", []string{"-key", key, "-doc", doc, incl}, 0, "the document matches its digest"},
		{"key as text", []string{"-key", string(keyText), incl}, 0, "signed by example.org/ledger"},
		{"consistency 4 5", []string{"-key", key, fixture("consistency-4-5.proof")}, 0, "extends the tree of size 4"},
		{"consistency 2 5", []string{"-key", key, fixture("consistency-2-5.proof")}, 0, "extends the tree of size 2"},
		{"other document", []string{"-key", key, "-doc", otherDoc, incl}, 4, "FAIL: does not verify"},
		{"tampered index", []string{"-key", key, tampered(t, "inclusion-0.tlog-proof", "\nindex 0\n", "\nindex 1\n")}, 4, "FAIL"},
		{"tampered checkpoint", []string{"-key", key, tampered(t, "inclusion-0.tlog-proof", "\nexample.org/ledger\n5\n", "\nexample.org/ledger\n4\n")}, 4, "FAIL"},
		{"tampered old root", []string{"-key", key, tampered(t, "consistency-2-5.proof", "\nold 2 ", "\nold 3 ")}, 4, "FAIL"},
		{"malformed index", []string{"-key", key, tampered(t, "inclusion-0.tlog-proof", "\nindex 0\n", "\nindex 00\n")}, 4, "FAIL: malformed"},
		{"CRLF", []string{"-key", key, tampered(t, "consistency-4-5.proof", "\n\n", "\r\n\r\n")}, 4, "carriage return"},
		{"key of another log", []string{"-key", "example.org/ledger+00000000+AQOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4", incl}, 2, "-key"},
		{"no arguments", nil, 2, "usage"},
		{"no key", []string{incl}, 2, "usage"},
		{"two proofs", []string{"-key", key, incl, incl}, 2, "usage"},
		{"missing proof file", []string{"-key", key, filepath.Join(t.TempDir(), "none")}, 2, "no such file"},
		{"missing key file", []string{"-key", filepath.Join(t.TempDir(), "log.pub"), incl}, 2, "no such file"},
		{"document with a consistency proof", []string{"-key", key, "-doc", doc, fixture("consistency-4-5.proof")}, 2, "-doc applies to inclusion proofs"},
		{"unknown flag", []string{"-x", incl}, 2, "usage"},
	}
}

func TestRun(t *testing.T) {
	for _, tc := range cases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			checkResult(t, tc, code, stdout.String(), stderr.String())
		})
	}
}

func checkResult(t *testing.T, tc runCase, code int, stdout, stderr string) {
	t.Helper()
	if code != tc.code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
	}
	where := stdout
	if code == 2 {
		where = stderr
	} else if strings.Count(stdout, "\n") != 1 || stderr != "" {
		t.Fatalf("want one line on stdout and nothing on stderr, got %q and %q", stdout, stderr)
	}
	if !strings.Contains(where, tc.out) {
		t.Fatalf("output %q does not contain %q", where, tc.out)
	}
}

// TestBinary builds the program as a third party would and checks its exit
// codes.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the program")
	}
	goBin, err := exec.LookPath("go") // go test puts its own toolchain first in PATH
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "verify-proof")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range cases(t) {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			checkResult(t, tc, code, stdout.String(), stderr.String())
		})
	}
}

// TestImports keeps the example a third party's program: the standard
// library and the proof package only.
func TestImports(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if path != "github.com/proofledger/ledger/proof" && strings.Contains(strings.SplitN(path, "/", 2)[0], ".") {
			t.Errorf("main.go imports %s: only the standard library and the proof package are allowed", path)
		}
	}
}
