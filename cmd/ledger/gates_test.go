package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAppendReplayOK checks append --replay-ok: a byte-identical replay is
// success, reported as already present with its seq; a conflicting
// document with the same identity is still refused (exit 5), with or
// without the flag.
func TestAppendReplayOK(t *testing.T) {
	work := t.TempDir()
	dir := filepath.Join(work, "l")
	mustRun(t, exitOK, "init", "--dir", dir)
	const receipt = "testdata/vectors/vrf/01_tier0_pass.json"
	const other = "testdata/vrf/chain_1.json"
	mustRun(t, exitOK, "append", "--dir", dir, receipt)
	// The same receipt, re-indented: still valid and signed (the signature
	// covers the canonical form), same receipt_id, different bytes.
	orig := mustRead(t, receipt)
	conflicting := filepath.Join(work, "conflicting.json")
	writeFile(t, conflicting, bytes.Replace(orig, []byte("\n  "), []byte("\n    "), 1))
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string // substrings of stdout, in order of the inputs
	}{
		{"replay refused", []string{receipt}, exitRefused, []string{"replay refused: vrf 4317e99d-6ddf-45f5-8d9e-f7d2ec99d867 is event 0"}},
		{"replay ok", []string{"--replay-ok", receipt}, exitOK, []string{receipt + ": already present, seq 0 (vrf 4317e99d-6ddf-45f5-8d9e-f7d2ec99d867)"}},
		{"replay ok beside a new document", []string{"--replay-ok", receipt, other}, exitOK, []string{"already present, seq 0", other + ": appended as event 1"}},
		{"replay ok twice in one call", []string{"--replay-ok", other, other}, exitOK, []string{"already present, seq 1", "already present, seq 1"}},
		{"conflict refused", []string{conflicting}, exitRefused, []string{"conflict refused: vrf 4317e99d-6ddf-45f5-8d9e-f7d2ec99d867 is event 0 with different bytes"}},
		{"conflict refused under replay ok", []string{"--replay-ok", conflicting}, exitRefused, []string{"conflict refused"}},
		{"conflict beside a replay under replay ok", []string{"--replay-ok", receipt, conflicting}, exitRefused, []string{"already present, seq 0", "conflict refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mustRun(t, tc.code, append([]string{"append", "--dir", dir}, tc.args...)...)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), len(tc.want), out)
			}
			for i, w := range tc.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("line %d = %q, want %q", i, lines[i], w)
				}
			}
		})
	}
	var o struct {
		Status string
		Seq    *int64
		Reason string
	}
	out := mustRun(t, exitOK, "append", "--dir", dir, "--json", "--replay-ok", receipt)
	if err := json.Unmarshal([]byte(out), &o); err != nil || o.Status != "replay" || o.Seq == nil || *o.Seq != 0 || o.Reason != "already present, seq 0" {
		t.Errorf("--json --replay-ok: %s (%v)", out, err)
	}
	out = mustRun(t, exitRefused, "append", "--dir", dir, "--json", "--replay-ok", conflicting)
	if err := json.Unmarshal([]byte(out), &o); err != nil || o.Status != "conflict" {
		t.Errorf("--json --replay-ok conflict: %s (%v)", out, err)
	}
	if got := strings.Count(mustRun(t, exitOK, "log", "--dir", dir), "\n"); got != 2 {
		t.Errorf("the ledger holds %d events, want 2", got)
	}
}

