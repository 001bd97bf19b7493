package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDashForFileFlags: the file flags that took no "-" before the read
// sweep's review take it now, with the same result as the file: inspect
// --spec, --policy and --hmac-key-file, init --key, witness build
// --hmac-key-file (the same exit code, messages and output). Standard input is read once: a second "-" is a usage
// error.
func TestDashForFileFlags(t *testing.T) {
	work := t.TempDir()
	read := func(p string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("../..", p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	const (
		spec    = "testdata/vectors/avir/01_verified_L2.spec.json"
		attest  = "testdata/vectors/avir/01_verified_L2.attestation.json"
		policy  = "testdata/rvww/policies/custom_read_grep.json"
		custom  = "testdata/rvww/policy_custom_hash.rvww"
		hmacKey = "testdata/vectors/rvww/hmac_key.txt"
		bundle  = "testdata/vectors/rvww/01_solved_autonomous_signed.rvww"
		trace   = "verifier/witness/testdata/traces/failed_restricted.jsonl"
	)
	seed := filepath.Join(work, "seed.hex")
	if err := os.WriteFile(seed, []byte(strings.Repeat("4b", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	witnessArgs := func(key, out string) []string {
		return []string{"witness", "build", "--outcome", "failed", "--policy", "restricted", "--trace", trace,
			"--task-id", "5b0c3a56-8f5e-4a3c-9d2e-1f2a3b4c5d6e", "--created", "2026-11-01T10:00:00Z", "--hmac-key-file", key, "-o", out}
	}
	tests := []struct {
		name       string
		stdin      []byte
		dash, file []string // the same invocation with - and with the file
		same       func(t *testing.T, dashOut, fileOut string)
	}{
		{"inspect --spec -", read(spec), []string{"inspect", "--json", "--spec", "-", attest}, []string{"inspect", "--json", "--spec", spec, attest}, nil},
		{"inspect --policy -", read(policy), []string{"inspect", "--json", "--policy", "-", custom}, []string{"inspect", "--json", "--policy", policy, custom}, nil},
		{"inspect --hmac-key-file -", read(hmacKey), []string{"inspect", "--hmac-key-file", "-", bundle}, []string{"inspect", "--hmac-key-file", hmacKey, bundle},
			func(t *testing.T, dashOut, fileOut string) {
				// The same but for the key's name: "-" for standard input.
				if !strings.Contains(dashOut, ": VALID") || dashOut != strings.ReplaceAll(fileOut, filepath.Base(hmacKey), "-") {
					t.Errorf("with -:\n%s\nwith the file:\n%s", dashOut, fileOut)
				}
			}},
		{"init --key -", []byte(strings.Repeat("4b", 32) + "\n"),
			[]string{"init", "--dir", filepath.Join(work, "dash"), "--key", "-"}, []string{"init", "--dir", filepath.Join(work, "file"), "--key", seed},
			func(t *testing.T, _, _ string) {
				a, _ := os.ReadFile(filepath.Join(work, "dash", "log.pub"))
				b, _ := os.ReadFile(filepath.Join(work, "file", "log.pub"))
				if len(a) == 0 || string(a) != string(b) {
					t.Errorf("log.pub from --key - %q differs from --key FILE %q", a, b)
				}
			}},
		{"witness build --hmac-key-file -", read(hmacKey), witnessArgs("-", filepath.Join(work, "dash.rvww")), witnessArgs(hmacKey, filepath.Join(work, "file.rvww")),
			func(t *testing.T, _, _ string) {
				a, _ := os.ReadFile(filepath.Join(work, "dash.rvww"))
				b, _ := os.ReadFile(filepath.Join(work, "file.rvww"))
				if len(a) == 0 || string(a) != string(b) {
					t.Errorf("the bundle signed with the key from standard input differs from the one signed with the key file")
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dashOut, dashErr, dashCode := runLedgerEnv(t, tt.stdin, nil, tt.dash...)
			fileOut, fileErr, fileCode := runLedgerEnv(t, nil, nil, tt.file...)
			if dashCode != fileCode || dashErr != fileErr || dashOut == "" && tt.same == nil {
				t.Fatalf("ledger %q: exit %d, %q; ledger %q: exit %d, %q", tt.dash, dashCode, dashErr, tt.file, fileCode, fileErr)
			}
			if tt.same != nil {
				tt.same(t, dashOut, fileOut)
			} else if dashOut != fileOut {
				t.Errorf("with -:\n%s\nwith the file:\n%s", dashOut, fileOut)
			}
		})
	}
	// Standard input once. The key ends in a newline: witness build's note
	// about it waits for a built bundle, so the usage error is one line.
	for _, args := range [][]string{
		{"inspect", "-", "--spec", "-"},
		{"inspect", "--policy", "-", "--hmac-key-file", "-", bundle},
		{"witness", "build", "--outcome", "failed", "--policy", "restricted", "--hmac-key-file", "-", "--trace", "-", "-o", filepath.Join(work, "x.rvww")},
	} {
		stdout, stderr, code := runLedgerEnv(t, append(read(hmacKey), '\n'), nil, args...)
		wantUsageError(t, args, stdout, stderr, code, "standard input")
	}
}
