package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/vrf"
)

// TestFreshnessCommands drives the freshness rules through the binary:
// the setting (freshness set/show/clear, --json), append refusing a stale
// and a future document with exit 5 (--replay-ok does not excuse it),
// status stale and reason codes in --json, --max-age 0 turning the
// setting off for a call, the refusals listing, log --summary's counts,
// nothing in the log for a refusal, and the setting kept by export and
// import.
func TestFreshnessCommands(t *testing.T) {
	work := t.TempDir()
	dir := filepath.Join(work, "l")
	mustRun(t, exitOK, "init", "--dir", dir)
	const old = "testdata/vectors/vrf/01_tier0_pass.json" // verified_at 2026-11-22T04:36:18.990601Z
	// A receipt dated two days ahead of whenever the test runs.
	d := vrf.Draft{ReceiptID: "6f1d2a3b-0000-4000-8000-000000000001", VerifiedAt: time.Now().Add(48 * time.Hour).UTC(),
		Details: []vrf.Detail{{Name: "t", Status: "pass", DurationMS: 1}}, AgentID: "agent-future",
		Hashes: vrf.Hashes{Input: vrf.ShortHash([]byte("i")), Output: vrf.ShortHash([]byte("o")), Suite: vrf.ShortHash([]byte("s"))}}
	v, err := d.Build()
	if err != nil {
		t.Fatal(err)
	}
	future := filepath.Join(work, "future.json")
	writeFile(t, future, append(canonjson.Indent(v), '\n'))

	type setting struct {
		MaxAge         *string  `json:"max_age"`
		MaxAgeSeconds  *float64 `json:"max_age_seconds"`
		MaxSkew        *string  `json:"max_skew"`
		MaxSkewSeconds *float64 `json:"max_skew_seconds"`
	}
	show := func(d string) setting {
		t.Helper()
		var s setting
		out := mustRun(t, exitOK, "freshness", "show", "--dir", d, "--json")
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return s
	}
	if s := show(dir); s.MaxAge != nil || s.MaxSkew != nil || s.MaxAgeSeconds != nil || s.MaxSkewSeconds != nil {
		t.Errorf("a new ledger's freshness: %+v, want all null", s)
	}
	if out := mustRun(t, exitOK, "freshness", "set", "--dir", dir, "--max-age", "720h"); out != "max-age   30d\nmax-skew  off\n" {
		t.Errorf("freshness set: %q", out)
	}
	mustRun(t, exitOK, "freshness", "set", "--dir", dir, "--max-skew", "1h") // keeps max-age
	if s := show(dir); s.MaxAge == nil || *s.MaxAge != "30d" || *s.MaxAgeSeconds != 30*86400 || s.MaxSkew == nil || *s.MaxSkew != "1h" || *s.MaxSkewSeconds != 3600 {
		t.Errorf("freshness show: %+v", s)
	}

	type line struct {
		File   string  `json:"file"`
		Status string  `json:"status"`
		Seq    *int64  `json:"seq"`
		Reason string  `json:"reason"`
		Code   *string `json:"code"`
	}
	appendJSON := func(code int, args ...string) line {
		t.Helper()
		var l line
		out := mustRun(t, code, append([]string{"append", "--dir", dir, "--allow-unsigned", "--json"}, args...)...)
		if err := json.Unmarshal([]byte(out), &l); err != nil || strings.Count(out, "\n") != 1 {
			t.Fatalf("%v: %q", err, out)
		}
		return l
	}
	// The vector is older than a second whenever the test runs.
	for _, args := range [][]string{{"--max-age", "1s", old}, {"--replay-ok", "--max-age", "1s", old}} {
		l := appendJSON(exitRefused, args...)
		if l.Status != "stale" || l.Code == nil || *l.Code != "stale" || l.Seq != nil ||
			!strings.HasPrefix(l.Reason, "document time 2026-11-22T04:36:18.990601Z (verified_at) is ") || !strings.Contains(l.Reason, "older than max-age set for this call 1s") {
			t.Errorf("append %v: %+v", args, l)
		}
	}
	text := mustRun(t, exitRefused, "append", "--dir", dir, "--max-age", "1s", old)
	if !strings.HasPrefix(text, old+": stale refused (stale): document time 2026-11-22T04:36:18.990601Z") {
		t.Errorf("text: %q", text)
	}
	// The setting's max-skew (1h) refuses the receipt dated ahead.
	if l := appendJSON(exitRefused, future); l.Status != "stale" || *l.Code != "future" || !strings.Contains(l.Reason, "ahead of arrival") || !strings.Contains(l.Reason, "beyond the ledger's max-skew 1h") {
		t.Errorf("future: %+v", l)
	}
	if got := mustRun(t, exitOK, "log", "--dir", dir); got != "" {
		t.Errorf("the log after refusals only: %q", got)
	}
	// --max-age 0 turns the setting's max-age off for the call.
	if l := appendJSON(exitOK, "--max-age", "0", old); l.Status != "appended" || l.Code != nil {
		t.Errorf("--max-age 0: %+v", l)
	}
	// A replay of it, however old, is a replay.
	if l := appendJSON(exitRefused, "--max-age", "1s", old); l.Status != "replay" || *l.Code != "replay" {
		t.Errorf("replay: %+v", l)
	}

	var recs []struct {
		Status, Class, Reason, Agent string
	}
	for _, ln := range strings.Split(strings.TrimSpace(mustRun(t, exitOK, "refusals", "--dir", dir, "--json")), "\n") {
		var r struct{ Status, Class, Reason, Agent string }
		if err := json.Unmarshal([]byte(ln), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 5 || recs[0].Reason != "stale" || recs[3].Reason != "future" || recs[3].Status != "stale" || recs[3].Agent != "agent-future" || recs[4].Reason != "replay" {
		t.Errorf("refusals: %+v", recs)
	}
	if out := mustRun(t, exitOK, "refusals", "--dir", dir, "--reason", "future"); strings.Count(out, "\n") != 1 || !strings.Contains(out, "agent-future") {
		t.Errorf("refusals --reason future: %q", out)
	}

	var sum struct {
		Events   int64            `json:"events"`
		ByKind   map[string]int64 `json:"by_kind"`
		Refused  int64            `json:"refused"`
		ByReason map[string]int64 `json:"refused_by_reason"`
		Stale    int64            `json:"stale"`
		Since    *string          `json:"since"`
	}
	out := mustRun(t, exitOK, "log", "--dir", dir, "--summary", "--json")
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Events != 1 || sum.ByKind["vrf"] != 1 || sum.Refused != 5 || sum.Stale != 4 || sum.ByReason["stale"] != 3 || sum.ByReason["future"] != 1 || sum.ByReason["replay"] != 1 || sum.Since != nil {
		t.Errorf("log --summary --json: %s", out)
	}
	text = mustRun(t, exitOK, "log", "--dir", dir, "--summary", "--since", "1h")
	if !strings.Contains(text, "\nevents    1: vrf 1\n") || !strings.Contains(text, "refused   5 in the refusal journal (not evidence): replay 1, stale 3, future 1\n") || !strings.Contains(text, "\nstale     4 ") {
		t.Errorf("log --summary --since 1h:\n%s", text)
	}

	// The setting travels in an export archive.
	archive := filepath.Join(work, "a.jsonl.zst")
	mustRun(t, exitOK, "export", "--dir", dir, archive)
	restored := filepath.Join(work, "restored")
	mustRun(t, exitOK, "import", "--dir", restored, archive)
	if s := show(restored); s.MaxAge == nil || *s.MaxAge != "30d" || s.MaxSkew == nil || *s.MaxSkew != "1h" {
		t.Errorf("restored freshness: %+v", s)
	}
	if out := mustRun(t, exitOK, "freshness", "clear", "--dir", dir, "--json"); out != `{"max_age":null,"max_age_seconds":null,"max_skew":null,"max_skew_seconds":null}`+"\n" {
		t.Errorf("freshness clear: %q", out)
	}
	if l := appendJSON(exitOK, future); l.Status != "appended" {
		t.Errorf("after clear: %+v", l)
	}
}
