package main

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/rollback"
	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

// mustRun runs the binary and fails unless it exits with code.
func mustRun(t *testing.T, code int, args ...string) string {
	t.Helper()
	stdout, stderr, got := runLedger(t, nil, args...)
	if got != code {
		t.Fatalf("ledger %s: exit %d, want %d\nstderr: %s\nstdout: %.2000s", strings.Join(args, " "), got, code, stderr, stdout)
	}
	return stdout
}

// appendFiles runs `ledger append --json` and returns the files it appended.
func appendFiles(t *testing.T, args ...string) []string {
	t.Helper()
	stdout, stderr, code := runLedger(t, nil, append([]string{"append", "--json"}, args...)...)
	if code != exitOK && code != exitMalformed && code != exitInvalid {
		t.Fatalf("append: exit %d: %s", code, stderr)
	}
	var files []string
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct{ File, Status, Reason string }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("append --json line %q: %v", sc.Text(), err)
		}
		if line.Status == "appended" {
			files = append(files, line.File)
		}
	}
	return files
}

// bundleFact is what the independent computation reads of one appended bundle,
// decoded from its bytes and evaluated with package governance.
type bundleFact struct {
	task       string
	created    int64
	outcome    rvww.Outcome
	mode       int
	policy     [8]byte
	known      bool
	violations int64
	cost       int64
	latency    uint32
	tokens     int64
	retries    int64
	evidence   bool
}

// rollbackFact is a rollback record and the bundle it follows: its
// task's latest bundle appended before it.
type rollbackFact struct {
	task    string
	at      int64
	clean   bool
	follows *bundleFact
}

// decodeFacts decodes appended bundles with rvww and evaluates their
// traces against the policies the ledger knows, without the index.
func decodeFacts(t *testing.T, files []string, known []governance.Policy) []bundleFact {
	t.Helper()
	var out []bundleFact
	for _, f := range files {
		data, err := os.ReadFile(resolvePath(f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := rvww.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		h := b.Header
		fc := bundleFact{task: b.TaskUUID(), created: int64(h.CreatedNS), outcome: h.Outcome, mode: int(h.Mode), policy: h.PolicyHash,
			cost: int64(h.TotalCostMicrodollars), latency: h.TotalLatencyMS, tokens: int64(h.TotalTokens), retries: int64(h.RetryCount),
			evidence: b.HasSpec && b.HasDiff && b.HasTestLog}
		for _, p := range known {
			if p.Hash() == h.PolicyHash {
				fc.known = true
				fc.violations = int64(len(governance.Evaluate(p, uint8(h.Mode), traceCalls(b)).Violations))
			}
		}
		out = append(out, fc)
	}
	return out
}

// resolvePath turns a path as runLedger's binary saw it (relative to the
// repository root, or absolute) into one this process can open.
func resolvePath(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join("../..", p)
}

// window is one scorecard query of the test.
type window struct {
	name         string
	since, until string
	policy, mode string
}

func (w window) args() []string {
	var a []string
	for _, kv := range [][2]string{{"--since", w.since}, {"--until", w.until}, {"--policy", w.policy}, {"--mode", w.mode}} {
		if kv[1] != "" {
			a = append(a, kv[0], kv[1])
		}
	}
	return a
}

func parseOpt(t *testing.T, s string) int64 {
	t.Helper()
	if s == "" {
		return 0
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
		if tm, err := time.Parse(layout, s); err == nil {
			return tm.UnixNano()
		}
	}
	t.Fatalf("bad time %q", s)
	return 0
}

// expected computes a scorecard from the facts, in the reference's
// arithmetic, written out here independently of package scorecard.
func expected(t *testing.T, w window, facts []bundleFact, rbs []rollbackFact, policyHash []byte) map[string]float64 {
	t.Helper()
	since, until := parseOpt(t, w.since), parseOpt(t, w.until)
	in := func(ns int64) bool { return (since == 0 || ns >= since) && (until == 0 || ns < until) }
	mode := -1
	if w.mode != "" {
		if m, ok := governance.ParseMode(w.mode); ok {
			mode = int(m)
		} else {
			if _, err := fmt.Sscan(w.mode, &mode); err != nil {
				t.Fatalf("window mode %q: %v", w.mode, err)
			}
		}
	}
	var solved, failed, skipped, errs, viol, unknown, cost, tokens, retries, evid int64
	var lat []uint32
	for _, f := range facts {
		if !in(f.created) || policyHash != nil && !bytes.Equal(policyHash, f.policy[:]) || mode >= 0 && f.mode != mode {
			continue
		}
		switch f.outcome {
		case rvww.OutcomeSolved:
			solved++
			if f.evidence {
				evid++
			}
		case rvww.OutcomeFailed:
			failed++
		case rvww.OutcomeSkipped:
			skipped++
		default:
			errs++
		}
		viol += f.violations
		if !f.known {
			unknown++
		}
		cost += f.cost
		tokens += f.tokens
		retries += f.retries
		lat = append(lat, f.latency)
	}
	var rb, rbClean int64
	for _, r := range rbs {
		// Unfiltered, every rollback of the window counts; filtered, those
		// that follow a bundle of the filter.
		f := r.follows
		if in(r.at) && (policyHash == nil || bytes.Equal(policyHash, f.policy[:])) && (mode < 0 || f.mode == mode) {
			rb++
			if r.clean {
				rbClean++
			}
		}
	}
	slices.Sort(lat)
	pct := func(p int) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(p*len(lat)/100, len(lat)-1)])
	}
	total := solved + failed + skipped + errs
	m := map[string]float64{
		"total_tasks": float64(total), "solved": float64(solved), "failed": float64(failed), "skipped": float64(skipped),
		"errors": float64(errs), "policy_violations": float64(viol), "policy_unknown": float64(unknown),
		"rollback_count": float64(rb), "rollbacks_restored_clean": float64(rbClean),
		"total_cost_microdollars": float64(cost), "median_latency_ms": pct(50), "p95_latency_ms": pct(95),
		"total_tokens": float64(tokens), "total_retries": float64(retries), "evidence_complete_solved": float64(evid),
		"evidence_coverage": 0, "cost_per_solve": 0, "solve_rate": 0, "rollback_correctness": 1,
	}
	if total > 0 {
		m["solve_rate"] = float64(float32(solved) / float32(total))
	}
	if solved > 0 {
		m["evidence_coverage"] = float64(float32(evid) / float32(solved))
		m["cost_per_solve"] = float64(cost / solved)
	}
	if rb > 0 {
		m["rollback_correctness"] = float64(float32(rbClean) / float32(rb))
	}
	accepted := total > 0 && 5*solved >= 3*total && viol == 0 && unknown == 0 && solved > 0 && evid == solved && rbClean == rb
	m["accepted"] = 0
	if accepted {
		m["accepted"] = 1
	}
	return m
}