// TestTrustCommands drives trust add, list and remove, and checks that
// append applies the setting, that --trusted-signers overrides it, and
// that without trusted signers any signer is admitted.
func TestTrustCommands(t *testing.T) {
	work := t.TempDir()
	dir := filepath.Join(work, "l")
	mustRun(t, exitOK, "init", "--dir", dir)
	const (
		vecSigner   = "ed25519:03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8"
		chainSigner = "ed25519:f33f2c1c5aca36ee4ead5d896b71c2af511f89b76a49b9b061ea4b3c380dc18f"
		vector      = "testdata/vectors/vrf/01_tier0_pass.json"
	)
	if out := mustRun(t, exitOK, "trust", "list", "--dir", dir); !strings.Contains(out, "any Ed25519 signer is admitted") {
		t.Errorf("trust list, none: %s", out)
	}
	if out := mustRun(t, exitOK, "trust", "list", "--json", "--dir", dir); out != `{"restricted":false,"signers":[]}`+"\n" {
		t.Errorf("trust list --json, none: %s", out)
	}
	// A file with the vector's key in hex, a comment and a blank line; the
	// chain's key from standard input.
	keyFile := filepath.Join(work, "trusted.txt")
	writeFile(t, keyFile, []byte("# CI verifier\n\n"+strings.TrimPrefix(vecSigner, "ed25519:")+"\n"))
	if out := mustRun(t, exitOK, "trust", "add", keyFile, "--dir", dir); out != "trusted "+vecSigner+"\n" {
		t.Errorf("trust add: %q", out)
	}
	if out := mustRun(t, exitOK, "trust", "add", keyFile, "--dir", dir); out != vecSigner+" is already trusted\n" {
		t.Errorf("trust add again: %q", out)
	}
	if out := mustRun(t, exitOK, "trust", "list", "--json", "--dir", dir); out != `{"restricted":true,"signers":["`+vecSigner+`"]}`+"\n" {
		t.Errorf("trust list --json: %s", out)
	}
	// The chain's signer is not trusted: exit 4, nothing appended.
	out := mustRun(t, exitInvalid, "append", "--dir", dir, "testdata/vrf/chain_1.json")
	if !strings.Contains(out, "is not in the ledger's trusted signers") {
		t.Errorf("untrusted append: %s", out)
	}
	mustRun(t, exitOK, "append", "--dir", dir, vector)
	// --trusted-signers overrides the setting for one call.
	chainKey := filepath.Join(work, "chain.txt")
	writeFile(t, chainKey, []byte(chainSigner+"\n"))
	mustRun(t, exitOK, "append", "--dir", dir, "--trusted-signers", chainKey, "testdata/vrf/chain_1.json")
	stdout, stderr, code := runLedger(t, []byte(chainSigner+"\n"), "trust", "add", "-", "--dir", dir)
	if code != exitOK || stdout != "trusted "+chainSigner+"\n" {
		t.Errorf("trust add -: exit %d, %q %q", code, stdout, stderr)
	}
	mustRun(t, exitOK, "append", "--dir", dir, "testdata/vrf/chain_2.json")
	if out := mustRun(t, exitOK, "trust", "list", "--dir", dir); out != vecSigner+"\n"+chainSigner+"\n" {
		t.Errorf("trust list: %q", out)
	}
	if out := mustRun(t, exitOK, "trust", "remove", chainSigner, "--dir", dir); out != "no longer trusted: "+chainSigner+"\n" {
		t.Errorf("trust remove: %q", out)
	}
	if out := mustRun(t, exitOK, "trust", "remove", chainSigner, "--dir", dir); !strings.Contains(out, "is not trusted: nothing removed") {
		t.Errorf("trust remove again: %q", out)
	}
	mustRun(t, exitInvalid, "append", "--dir", dir, "testdata/vrf/chain_3.json")
	if out := mustRun(t, exitOK, "trust", "remove", strings.TrimPrefix(vecSigner, "ed25519:"), "--dir", dir); !strings.Contains(out, "no trusted signers left") {
		t.Errorf("trust remove the last: %q", out)
	}
	mustRun(t, exitOK, "append", "--dir", dir, "testdata/vrf/chain_3.json")
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"trust", "add"}, exitUsage, "one FILE"},
		{[]string{"trust", "add", filepath.Join(work, "nosuch")}, exitMalformed, "no such file"},
		{[]string{"trust", "add", "testdata/vrf/chain_1.json"}, exitMalformed, "line 1"},
		{[]string{"trust", "remove"}, exitUsage, "one KEY"},
		{[]string{"trust", "remove", "ed25519:00"}, exitUsage, "hex digits"},
		{[]string{"trust", "list", "x"}, exitUsage, "no arguments"},
	} {
		_, stderr, code := runLedger(t, nil, append(tc.args, "--dir", dir)...)
		if code != tc.code || !strings.Contains(stderr, tc.err) {
			t.Errorf("ledger %s: exit %d, %q; want %d and %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.err)
		}
	}
	empty := filepath.Join(work, "empty.txt")
	writeFile(t, empty, []byte("# nothing\n"))
	if _, stderr, code := runLedger(t, nil, "trust", "add", empty, "--dir", dir); code != exitMalformed || !strings.Contains(stderr, "no public key") {
		t.Errorf("trust add of no key: exit %d, %q", code, stderr)
	}
}

