package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/proofledger/ledger/verifier/sandbox"
)

// runBench runs `ledger-bench args...` in process, through the command's
// own flag parsing, and returns stdout, stderr and the exit code.
func runBench(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"ledger-bench"}, args...), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

// figure and report are the parts of the JSON report (docs/BENCHMARKS.md)
// the tests check, decoded as a reader of the file would.
type figure struct {
	Name      string  `json:"name"`
	Value     float64 `json:"value"`
	Unit      string  `json:"unit"`
	Limit     float64 `json:"limit"`
	LimitName string  `json:"limit_name"`
	Ratio     float64 `json:"ratio"`
	Better    string  `json:"better"`
	Goal      float64 `json:"goal"`
	GoalName  string  `json:"goal_name"`
	GoalMet   *bool   `json:"goal_met"`
	Note      string  `json:"note"`
}

type report struct {
	Machine struct {
		GOMAXPROCS int    `json:"gomaxprocs"`
		GOOS       string `json:"goos"`
		GOARCH     string `json:"goarch"`
		GoVersion  string `json:"go_version"`
	} `json:"machine"`
	Sizes struct {
		Events    int   `json:"events"`
		Appenders int   `json:"appenders"`
		Bundles   []int `json:"bundle_ledgers"`
	} `json:"sizes"`
	Figures []figure `json:"figures"`
	Facts   []struct {
		Name  string  `json:"name"`
		Value float64 `json:"value"`
		Unit  string  `json:"unit"`
	} `json:"facts"`
}