// TestScorecardMatchesIndependentComputation appends the RVWW reference
// vectors, the valid RVWW samples, a generated corpus, bundles under an
// unregistered policy and rollback records, then checks every metric of
// `ledger scorecard --json` over windows with partial days at either edge,
// inside one day, and with policy and mode filters against values computed
// here from the decoded bundles.
func TestScorecardMatchesIndependentComputation(t *testing.T) {
	work := t.TempDir()
	dir := filepath.Join(work, "ledger")
	mustRun(t, exitOK, "init", "--dir", dir, "--origin", "scorecard.test")
	mustRun(t, exitOK, "policy", "add", "--dir", dir, "testdata/rvww/policies/custom_read_grep.json")
	custom, err := governance.ParsePolicy(mustRead(t, "testdata/rvww/policies/custom_read_grep.json"))
	if err != nil {
		t.Fatal(err)
	}
	known := append(governance.Defaults(), custom)

	cfg := ledgertest.Config{Seed: 11, Bundles: 1500, Span: 21 * 24 * time.Hour, Violations: 0.06}
	corpus, err := ledgertest.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(work, "corpus.hmac")
	writeFile(t, keyFile, corpus.Keys.HMAC.Secret)
	genDir := filepath.Join(work, "bundles")
	rng := rand.New(rand.NewPCG(11, 12))
	rbKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	var rbs []rollbackFact
	rbDir := filepath.Join(work, "rollbacks")
	for i, d := range corpus.Docs {
		writeFile(t, filepath.Join(genDir, filepath.Base(d.Name)), d.Data)
		if i%40 == 7 {
			at := d.Time.Add(time.Duration(rng.IntN(6*3600)) * time.Second)
			clean := rng.IntN(4) != 0
			doc, err := rollback.Sign(d.Subject, clean, at, "", rbKey)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(rbDir, fmt.Sprintf("%03d.json", i)), doc)
			rbs = append(rbs, rollbackFact{task: d.Subject, at: at.UnixNano(), clean: clean})
		}
	}
	// Bundles under a policy the ledger does not know.
	ops := governance.Policy{Name: "ops-unregistered", Mode: governance.ModeAutonomous, MaxCostMicrodollars: 2_000_000, MaxToolCalls: 100}
	for i := range 12 {
		created := corpus.Config.Start.Add(time.Duration(i) * 41 * time.Hour)
		b := &rvww.Bundle{Header: rvww.Header{TaskID: [16]byte{0xee, byte(i), 0x40}, PolicyHash: ops.Hash(), CreatedNS: uint64(created.UnixNano()),
			Outcome: rvww.Outcome(i % 4), Mode: rvww.ModeAutonomous},
			Calls:   []rvww.ToolCall{{Action: "Bash", CostMicrodollars: uint32(1000 * i), LatencyMS: uint32(500 + 37*i), Tokens: 100}},
			HasSpec: true, Spec: []byte("ops task")}
		data, err := rvww.Encode(b, corpus.Keys.HMAC.Secret)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(work, "ops", fmt.Sprintf("%02d.rvww", i)), data)
	}

	vectorKey := "--hmac-key-file=testdata/vectors/rvww/hmac_key.txt"
	args := []string{"--dir", dir, vectorKey, "--hmac-key-file=" + keyFile, "testdata/vectors/rvww"}
	for _, f := range sampleFiles(t, "testdata/rvww") {
		if strings.HasSuffix(f, ".rvww") {
			args = append(args, f)
		}
	}
	files := appendFiles(t, append(args, genDir, filepath.Join(work, "ops"))...)
	if n := len(appendFiles(t, "--dir", dir, rbDir)); n != len(rbs) {
		t.Fatalf("appended %d rollbacks of %d", n, len(rbs))
	}
	facts := decodeFacts(t, files, known)
	// The rollbacks were appended after every bundle: each follows its
	// task's last bundle in append order.
	for i := range rbs {
		for j := range facts {
			if facts[j].task == rbs[i].task {
				rbs[i].follows = &facts[j]
			}
		}
		if rbs[i].follows == nil {
			t.Fatalf("rollback of task %s follows no appended bundle", rbs[i].task)
		}
	}
	t.Logf("%d bundles appended (%d generated), %d rollbacks", len(facts), len(corpus.Docs), len(rbs))
	if len(facts) < len(corpus.Docs)+12+10 {
		t.Fatalf("only %d bundles appended", len(facts))
	}

	opsHash := ops.HashString()
	for _, w := range []window{
		{name: "all"},
		{name: "partial days at both edges", since: "2026-01-08T13:37:00Z", until: "2026-01-19T05:00:00Z"},
		{name: "inside one day", since: "2026-01-10T03:00:00Z", until: "2026-01-10T20:00:00.5Z"},
		{name: "since only", since: "2026-01-20T07:30:00Z"},
		{name: "until only", until: "2026-01-12T18:00:00Z"},
		{name: "whole days", since: "2026-01-07", until: "2026-01-14"},
		{name: "before the corpus", since: "2025-12-31T23:00:00Z", until: "2026-01-01T00:00:10Z"},
		{name: "empty", since: "2030-01-01", until: "2030-01-02"},
		{name: "restricted by name", policy: "restricted"},
		{name: "approved by hash, partial", policy: "37174386ed336528", since: "2026-01-09T11:11:11Z", until: "2026-01-22T22:22:22Z"},
		{name: "autonomous mode", mode: "autonomous"},
		{name: "registered policy by name", policy: "read-grep-small"},
		{name: "unregistered policy by hash", policy: opsHash},
		{name: "mode 1, partial", mode: "1", since: "2026-01-15T06:00:00Z", until: "2026-01-25T18:00:00Z"},
		{name: "mode and policy", mode: "autonomous", policy: "autonomous", since: "2026-01-06T12:00:00Z"},
	} {
		t.Run(w.name, func(t *testing.T) {
			var hash []byte
			switch {
			case w.policy == "":
			case len(w.policy) == 16:
				hash, _ = hex.DecodeString(w.policy)
			default:
				for _, p := range known {
					if p.Name == w.policy {
						h := p.Hash()
						hash = h[:]
					}
				}
			}
			want := expected(t, w, facts, rbs, hash)
			code, status := exitNotAccepted, "not_accepted"
			switch {
			case want["total_tasks"] == 0:
				code, status = exitEmptyWindow, "empty"
			case want["accepted"] == 1:
				code, status = exitOK, "accepted"
			}
			out := mustRun(t, code, append([]string{"scorecard", "--json", "--dir", dir}, w.args()...)...)
			var got map[string]any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if got["status"] != status {
				t.Errorf("status = %v, want %s", got["status"], status)
			}
			for key, v := range want {
				if key == "accepted" {
					if got["accepted"] != (v == 1) {
						t.Errorf("accepted = %v, want %v", got["accepted"], v == 1)
					}
					continue
				}
				g, ok := got[key].(float64)
				if !ok {
					t.Errorf("%s missing or not a number: %v", key, got[key])
					continue
				}
				// Ratios are float32 in the reference; JSON carries their
				// shortest form.
				if float32(g) != float32(v) || !isRatio(key) && g != v {
					t.Errorf("%s = %v, want %v", key, g, v)
				}
			}
		})
	}
}

