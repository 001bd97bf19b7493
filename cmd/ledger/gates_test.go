package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
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