// TestBenchQuick runs the whole bench code path at --quick sizes and checks
// that the JSON has every figure, each with a positive value, limit and
// ratio, and the machine description. It checks no wall-clock thresholds.
func TestBenchQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("bench run skipped in -short mode")
	}
	work := t.TempDir()
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	stdout, stderr, code := runBench(t, "--quick", "--events", "600", "--bundles", "1200,300", "--appenders", "8", "--json", jsonPath, "--dir", work)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, data)
	}
	want := []string{
		"cpu.ed25519_verify", "cpu.hmac_sha256",
		"build.events=600", "replay.lookup", "replay.check", "replay.append",
		"proof.inclusion.prove", "proof.inclusion.verify", "disk.bytes_per_event", "audit.events=600",
	}
	for _, kind := range []string{"vrf", "rvww", "avir-attestation"} {
		for _, a := range []string{"1", "8"} {
			run := kind + ".appenders=" + a
			want = append(want, "ingest."+run, "ingest."+run+".bytes", "disk.pebble_sync."+run)
		}
	}
	want = append(want, "disk.pebble_sync.build.events=600")
	want = append(want, "reputation.agent", "reputation.agent.since_30d", "reputation.ranking", "reputation.ranking.since_30d")
	for _, n := range []string{"300", "1200"} {
		at := ".bundles=" + n
		want = append(want, "scorecard.since_30d"+at, "scorecard.since_30d"+at+".open", "trend.day"+at, "trend.week"+at, "trend.month"+at)
	}
	want = append(want, "rebuild.events=1200") // on the biggest bundle ledger only
	// The sandbox's figures, where the machine can run them.
	verifyFigures := sandbox.Available() == nil
	if _, err := sandbox.LookPath("python3"); err != nil {
		verifyFigures = false
	}
	if verifyFigures {
		want = append(want, "verify.test", "verify.sandbox_overhead", fmt.Sprintf("verify.throughput.jobs=%d", runtime.GOMAXPROCS(0)))
	} else {
		t.Log("verify.* not expected: no python3 or no user namespaces here")
	}
	// The goals, and only those, are beside their figures.
	goals := map[string]float64{"reputation.agent": 1, "reputation.agent.since_30d": 1, "rebuild.events=1200": 200_000,
		"replay.check": 1_000_000, "ingest.rvww.appenders=8": 50_000, "verify.sandbox_overhead": 10}
	got := map[string]figure{}
	for _, f := range rep.Figures {
		if _, dup := got[f.Name]; dup {
			t.Errorf("figure %s appears twice", f.Name)
		}
		got[f.Name] = f
		// The sandbox's overhead is a difference of two noisy times: on a
		// loaded machine it may come out below zero.
		positive := f.Value > 0 && f.Ratio > 0
		if f.Name == "verify.sandbox_overhead" {
			positive = !math.IsNaN(f.Value) && !math.IsInf(f.Value, 0)
		}
		if !positive || !(f.Limit > 0) || f.Unit == "" || f.LimitName == "" {
			t.Errorf("figure %s: value %v limit %v ratio %v unit %q limit name %q: want all positive and named", f.Name, f.Value, f.Limit, f.Ratio, f.Unit, f.LimitName)
		}
		if f.Better != "higher" && f.Better != "lower" {
			t.Errorf("figure %s: better %q", f.Name, f.Better)
		}
		if f.Name == "ingest.vrf.appenders=8" || f.Name == "audit.events=600" {
			// 70% of the CPU limit measured around (ingest) or right after (audit) the run
			if cpu, _ := strconv.ParseFloat(cpuLimitOf(f.Note), 64); f.Goal <= 0 || math.Abs(f.Goal-0.7*cpu) > 1 {
				t.Errorf("figure %s: goal %v, want 0.7 x its cpu limit (%s)", f.Name, f.Goal, f.Note)
			}
		} else if g := goals[f.Name]; f.Goal != g || (g > 0) != (f.GoalMet != nil) || (g > 0) != (f.GoalName != "") {
			t.Errorf("figure %s: goal %v (%q, met %v), want %v", f.Name, f.Goal, f.GoalName, f.GoalMet, g)
		}
	}
	for _, name := range []string{"scorecard.since_30d.bundles=300", "trend.day.bundles=1200", "reputation.agent"} {
		if f := got[name]; f.Unit != "ms" || f.Better != "lower" {
			t.Errorf("figure %s: unit %q, better %q: want a latency in ms, lower is better", name, f.Unit, f.Better)
		}
	}
	for _, name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("figure %s missing", name)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d figures, want %d", len(got), len(want))
	}
	m := rep.Machine
	if m.GOMAXPROCS <= 0 || m.GOOS == "" || m.GOARCH == "" || !strings.HasPrefix(m.GoVersion, "go") {
		t.Errorf("machine %+v", m)
	}
	if rep.Sizes.Events != 600 || rep.Sizes.Appenders != 8 || fmt.Sprint(rep.Sizes.Bundles) != "[300 1200]" {
		t.Errorf("sizes %+v", rep.Sizes)
	}
	for _, f := range rep.Facts {
		if !(f.Value > 0) {
			t.Errorf("fact %s = %v, want positive", f.Name, f.Value)
		}
	}
	for _, name := range want {
		if !strings.Contains(stdout, name) {
			t.Errorf("table lacks %s", name)
		}
	}
	if !strings.Contains(stdout, "GOAL") || !strings.Contains(stdout, "< 1.00 ms: ") {
		t.Errorf("table lacks the goals:\n%s", stdout)
	}
	// The work directory is left empty: every ledger and store is removed.
	if left, _ := os.ReadDir(work); len(left) != 0 {
		t.Errorf("work directory not cleaned: %v", left)
	}
}

// TestBenchUsage checks that command lines the program cannot run are
// usage errors (exit 2, one line on stderr naming the problem), found
// before anything is measured.
func TestBenchUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string // in the error line
	}{
		{[]string{"--events", "3"}, "events: 3 is below 16"},
		{[]string{"--appenders", "0"}, "appenders: 0 is below 1"},
		{[]string{"--bundles", "50"}, `"50" is not a count of at least 100 bundles`},
		{[]string{"--bundles", "1000,x"}, `"x" is not a count`},
		{[]string{"--bundles", ""}, `"" is not a count`},
		{[]string{"extra"}, "takes no arguments"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"--events", "many"}, "events"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			stdout, stderr, code := runBench(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d\nstderr: %s", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, "ledger-bench: ") || !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q, want an error line with %q", stderr, tt.want)
			}
			if strings.Contains(stdout, "FIGURE") {
				t.Errorf("a report was printed:\n%s", stdout)
			}
		})
	}
}

// TestBenchHelp checks that --help describes the figures and exits 0.
func TestBenchHelp(t *testing.T) {
	stdout, stderr, code := runBench(t, "--help")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"replay.*", "rebuild.*", "--quick", "--json", "--bundles"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, stdout)
		}
	}
}

// cpuLimitOf returns the "cpu limit N/s" of an ingest figure's note.
func cpuLimitOf(note string) string {
	_, rest, ok := strings.Cut(note, "cpu limit ")
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, "/s")
	return v
}
