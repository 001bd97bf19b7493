package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sampleFiles lists the documents under dir (relative to the repository
// root), skipping key files and notes.
func sampleFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("../..", dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasSuffix(n, "_key.json") || n == "hmac_key.txt" || strings.HasSuffix(n, ".md") {
			continue
		}
		out = append(out, filepath.Join(dir, n))
	}
	if len(out) == 0 {
		t.Fatalf("no samples in %s", dir)
	}
	return out
}

// checkGolden compares got with testdata/golden/<name>, or rewrites it
// under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("../../testdata/golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/ledger -run %s -update)", err, t.Name())
	}
	if string(want) != got {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs at line %d:\n got %s\nwant %s", path, i+1, g, w)
			}
		}
	}
}

// TestInspectGolden runs the real binary's `inspect --json` over every
// sample document and reference vector and compares the reports (and the
// exit code) with golden files.
func TestInspectGolden(t *testing.T) {
	hmac := "--hmac-key-file=testdata/vectors/rvww/hmac_key.txt"
	for _, tc := range []struct {
		name  string
		flags []string
		dirs  []string
		code  int
	}{
		{"vectors", []string{hmac}, []string{"testdata/vectors/vrf", "testdata/vectors/avir", "testdata/vectors/rvww"}, exitInvalid},
		{"vectors-no-key", nil, []string{"testdata/vectors/rvww"}, exitInvalid},
		{"vectors-with-spec", []string{"--spec=testdata/vectors/avir/01_verified_L2.spec.json"}, []string{"testdata/vectors/avir"}, exitInvalid},
		{"vrf", nil, []string{"testdata/vrf"}, exitMalformed},
		{"avir", nil, []string{"testdata/avir"}, exitMalformed},
		{"rvww", []string{hmac, "--policy=testdata/rvww/policies/custom_read_grep.json"}, []string{"testdata/rvww"}, exitMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"inspect", "--json"}, tc.flags...)
			for _, d := range tc.dirs {
				args = append(args, sampleFiles(t, d)...)
			}
			stdout, stderr, code := runLedger(t, nil, args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			checkGolden(t, filepath.Join("inspect", tc.name+".jsonl"), stdout)
		})
	}
}

// TestInspectText keeps the human-readable report of the reference
// vectors under golden control.
func TestInspectText(t *testing.T) {
	args := []string{"inspect", "--hmac-key-file", "testdata/vectors/rvww/hmac_key.txt"}
	args = append(args, sampleFiles(t, "testdata/vectors/vrf")...)
	args = append(args, sampleFiles(t, "testdata/vectors/avir")...)
	args = append(args, sampleFiles(t, "testdata/vectors/rvww")...)
	stdout, _, _ := runLedger(t, nil, args...)
	checkGolden(t, "inspect/vectors.txt", stdout)
}

func TestInspectExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"inspect", "testdata/vectors/vrf/01_tier0_pass.json"}, exitOK},
		{[]string{"inspect", "testdata/vectors/vrf/90_tampered_verdict.json"}, exitInvalid},
		{[]string{"inspect", "testdata/vrf/invalid_json.json"}, exitMalformed},
		{[]string{"inspect", "testdata/vrf/invalid_json.json", "testdata/vectors/vrf/90_tampered_verdict.json"}, exitMalformed},
		{[]string{"inspect", "no/such/file.json"}, exitMalformed},
		{[]string{"inspect"}, exitUsage},
		{[]string{"inspect", "--no-such-flag", "x"}, exitUsage},
		{[]string{"no-such-command"}, exitUsage},
		{[]string{"inspect", "testdata/vectors/rvww/01_solved_autonomous_signed.rvww"}, exitInvalid},
	} {
		_, stderr, code := runLedger(t, nil, tc.args...)
		if code != tc.code {
			t.Errorf("ledger %v: exit %d, want %d (stderr %q)", tc.args, code, tc.code, stderr)
		}
	}
	// Standard input.
	data, err := os.ReadFile("../../testdata/vectors/vrf/01_tier0_pass.json")
	if err != nil {
		t.Fatal(err)
	}
	stdout, _, code := runLedger(t, data, "inspect", "--json", "-")
	if code != exitOK || !strings.Contains(stdout, `"file":"-"`) || !strings.Contains(stdout, `"valid":true`) {
		t.Errorf("inspect -: exit %d, %s", code, stdout)
	}
}

func TestHelpListsExitCodes(t *testing.T) {
	stdout, _, code := runLedger(t, nil, "--help")
	if code != 0 || !strings.Contains(stdout, "Exit codes:") || !strings.Contains(stdout, "3  some input could not be read or parsed") {
		t.Errorf("ledger --help (exit %d) lacks the exit codes:\n%s", code, stdout)
	}
}