func isRatio(key string) bool {
	return key == "solve_rate" || key == "evidence_coverage" || key == "rollback_correctness"
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(resolvePath(p))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// demoLedger builds a ledger of testdata/demo, as scripts/demo.sh does.
func demoLedger(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ledger")
	mustRun(t, exitOK, "init", "--dir", dir, "--origin", "demo.test")
	mustRun(t, exitOK, "policy", "add", "--dir", dir, "testdata/rvww/policies/custom_read_grep.json")
	if n := len(appendFiles(t, "--dir", dir, "--hmac-key-file=testdata/demo/hmac_key.bin", "testdata/demo/vrf", "testdata/demo/avir", "testdata/demo/rvww")); n != 412 {
		t.Fatalf("appended %d demo documents, want 412", n)
	}
	if n := len(appendFiles(t, "--dir", dir, "testdata/demo/rollback")); n == 0 {
		t.Fatal("no rollbacks appended")
	}
	return dir
}

// demoAt is the time the demo's reputations are evaluated at: the Monday
// after its last week.
const demoAt = "2026-03-02"

// TestProjectionCommandsGolden keeps the output of scorecard, trend,
// reputation, systems and policy list on the demo corpus under golden
// control, with their exit codes; then rebuilds the projections and
// demands the same answers.
func TestProjectionCommandsGolden(t *testing.T) {
	dir := demoLedger(t)
	cases := []struct {
		golden string
		code   int
		args   []string
	}{
		{"scorecard.txt", exitNotAccepted, []string{"scorecard"}},
		{"scorecard-last-two-weeks.txt", exitOK, []string{"scorecard", "--since", "2026-02-16"}},
		{"scorecard-autonomous.jsonl", exitNotAccepted, []string{"scorecard", "--json", "--policy", "autonomous", "--since", "2026-01-20T12:00:00Z", "--until", "2026-02-10"}},
		{"scorecard-registered-policy.txt", exitEmptyWindow, []string{"scorecard", "--policy", "read-grep-small"}},
		{"scorecard-thresholds.txt", exitOK, []string{"scorecard", "--min-solve-rate", "0.5", "--max-violations", "12", "--min-evidence-coverage", "0.95", "--min-rollback-correctness", "0.9"}},
		{"scorecard-threshold-exact.jsonl", exitOK, []string{"scorecard", "--json", "--since", "2026-02-16", "--min-solve-rate", "0.8"}}, // 48 of 60
		{"scorecard-threshold-unmet.txt", exitNotAccepted, []string{"scorecard", "--since", "2026-02-16", "--min-solve-rate", "0.800001"}},
		{"scorecard-empty.jsonl", exitEmptyWindow, []string{"scorecard", "--json", "--since", "2026-03-05", "--max-violations", "3"}},
		{"trend-week.txt", exitOK, []string{"trend"}},
		{"trend-day.jsonl", exitOK, []string{"trend", "--by", "day", "--since", "2026-02-20T12:00:00Z", "--json"}},
		{"trend-month.txt", exitOK, []string{"trend", "--by", "month"}},
		{"trend-clipped.txt", exitOK, []string{"trend", "--by", "week", "--since", "2026-01-14", "--until", "2026-02-04T12:00:00Z"}},
		{"trend-autonomous.txt", exitOK, []string{"trend", "--policy", "autonomous"}},
		{"trend-mode-restricted.jsonl", exitOK, []string{"trend", "--by", "month", "--mode", "restricted", "--json"}},
		{"trend-registered-policy.txt", exitOK, []string{"trend", "--policy", "read-grep-small"}},
		{"reputation.txt", exitOK, []string{"reputation", "--at", demoAt}},
		{"reputation-since.jsonl", exitOK, []string{"reputation", "--at", demoAt, "--since", "2026-02-16", "--json", "--limit", "3"}},
		{"reputation-signers.txt", exitOK, []string{"reputation", "--signers", "--at", demoAt}},
		{"systems.txt", exitOK, []string{"systems"}},
		{"systems.json", exitOK, []string{"systems", "--json"}},
		{"policy-list.txt", exitOK, []string{"policy", "list"}},
		{"policy-list.jsonl", exitOK, []string{"policy", "list", "--json"}},
	}
	outputs := map[string]string{}
	for _, tc := range cases {
		out := mustRun(t, tc.code, append(tc.args, "--dir", dir)...)
		checkGolden(t, filepath.Join("projections", tc.golden), out)
		outputs[tc.golden] = out
	}
	// One agent in detail: the top of the ranking.
	var top struct{ Agent string }
	first := strings.SplitN(mustRun(t, exitOK, "reputation", "--json", "--limit", "1", "--at", demoAt, "--dir", dir), "\n", 2)[0]
	if err := json.Unmarshal([]byte(first), &top); err != nil || top.Agent == "" {
		t.Fatalf("ranking: %v %q", err, first)
	}
	checkGolden(t, "projections/reputation-agent.txt", mustRun(t, exitOK, "reputation", top.Agent, "--at", demoAt, "--dir", dir))
	checkGolden(t, "projections/reputation-agent.json", mustRun(t, exitOK, "reputation", top.Agent, "--json", "--at", demoAt, "--dir", dir))

	out := mustRun(t, exitOK, "rebuild", "--dir", dir)
	if !strings.Contains(out, "rebuilt the projections from 441 events") {
		t.Errorf("rebuild: %s", out)
	}
	for _, tc := range cases {
		if got := mustRun(t, tc.code, append(tc.args, "--dir", dir)...); got != outputs[tc.golden] {
			t.Errorf("after rebuild, %s differs", tc.golden)
		}
	}
	var rb struct {
		Events          int64   `json:"events"`
		EventsPerSecond float64 `json:"events_per_second"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, exitOK, "rebuild", "--json", "--quiet", "--dir", dir)), &rb); err != nil || rb.Events != 441 || rb.EventsPerSecond <= 0 {
		t.Errorf("rebuild --json: %+v %v", rb, err)
	}
}

// TestTrendPlot writes the demo's chart in both formats.
func TestTrendPlot(t *testing.T) {
	dir := demoLedger(t)
	work := t.TempDir()
	for _, name := range []string{"trend.png", "trend.svg"} {
		p := filepath.Join(work, name)
		out := mustRun(t, exitOK, "trend", "--by", "week", "--plot", p, "--dir", dir)
		if !strings.Contains(out, "wrote the chart to "+p) {
			t.Errorf("trend --plot %s: %s", name, out)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".png") {
			if _, err := png.Decode(bytes.NewReader(data)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		} else if !bytes.Contains(data, []byte("<svg")) || !bytes.Contains(data, []byte("2026-W09")) {
			t.Errorf("%s: no SVG with the last week's label", name)
		}
	}
}

// TestProjectionCommandErrors checks usage errors and the exit codes of
// queries that find nothing.
func TestProjectionCommandErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledger")
	mustRun(t, exitOK, "init", "--dir", dir)
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"scorecard", "--by", "week"}, exitUsage, "flag provided but not defined"},
		{[]string{"scorecard", "extra"}, exitUsage, "no arguments"},
		{[]string{"scorecard", "--since", "yesterday"}, exitUsage, "--since"},
		{[]string{"scorecard", "--since", "2026-02-01", "--until", "2026-01-01"}, exitUsage, "is not after"},
		{[]string{"scorecard", "--policy", "nosuch"}, exitUsage, "no policy has that name"},
		{[]string{"scorecard", "--mode", "yolo"}, exitUsage, "--mode"},
		{[]string{"scorecard", "--mode", "256"}, exitUsage, "--mode"},
		{[]string{"scorecard"}, exitEmptyWindow, ""},
		{[]string{"scorecard", "--min-solve-rate", "1.5"}, exitUsage, "--min-solve-rate"},
		{[]string{"scorecard", "--min-solve-rate", "60%"}, exitUsage, "from 0 to 1"},
		{[]string{"scorecard", "--min-evidence-coverage", "0.1234567"}, exitUsage, "at most 6 decimals"},
		{[]string{"scorecard", "--min-rollback-correctness", "-1"}, exitUsage, "--min-rollback-correctness"},
		{[]string{"scorecard", "--max-violations", "-1"}, exitUsage, "--max-violations"},
		{[]string{"scorecard", "--max-violations", "1.5"}, exitUsage, "whole number"},
		{[]string{"scorecard", "--min-solve-rate", "0", "--min-evidence-coverage", "0"}, exitEmptyWindow, ""},
		{[]string{"trend", "--policy", "nosuch"}, exitUsage, "no policy has that name"},
		{[]string{"trend", "--mode", "yolo"}, exitUsage, "--mode"},
		{[]string{"trend", "--mode", "autonomous"}, exitOK, ""},
		{[]string{"trend", "--by", "year"}, exitUsage, "day, week or month"},
		{[]string{"trend", "--plot", "chart.pdf"}, exitUsage, ".svg or .png"},
		{[]string{"trend", "--plot", "chart.png"}, exitUsage, "nothing to plot"},
		{[]string{"trend"}, exitOK, ""},
		{[]string{"reputation", "nobody"}, exitUsage, "no receipts"},
		{[]string{"reputation", "a", "b"}, exitUsage, "at most one"},
		{[]string{"reputation", "--at", "soon"}, exitUsage, "--at"},
		{[]string{"reputation"}, exitOK, ""},
		{[]string{"systems"}, exitOK, ""},
		{[]string{"policy", "add", "testdata/rvww/policies/bad_unknown_field.json"}, exitMalformed, "not a valid policy"},
		{[]string{"policy", "add", "no/such/policy.json"}, exitMalformed, "no such file"},
		{[]string{"policy", "add"}, exitUsage, "one FILE"},
		{[]string{"rebuild", "x"}, exitUsage, "no arguments"},
	} {
		_, stderr, code := runLedger(t, nil, append(tc.args, "--dir", dir)...)
		if code != tc.code || !strings.Contains(stderr, tc.err) {
			t.Errorf("ledger %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.err)
		}
	}
	// Two registered policies with one name need the hash.
	work := t.TempDir()
	a := filepath.Join(work, "a.json")
	b := filepath.Join(work, "b.json")
	writeFile(t, a, []byte(`{"name": "twin", "mode": "approved", "max_cost_microdollars": 1, "max_tool_calls": 1}`))
	writeFile(t, b, []byte(`{"name": "twin", "mode": "approved", "max_cost_microdollars": 2, "max_tool_calls": 1}`))
	out := mustRun(t, exitOK, "policy", "add", a, "--dir", dir)
	if !strings.HasPrefix(out, `registered policy "twin" `) {
		t.Errorf("policy add: %s", out)
	}
	if out := mustRun(t, exitOK, "policy", "add", a, "--dir", dir); !strings.HasPrefix(out, `policy "twin" `) || !strings.Contains(out, "is already registered") {
		t.Errorf("policy add again: %s", out)
	}
	mustRun(t, exitOK, "policy", "add", b, "--dir", dir)
	_, stderr, code := runLedger(t, nil, "scorecard", "--policy", "twin", "--dir", dir)
	if code != exitUsage || !strings.Contains(stderr, "2 policies have that name") {
		t.Errorf("ambiguous --policy: exit %d, %s", code, stderr)
	}
	if out := mustRun(t, exitOK, "policy", "add", "testdata/rvww/policies/default_approved.json", "--dir", dir); !strings.Contains(out, "nothing to register") {
		t.Errorf("policy add of a default: %s", out)
	}
}
