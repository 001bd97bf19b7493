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
