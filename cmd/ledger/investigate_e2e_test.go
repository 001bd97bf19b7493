package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// investigationLedger makes a ledger for the investigation tests: a
// receipt chain of agent-7f3a (events 0 to 2), a receipt named by its
// signer (3), a witness bundle (4), an attestation (5) and a rollback of
// the bundle's task (6).
func investigationLedger(t *testing.T) (dir string, run func(want int, args ...string) (string, string)) {
	t.Helper()
	work := t.TempDir()
	dir = filepath.Join(work, "l")
	run = func(want int, args ...string) (string, string) {
		t.Helper()
		stdout, stderr, code := runLedger(t, nil, append(args, "--dir", dir)...)
		if code != want {
			t.Fatalf("ledger %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, stdout, stderr)
		}
		return stdout, stderr
	}
	run(0, "init")
	run(0, "append", "--hmac-key-file", "testdata/vectors/rvww/hmac_key.txt",
		"testdata/vrf/chain_1.json", "testdata/vrf/chain_2.json", "testdata/vrf/chain_3.json", "testdata/vectors/vrf/01_tier0_pass.json",
		"testdata/vectors/rvww/01_solved_autonomous_signed.rvww", "testdata/vectors/avir/01_verified_L2.attestation.json")
	rb := filepath.Join(work, "rollback.json")
	if err := os.WriteFile(rb, []byte(`{"kind":"rollback","task_id":"`+bundleTask+`","restored_clean":true,"at":"2026-11-21T10:00:00.5Z"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	run(0, "append", "--allow-unsigned", rb)
	return dir, run
}

const (
	bundleTask    = "73656564-7265-662d-7461-736b2d303031"
	chainSigner   = "ed25519:f33f2c1c5aca36ee4ead5d896b71c2af511f89b76a49b9b061ea4b3c380dc18f"
	vectorSigner  = "ed25519:03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8"
	vectorReceipt = "4317e99d-6ddf-45f5-8d9e-f7d2ec99d867"
)

// seqsOf returns the "seq" of each JSON line.
func seqsOf(t *testing.T, out string) string {
	t.Helper()
	var seqs []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var ev struct{ Seq *int64 }
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Seq == nil {
			t.Fatalf("not an event line: %q (%v)", line, err)
		}
		seqs = append(seqs, fmt.Sprint(*ev.Seq))
	}
	return strings.Join(seqs, " ")
}

// TestLogSelection runs log with --agent, --subject and --task, alone and
// with the other filters, in text and JSON.
func TestLogSelection(t *testing.T) {
	_, run := investigationLedger(t)
	system, _ := run(0, "log", "--json", "--kind", "avir-attestation")
	var att struct{ Subject, Signer string }
	if err := json.Unmarshal([]byte(system), &att); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"an agent's receipts", []string{"--agent", "agent-7f3a"}, "0 1 2"},
		{"a signer: the receipts it verified", []string{"--agent", chainSigner}, "0 1 2"},
		{"an agent named by its signer", []string{"--agent", vectorSigner}, "3"},
		{"the replicator of an attestation", []string{"--agent", att.Signer}, "5"},
		{"the subject of receipts", []string{"--subject", "agent-7f3a"}, "0 1 2"},
		{"a system", []string{"--subject", att.Subject}, "5"},
		{"a task: bundle and rollback", []string{"--task", bundleTask}, "4 6"},
		{"a task in upper case", []string{"--task", strings.ToUpper(bundleTask)}, "4 6"},
		{"a task by subject", []string{"--subject", bundleTask}, "4 6"},
		{"a task, one kind", []string{"--task", bundleTask, "--kind", "rollback"}, "6"},
		{"agent and subject", []string{"--agent", chainSigner, "--subject", "agent-7f3a"}, "0 1 2"},
		{"agent and another subject", []string{"--agent", chainSigner, "--subject", att.Subject}, ""},
		{"limit", []string{"--agent", "agent-7f3a", "--limit", "2"}, "0 1"},
		{"since", []string{"--agent", "agent-7f3a", "--since", "1h"}, "0 1 2"},
		{"until", []string{"--agent", "agent-7f3a", "--until", "2h"}, ""},
		{"nobody", []string{"--agent", "nobody"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := run(0, append([]string{"log", "--json"}, tc.args...)...)
			if got := seqsOf(t, out); got != tc.want {
				t.Errorf("events %q, want %q", got, tc.want)
			}
			text, _ := run(0, append([]string{"log"}, tc.args...)...)
			if lines := len(strings.Fields(tc.want)); strings.Count(text, "\n") != lines {
				t.Errorf("text: %d lines, want %d:\n%s", strings.Count(text, "\n"), lines, text)
			}
		})
	}
	for _, args := range [][]string{{"--task", "not-a-uuid"}, {"--agent", ""}, {"--subject", ""}} {
		if _, stderr := run(exitUsage, append([]string{"log"}, args...)...); !strings.Contains(stderr, args[0]) {
			t.Errorf("log %v: %q does not name the flag", args, stderr)
		}
	}
}

// TestChainAgent prints every chain of an agent, in text and JSON.
func TestChainAgent(t *testing.T) {
	_, run := investigationLedger(t)
	text, _ := run(0, "chain", "--agent", "agent-7f3a")
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 4 || lines[0] != "chain 826bbb67-5cdb-4512-8c27-a66b63fee2c0" || !strings.Contains(lines[3], "0662677b-d7e8-4717-b1b3-3fcbbc4f046d  position 2") {
		t.Errorf("chain --agent:\n%s", text)
	}
	out, _ := run(0, "chain", "--agent", "agent-7f3a", "--json")
	if got := seqsOf(t, out); got != "0 1 2" {
		t.Errorf("chain --agent --json: events %s", got)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct{ Chain, Subject string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Chain != "826bbb67-5cdb-4512-8c27-a66b63fee2c0" || ev.Subject != "agent-7f3a" {
			t.Errorf("line %s: %+v %v", line, ev, err)
		}
	}
	// A chain of one, named by its signer.
	if out, _ := run(0, "chain", "--agent", vectorSigner); !strings.HasPrefix(out, "chain "+vectorReceipt+"\n") || strings.Count(out, "\n") != 2 {
		t.Errorf("chain --agent of a single receipt:\n%s", out)
	}
	if _, stderr := run(exitUsage, "chain", "--agent", "nobody"); !strings.Contains(stderr, "no receipt chain") {
		t.Errorf("chain --agent nobody: %q", stderr)
	}
	run(exitUsage, "chain", "--agent", "agent-7f3a", "826bbb67-5cdb-4512-8c27-a66b63fee2c0")
}

// TestGetAndProveReferences: get and prove take a task UUID (its latest
// bundle) and unique prefixes of ids and digests; short, ambiguous and
// unknown references exit 2.
func TestGetAndProveReferences(t *testing.T) {
	dir, run := investigationLedger(t)
	out, _ := run(0, "get", "--json", "3")
	var ev struct {
		Seq    int64
		Digest string
	}
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ref  string
		want int64
	}{
		{"3", 3},
		{vectorReceipt, 3},
		{"4317e99d", 3},
		{strings.ToUpper("4317e99d-6ddf"), 3},
		{ev.Digest[:len("sha256:")+8], 3},
		{strings.TrimPrefix(ev.Digest, "sha256:")[:13], 3},
		{bundleTask, 4}, // the latest bundle, not the rollback after it
		{bundleTask + "@rollback", 6},
	} {
		out, _ := run(0, "get", "--json", tc.ref)
		var got struct{ Seq int64 }
		if err := json.Unmarshal([]byte(out), &got); err != nil || got.Seq != tc.want {
			t.Errorf("get %s: event %d (%v), want %d", tc.ref, got.Seq, err, tc.want)
		}
	}
	// --raw by prefix: the original bytes.
	raw, _ := run(0, "get", "--raw", "4317e99d")
	want, _ := os.ReadFile("../../testdata/vectors/vrf/01_tier0_pass.json")
	if raw != string(want) {
		t.Error("get --raw by prefix did not return the original bytes")
	}
	// prove by task UUID and by prefix: the proofs verify.
	for _, ref := range []string{bundleTask, "4317e99d"} {
		p := filepath.Join(t.TempDir(), "p")
		run(0, "prove", ref, "-o", p)
		if out, _, code := runLedger(t, nil, "verify-proof", p, "--key", filepath.Join(dir, "log.pub")); code != 0 {
			t.Errorf("prove %s: verify-proof exit %d: %s", ref, code, out)
		}
	}
	// The bundle and the rollback of the task share the prefix.
	for _, cmd := range []string{"get", "prove"} {
		stdout, stderr := run(exitUsage, cmd, bundleTask[:8])
		if stdout != "" || !strings.Contains(stderr, "ambiguous prefix: it names 2 documents") ||
			!regexp.MustCompile(`(?m)^\s+4\s+rvww\s+`+bundleTask+`@\d+\s+sha256:[0-9a-f]{64}$`).MatchString(stderr) ||
			!regexp.MustCompile(`(?m)^\s+6\s+rollback\s+`+bundleTask+`@rollback@`).MatchString(stderr) {
			t.Errorf("%s of an ambiguous prefix:\nstdout %q\nstderr %s", cmd, stdout, stderr)
		}
		if _, stderr := run(exitUsage, cmd, "4317e99"); !strings.Contains(stderr, "at least 8") {
			t.Errorf("%s of a 7-character prefix: %q", cmd, stderr)
		}
		if _, stderr := run(exitUsage, cmd, "ffffffffff"); !strings.Contains(stderr, "no such event or document") {
			t.Errorf("%s of an unknown prefix: %q", cmd, stderr)
		}
		if _, stderr := run(exitUsage, cmd, "00000000-0000-4000-8000-000000000000"); !strings.Contains(stderr, "no such event or document") {
			t.Errorf("%s of an unknown task: %q", cmd, stderr)
		}
	}
}

// TestRefusals: refused appends are listed with every filter, in text and
// JSON; the bound is a setting; the reputation page shows the counts;
// rebuild keeps the journal and audit does not call it a divergence.
func TestRefusals(t *testing.T) {
	_, run := investigationLedger(t)
	if out, _ := run(0, "refusals"); out != "" {
		t.Errorf("refusals of a ledger that refused nothing:\n%s", out)
	}
	run(exitRefused, "append", "testdata/vrf/chain_2.json", "testdata/vrf/chain_3.json")
	run(exitInvalid, "append", "testdata/vectors/vrf/90_tampered_verdict.json")
	run(exitMalformed, "append", "testdata/vrf/chain_bad_previous_receipt.json")
	out, _ := run(0, "refusals", "--json")
	type rec struct {
		N                                                     int64
		Time, Kind, ID, Digest, Status, Class, Reason, Detail string
		Agent, Submitter                                      string
		Event                                                 *int64
	}
	var recs []rec
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r rec
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{`"n":`, `"time":`, `"kind":`, `"id":`, `"digest":"sha256:`, `"status":`, `"class":`, `"reason":`, `"detail":`, `"agent":`, `"submitter":"cli:`, `"event":`} {
			if !strings.Contains(line, key) {
				t.Errorf("line %s lacks %s", line, key)
			}
		}
		recs = append(recs, r)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4:\n%s", len(recs), out)
	}
	for i, want := range []struct {
		reason, id, agent string
		event             int64
	}{
		{"replay", "7fcab00c-1855-49ad-8b40-1d0bfd4a58f3", "agent-7f3a", 1},
		{"replay", "0662677b-d7e8-4717-b1b3-3fcbbc4f046d", "agent-7f3a", 2},
		{"invalid", vectorReceipt, "", -1},
		{"malformed", "", "", -1},
	} {
		r := recs[i]
		ev := int64(-1)
		if r.Event != nil {
			ev = *r.Event
		}
		if r.N != int64(i) || r.Reason != want.reason || r.ID != want.id || r.Agent != want.agent || ev != want.event || r.Kind != "vrf" {
			t.Errorf("record %d: %+v, want %+v", i, r, want)
		}
	}
	count := func(args ...string) int {
		out, _ := run(0, append([]string{"refusals"}, args...)...)
		return strings.Count(out, "\n")
	}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 4},
		{[]string{"--agent", "agent-7f3a"}, 2},
		{[]string{"--reason", "replay"}, 2},
		{[]string{"--reason", "malformed"}, 1},
		{[]string{"--agent", "agent-7f3a", "--reason", "invalid"}, 0},
		{[]string{"--since", "1h"}, 4},
		{[]string{"--until", "1h"}, 0},
		{[]string{"--limit", "3"}, 3},
	} {
		if got := count(tc.args...); got != tc.want {
			t.Errorf("refusals %v: %d lines, want %d", tc.args, got, tc.want)
		}
	}
	text, _ := run(0, "refusals", "--reason", "replay")
	if !regexp.MustCompile(`(?m)^\s+0  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  replay +vrf +7fcab00c-1855-49ad-8b40-1d0bfd4a58f3  agent-7f3a  cli:\S+  already in the ledger as event 1$`).MatchString(text) {
		t.Errorf("refusals text:\n%s", text)
	}
	run(exitUsage, "refusals", "--reason", "typo")
	run(exitUsage, "refusals", "extra")

	// The reputation page shows the counts, labelled.
	page, _ := run(0, "reputation", "agent-7f3a")
	if !strings.Contains(page, "refused     2 replays, 0 conflicts (all time, from the refusal journal, not derived from the log)") {
		t.Errorf("reputation page:\n%s", page)
	}
	js, _ := run(0, "reputation", "agent-7f3a", "--json")
	var rep struct {
		RefusalJournal map[string]int64 `json:"refusal_journal"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil || rep.RefusalJournal["replay"] != 2 || rep.RefusalJournal["conflict"] != 0 {
		t.Errorf("reputation --json: %+v %v", rep, err)
	}

	// Rebuild keeps it; audit is clean.
	run(0, "rebuild", "--quiet")
	if got := count(); got != 4 {
		t.Errorf("after rebuild: %d records", got)
	}
	run(0, "audit")

	// The bound: keep 1, and the next refusal trims the rest; the counts stay.
	if out, _ := run(0, "refusals", "--keep", "1"); !strings.Contains(out, "keeps the newest 1 records (was 100,000)") {
		t.Errorf("refusals --keep: %s", out)
	}
	run(exitUsage, "refusals", "--keep", "1", "--agent", "x")
	run(exitUsage, "refusals", "--keep", "-1")
	run(exitRefused, "append", "testdata/vrf/chain_1.json")
	out, _ = run(0, "refusals", "--json")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(lines[0], `"n":4,`) || !strings.Contains(lines[0], "826bbb67") {
		t.Errorf("after --keep 1:\n%s", out)
	}
	if page, _ := run(0, "reputation", "agent-7f3a"); !strings.Contains(page, "refused     3 replays, 0 conflicts") {
		t.Errorf("reputation page after trimming:\n%s", page)
	}
}