// TestExportImportSettings drives the real binary: a ledger with
// registered HMAC keys, a registered policy and trusted signers is
// exported; import asks for the keys by name and id and fails before
// writing anything without them, refuses a wrong one and a target whose
// key conflicts, and restores every setting when given them.
func TestExportImportSettings(t *testing.T) {
	work := t.TempDir()
	src := filepath.Join(work, "src")
	mustRun(t, exitOK, "init", "--dir", src, "--origin", "e2e.example/settings")
	const ciKey = "testdata/vectors/rvww/hmac_key.txt"
	spareKey := filepath.Join(work, "spare.key")
	writeFile(t, spareKey, []byte("the spare key, not used yet"))
	mustRun(t, exitOK, "key", "add-hmac", "--dir", src, "ci-runner", ciKey)
	mustRun(t, exitOK, "key", "add-hmac", "--dir", src, "spare", spareKey)
	mustRun(t, exitOK, "policy", "add", "--dir", src, "testdata/rvww/policies/custom_read_grep.json")
	trusted := filepath.Join(work, "trusted.txt")
	writeFile(t, trusted, []byte("ed25519:03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8\n"))
	mustRun(t, exitOK, "trust", "add", "--dir", src, trusted)
	mustRun(t, exitOK, "append", "--dir", src, "testdata/vectors/rvww/01_solved_autonomous_signed.rvww", "testdata/vectors/vrf/01_tier0_pass.json")
	archive := filepath.Join(work, "backup.jsonl.zst")
	if out := mustRun(t, exitOK, "export", "--dir", src, archive); !strings.Contains(out, "exported 2 events to "+archive) ||
		!strings.Contains(out, "with 2 settings and 2 HMAC keys (name and key id, not the secret)") {
		t.Errorf("export: %s", out)
	}
	ciID := "hmac:" + keyIDHex(t, mustRead(t, ciKey))
	spareID := "hmac:" + keyIDHex(t, []byte("the spare key, not used yet"))
	listing := func(t *testing.T, entries []os.DirEntry) []string {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	before, err := os.ReadDir(work)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(work, "dst")
	for _, tc := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no keys", nil, exitUsage, `HMAC key needed: the archive's ledger had 2 HMAC keys registered that this import was not given: "ci-runner" (` + ciID + `), "spare" (` + spareID + `); give each with --hmac-key NAME=FILE or --hmac-key-dir DIR`},
		{"one key", []string{"--hmac-key", "ci-runner=" + ciKey}, exitUsage, `not given: "spare" (` + spareID + `)`},
		{"wrong key", []string{"--hmac-key", "ci-runner=" + ciKey, "--hmac-key", "spare=" + ciKey}, exitInvalid,
			`wrong HMAC key: the secret given for HMAC key "spare" has key id ` + ciID + `; the archive's "spare" is ` + spareID},
		{"unknown name", []string{"--hmac-key", "other=" + ciKey}, exitInvalid, `HMAC key "other" was given, but the archive's ledger had no key of that name (its keys: "ci-runner", "spare")`},
		{"empty key dir", []string{"--hmac-key-dir", work}, exitUsage, `"ci-runner" (` + ciID + `), "spare"`},
		{"bad flag", []string{"--hmac-key", "ci-runner"}, exitUsage, "want NAME=FILE"},
		{"bad name", []string{"--hmac-key", ".x=" + ciKey}, exitUsage, "HMAC key name"},
		{"no key dir", []string{"--hmac-key-dir", filepath.Join(work, "nosuch")}, exitUsage, "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runLedger(t, nil, append([]string{"import", "--dir", dst, archive}, tc.args...)...)
			checkOneLine(t, tc.name, stderr, code, tc.code, tc.err)
			after, err := os.ReadDir(work)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(listing(t, before), listing(t, after)) {
				t.Errorf("the failed import left %v (before: %v)", listing(t, after), listing(t, before))
			}
		})
	}
	// A key directory, and a key file matched by its id.
	keyDir := filepath.Join(work, "keys")
	writeFile(t, filepath.Join(keyDir, "spare"), []byte("the spare key, not used yet"))
	out := mustRun(t, exitOK, "import", "--dir", dst, "--hmac-key-dir", keyDir, "--hmac-key-file", ciKey, archive)
	if !strings.Contains(out, "imported 2 events into "+dst) || !strings.Contains(out, "; 2 settings and 2 HMAC keys restored") {
		t.Errorf("import: %s", out)
	}
	for _, args := range [][]string{{"policy", "list", "--json"}, {"trust", "list", "--json"}} {
		if a, b := mustRun(t, exitOK, append(args, "--dir", src)...), mustRun(t, exitOK, append(args, "--dir", dst)...); a != b {
			t.Errorf("%v differs:\n%s\n%s", args, a, b)
		}
	}
	for name, file := range map[string]string{"ci-runner": ciKey, "spare": spareKey} {
		if out := mustRun(t, exitOK, "key", "add-hmac", "--dir", dst, name, file); !strings.Contains(out, "is already registered") {
			t.Errorf("key %s not restored: %s", name, out)
		}
	}
	// A target whose key of the same name is another: refused, untouched.
	conflict := filepath.Join(work, "conflict")
	mustRun(t, exitOK, "init", "--dir", conflict)
	mustRun(t, exitOK, "key", "add-hmac", "--dir", conflict, "spare", ciKey)
	_, stderr, code := runLedger(t, nil, "import", "--dir", conflict, "--hmac-key-dir", keyDir, "--hmac-key", "ci-runner="+ciKey, archive)
	checkOneLine(t, "conflict", stderr, code, exitInvalid, `conflicting setting: the target ledger's HMAC key "spare" is `+ciID+", the archive's is "+spareID)
	if out := mustRun(t, exitOK, "policy", "list", "--dir", conflict); strings.Contains(out, "read-grep-small") {
		t.Errorf("the refused import registered the policy: %s", out)
	}
}

