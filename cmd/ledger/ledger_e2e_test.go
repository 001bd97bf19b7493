package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLedgerSession drives the real binary through the life of a ledger:
// init, append (a chain given out of order, bundles with a key file), log,
// chain, get --raw, a refused replay, checkpoint, inclusion and
// consistency proofs checked offline, export and import. Nothing but
// command output reaches stderr unless --verbose.
func TestLedgerSession(t *testing.T) {
	work := t.TempDir()
	dir := filepath.Join(work, "l")
	run := func(wantCode int, args ...string) string {
		t.Helper()
		stdout, stderr, code := runLedger(t, nil, args...)
		if code != wantCode {
			t.Fatalf("ledger %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, wantCode, stdout, stderr)
		}
		if wantCode == 0 && stderr != "" {
			t.Errorf("ledger %v wrote to stderr: %q", args, stderr)
		}
		return stdout
	}
	run(0, "init", "--dir", dir, "--origin", "e2e.example/log")
	if _, stderr, code := runLedger(t, nil, "init", "--dir", dir); code != exitUsage || !strings.Contains(stderr, "already exists") {
		t.Errorf("second init: exit %d, %q", code, stderr)
	}
	key := "testdata/vectors/rvww/hmac_key.txt"
	out := run(0, "append", "--dir", dir, "--json", "--hmac-key-file", key,
		"testdata/vrf/chain_3.json", "testdata/vrf/chain_2.json", "testdata/vrf/chain_1.json",
		"testdata/vectors/rvww/01_solved_autonomous_signed.rvww", "testdata/vectors/vrf/01_tier0_pass.json")
	seqs := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var o struct {
			File, Status string
			Seq          *int64
		}
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatal(err)
		}
		if o.Status != "appended" || o.Seq == nil {
			t.Fatalf("append: %s", line)
		}
		seqs[filepath.Base(o.File)] = *o.Seq
	}
	if seqs["chain_1.json"] != 0 || seqs["chain_2.json"] != 1 || seqs["chain_3.json"] != 2 {
		t.Errorf("chain appended out of order: %v", seqs)
	}
	if lines := strings.Count(run(0, "log", "--dir", dir, "--json", "--kind", "vrf"), "\n"); lines != 4 {
		t.Errorf("log --kind vrf: %d lines, want 4", lines)
	}
	if lines := strings.Count(run(0, "log", "--dir", dir, "--since", "1h", "--limit", "2"), "\n"); lines != 2 {
		t.Errorf("log --limit 2: %d lines", lines)
	}
	chain := run(0, "chain", "--dir", dir, "7fcab00c-1855-49ad-8b40-1d0bfd4a58f3")
	if strings.Count(chain, "\n") != 3 || !strings.Contains(strings.Split(chain, "\n")[0], "826bbb67") {
		t.Errorf("chain:\n%s", chain)
	}
	raw := run(0, "get", "4317e99d-6ddf-45f5-8d9e-f7d2ec99d867", "--raw", "--dir", dir)
	want, _ := os.ReadFile("../../testdata/vectors/vrf/01_tier0_pass.json")
	if raw != string(want) {
		t.Error("get --raw did not return the original bytes")
	}
	if out := run(exitRefused, "append", "--dir", dir, "testdata/vrf/chain_2.json"); !strings.Contains(out, "replay refused") {
		t.Errorf("replay: %s", out)
	}
	ck := run(0, "checkpoint", "--dir", dir)
	if !strings.HasPrefix(ck, "e2e.example/log\n5\n") {
		t.Errorf("checkpoint:\n%s", ck)
	}
	proof := filepath.Join(work, "p.tlog-proof")
	run(0, "prove", "4317e99d-6ddf-45f5-8d9e-f7d2ec99d867", "--dir", dir, "-o", proof)
	pub := filepath.Join(dir, "log.pub")
	run(0, "verify-proof", proof, "--key", pub, "--doc", "testdata/vectors/vrf/01_tier0_pass.json")
	run(exitInvalid, "verify-proof", proof, "--key", pub, "--doc", "testdata/vrf/chain_1.json")
	cons := filepath.Join(work, "c.proof")
	run(0, "prove", "--consistency", "2", "5", "--dir", dir, "-o", cons)
	run(0, "verify-proof", cons, "--key", pub)
	archive := filepath.Join(work, "x.jsonl.zst")
	run(0, "export", "--dir", dir, archive)
	dir2 := filepath.Join(work, "l2")
	run(0, "init", "--dir", dir2, "--origin", "e2e.example/copy")
	if out := run(0, "import", "--dir", dir2, "--hmac-key-file", key, archive); !strings.Contains(out, "imported 5 events") {
		t.Errorf("import: %s", out)
	}
	if _, stderr, _ := runLedger(t, nil, "--verbose", "log", "--dir", dir); !strings.Contains(stderr, "pebble") {
		t.Errorf("--verbose shows no library messages: %q", stderr)
	}
}