// keyIDHex is the hex of registry.KeyID's fingerprint of secret.
func keyIDHex(t *testing.T, secret []byte) string {
	t.Helper()
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("ledger hmac key id"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// TestImportPromptsOnTerminal runs import on a terminal (a pty made by
// util-linux script(1); skipped without it): a missing HMAC key is asked
// for, by name and id, and the key typed (or its hex) restores it.
func TestImportPromptsOnTerminal(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to give import a terminal")
	}
	work := t.TempDir()
	src := filepath.Join(work, "src")
	mustRun(t, exitOK, "init", "--dir", src)
	const ciKey = "testdata/vectors/rvww/hmac_key.txt"
	mustRun(t, exitOK, "key", "add-hmac", "--dir", src, "ci-runner", ciKey)
	mustRun(t, exitOK, "append", "--dir", src, "testdata/vectors/rvww/01_solved_autonomous_signed.rvww")
	archive := filepath.Join(work, "a.zst")
	mustRun(t, exitOK, "export", "--dir", src, archive)
	secret := mustRead(t, ciKey)
	for _, tc := range []struct {
		name, typed string
		want        string
	}{
		{"the key", string(secret), "1 HMAC key restored"},
		{"its hex", hex.EncodeToString(secret), "1 HMAC key restored"},
		{"another", "not the key", "wrong HMAC key"},
		{"nothing", "", "HMAC key needed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "dst")
			cmd := exec.Command(scriptBin, "-qec", fmt.Sprintf("'%s' import --dir '%s' '%s'", ledgerBin, dst, archive), "/dev/null")
			cmd.Stdin = strings.NewReader(tc.typed + "\n")
			out, _ := cmd.CombinedOutput() // script's exit status varies by version; the output says
			if !strings.Contains(string(out), `HMAC key "ci-runner" (hmac:`+keyIDHex(t, secret)+`) for the import (not echoed`) || !strings.Contains(string(out), tc.want) {
				t.Errorf("typed %q:\n%s", tc.typed, out)
			}
		})
	}
}
