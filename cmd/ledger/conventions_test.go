package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// runLedgerEnv runs the binary like runLedger, with extra environment
// variables (NAME=value) after a clean slate for the LEDGER_* settings,
// NO_COLOR and TERM.
func runLedgerEnv(t testing.TB, stdin []byte, extraEnv []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(ledgerBin, args...)
	cmd.Dir = "../.."
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEDGER_") && !strings.HasPrefix(kv, "NO_COLOR=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, extraEnv...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run ledger %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// newTestLedger initializes a ledger with a few events (a receipt chain
// and a signed bundle) in a temporary directory and returns it.
func newTestLedger(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "l")
	for _, args := range [][]string{
		{"init", "--dir", dir, "--origin", "conventions.test/log"},
		{"append", "--dir", dir, "--hmac-key-file", "testdata/vectors/rvww/hmac_key.txt",
			"testdata/vrf/chain_1.json", "testdata/vrf/chain_2.json", "testdata/vectors/vrf/01_tier0_pass.json",
			"testdata/vectors/rvww/01_solved_autonomous_signed.rvww"},
	} {
		if out, stderr, code := runLedgerEnv(t, nil, nil, args...); code != 0 {
			t.Fatalf("ledger %v: exit %d\n%s%s", args, code, out, stderr)
		}
	}
	return dir
}

// commandPaths lists every command and subcommand of the CLI ("key
// add-hmac"), and whether each is a leaf (runs an action of its own).
func commandPaths(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, dc := range allCommands(newApp(&env{})) {
		out[dc.path] = len(dc.cmd.Subcommands) == 0
	}
	return out
}

// wantUsageError checks that an invocation was a usage error: exit 2,
// nothing on stdout, one line on stderr that says something.
func wantUsageError(t *testing.T, args []string, stdout, stderr string, code int, mention string) {
	t.Helper()
	if code != exitUsage {
		t.Errorf("ledger %q: exit %d, want %d (usage)\nstdout: %s\nstderr: %s", args, code, exitUsage, stdout, stderr)
		return
	}
	if stdout != "" {
		t.Errorf("ledger %q: a usage error wrote to stdout: %q", args, stdout)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") || !strings.HasPrefix(stderr, "ledger: ") {
		t.Errorf("ledger %q: stderr is not one line \"ledger: ...\": %q", args, stderr)
	}
	if mention != "" && !strings.Contains(stderr, mention) {
		t.Errorf("ledger %q: stderr %q does not mention %q", args, stderr, mention)
	}
}

// TestUnknownFlagEverywhere: an unknown flag is a usage error (exit 2, one
// line naming it) on every command and subcommand, before or after the
// arguments, and at the top level.
func TestUnknownFlagEverywhere(t *testing.T) {
	dir := newTestLedger(t)
	paths := commandPaths(t)
	var names []string
	for p := range paths {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range append(names, "") {
		args := append(strings.Fields(p), "--no-such-flag")
		if paths[p] {
			args = append(args, "--dir", dir)
		}
		stdout, stderr, code := runLedgerEnv(t, nil, nil, args...)
		wantUsageError(t, args, stdout, stderr, code, "no-such-flag")
	}
}

// usageCase is an invocation that must be a usage error.
type usageCase struct {
	args    []string
	env     []string
	mention string
}

// TestUsageErrors runs a table of wrong invocations (missing or extra
// arguments, bad values, missing required flags) of every command; every
// one must exit 2 with one line on stderr. A leaf command without a row
// fails the test: a new command needs its cases here.
func TestUsageErrors(t *testing.T) {
	dir := newTestLedger(t)
	proofFile := filepath.Join(t.TempDir(), "p.proof")
	if _, stderr, code := runLedgerEnv(t, nil, nil, "prove", "--dir", dir, "0", "-o", proofFile); code != 0 {
		t.Fatalf("prove: %s", stderr)
	}
	d := []string{"--dir", dir}
	with := func(args ...string) []string { return append(args, d...) }
	cases := map[string][]usageCase{
		"":              {{args: []string{"nosuch"}, mention: "nosuch"}, {args: []string{"help", "nosuch"}, mention: "nosuch"}},
		"init":          {{args: with("init", "extra"), mention: "no arguments"}, {args: with("init", "--origin", "has space"), mention: "--origin"}},
		"inspect":       {{args: []string{"inspect"}, mention: "no input"}, {args: []string{"inspect", "--policy", "testdata/rvww/policies/bad_json_syntax.json"}, mention: "no input"}, {args: []string{"inspect", "--spec", "testdata/avir/bad_json_syntax.spec.json", "--policy", "/nonexistent/policy.json", "testdata/vectors/vrf/01_tier0_pass.json"}, mention: "--policy"}},
		"append":        {{args: with("append"), mention: "no input"}, {args: with("append", "--batch", "-1", "x"), mention: "--batch"}, {args: with("append", "--max-age", "a while", "x"), mention: "--max-age"}, {args: with("append", "--max-skew", "-1s", "x"), mention: "--max-skew"}},
		"get":           {{args: with("get"), mention: "SEQ"}, {args: with("get", "0", "1"), mention: "SEQ"}, {args: with("get", "0", "--raw", "--json"), mention: "--raw"}},
		"log":           {{args: with("log", "x"), mention: "no arguments"}, {args: with("log", "--limit", "many"), mention: "limit"}, {args: with("log", "--kind", "nope"), mention: "--kind"}, {args: with("log", "--summary", "--limit", "3"), mention: "--limit"}},
		"chain":         {{args: with("chain"), mention: "chain"}, {args: with("chain", "a", "b"), mention: "chain"}},
		"replay":        {{args: with("replay"), mention: "TASK_UUID"}, {args: with("replay", "0", "1"), mention: "TASK_UUID"}, {args: with("replay", "no-such-thing"), mention: "no such file"}, {args: with("replay", "0", "--all"), mention: "--all"}, {args: with("replay", "testdata"), mention: "directory"}, {args: with("replay", "0", "--hmac-key-file", "no/such/key"), mention: "--hmac-key-file"}},
		"checkpoint":    {{args: with("checkpoint", "x"), mention: "no arguments"}},
		"prove":         {{args: with("prove"), mention: "SEQ"}, {args: with("prove", "0", "1"), mention: "SEQ"}, {args: with("prove", "--consistency", "1"), mention: "OLD"}, {args: with("prove", "0", "--json", "-o", "-"), mention: "standard output"}, {args: with("prove", "--consistency", "--size", "2", "1", "4"), mention: "--size"}},
		"verify-proof":  {{args: []string{"verify-proof"}, mention: "PROOF"}, {args: []string{"verify-proof", proofFile}, mention: "--key"}, {args: []string{"verify-proof", "a", "b", "--key", "k"}, mention: "PROOF"}, {args: []string{"verify-proof", "-", "--doc", "-", "--key", filepath.Join(dir, "log.pub")}, mention: "both"}},
		"key":           {{args: []string{"key"}, mention: "add-hmac"}, {args: []string{"key", "nosuch"}, mention: "nosuch"}},
		"key add-hmac":  {{args: with("key", "add-hmac"), mention: "NAME"}, {args: with("key", "add-hmac", "n"), mention: "NAME"}, {args: with("key", "add-hmac", "n", "f", "x"), mention: "NAME"}},
		"export":        {{args: with("export"), mention: "FILE"}, {args: with("export", "a", "b"), mention: "FILE"}, {args: with("export", "-", "--json"), mention: "standard output"}},
		"import":        {{args: with("import"), mention: "FILE"}, {args: with("import", "a", "b"), mention: "FILE"}},
		"scorecard":     {{args: with("scorecard", "x"), mention: "no arguments"}, {args: with("scorecard", "--since", "yesterday-ish"), mention: "--since"}, {args: with("scorecard", "--mode", "sideways"), mention: "--mode"}},
		"trend":         {{args: with("trend", "x"), mention: "no arguments"}, {args: with("trend", "--by", "fortnight"), mention: "--by"}, {args: with("trend", "--plot", "-", "--json"), mention: "standard output"}},
		"reputation":    {{args: with("reputation", "a", "b"), mention: "AGENT"}, {args: with("reputation", "--limit", "-1"), mention: "--limit"}},
		"systems":       {{args: with("systems", "x"), mention: "no arguments"}},
		"policy":        {{args: []string{"policy"}, mention: "add, list"}, {args: []string{"policy", "remove"}, mention: "remove"}},
		"policy add":    {{args: with("policy", "add"), mention: "FILE"}, {args: with("policy", "add", "a", "b"), mention: "FILE"}},
		"policy list":   {{args: with("policy", "list", "x"), mention: "no arguments"}},
		"rebuild":       {{args: with("rebuild", "x"), mention: "no arguments"}},
		"run":           {{args: []string{"run"}, mention: "vrf, avir"}, {args: []string{"run", "nosuch"}, mention: "nosuch"}},
		"run vrf":       {{args: with("run", "vrf", "--jobs", "-1", "x.json"), mention: "--jobs"}, {args: with("run", "vrf", "--sandbox", "chroot", "x.json"), mention: "--sandbox"}, {args: with("run", "vrf", "--agent", "", "x.json"), mention: "--agent"}},
		"run avir":      {{args: with("run", "avir"), mention: "SPEC"}, {args: with("run", "avir", "a", "b"), mention: "SPEC"}},
		"witness":       {{args: []string{"witness"}, mention: "build"}, {args: []string{"witness", "nosuch"}, mention: "nosuch"}},
		"witness build": {{args: with("witness", "build", "x"), mention: "no arguments"}, {args: with("witness", "build", "--outcome", "solved"), mention: "nothing to do"}, {args: with("witness", "build", "-o", "-", "--json", "--outcome", "solved"), mention: "standard output"}, {args: with("witness", "build", "-o", "x.rvww", "--outcome", "sideways"), mention: "--outcome"}, {args: with("witness", "build", "-o", "x.rvww", "--outcome", "solved", "--trace", "/nonexistent/trace.jsonl"), mention: "--policy"}, {args: with("witness", "build", "-o", "x.rvww", "--outcome", "solved", "--policy", "restricted", "--trace", "/nonexistent/trace.jsonl", "--wait", "-1s"), mention: "--wait"}},
		"trust":         {{args: []string{"trust"}, mention: "add, list, remove"}, {args: []string{"trust", "nosuch"}, mention: "nosuch"}},
		"trust add":     {{args: with("trust", "add"), mention: "FILE"}, {args: with("trust", "add", "a", "b"), mention: "FILE"}},
		"trust list":    {{args: with("trust", "list", "x"), mention: "no arguments"}},
		"trust remove":  {{args: with("trust", "remove"), mention: "KEY"}, {args: with("trust", "remove", "not-a-key"), mention: "trust remove"}},
		"refusals":      {{args: with("refusals", "x"), mention: "no arguments"}, {args: with("refusals", "--reason", "boredom"), mention: "boredom"}, {args: with("refusals", "--keep", "-1"), mention: "--keep"}, {args: with("refusals", "--keep", "5", "--json"), mention: "--json"}, {args: with("refusals", "--since", "soon"), mention: "--since"}},
		"audit":         {{args: with("audit", "x"), mention: "no arguments"}, {args: with("audit", "--max-problems", "lots"), mention: "max-problems"}, {args: with("audit", "--max-problems", "-1"), mention: "--max-problems"}, {args: with("audit", "--from", "-1", "--against", "testdata/vrf/chain_1.json"), mention: "--from"}, {args: with("audit", "--wait", "-1s", "--against", "/nonexistent/checkpoint"), mention: "--wait"}, {args: []string{"audit", "--dir", filepath.Join(dir, "nosuch"), "--against", "testdata/vrf/chain_1.json"}, mention: "ledger init"}},
		"version":       {{args: []string{"version", "x"}, mention: "no arguments"}},
		"completion":    {{args: []string{"completion"}, mention: "bash"}, {args: []string{"completion", "bash", "zsh"}, mention: "bash"}, {args: []string{"completion", "tcsh"}, mention: "tcsh"}},
		"env":           {{args: with("log"), env: []string{"LEDGER_VERBOSE=perhaps"}, mention: "LEDGER_VERBOSE"}, {args: with("log"), env: []string{"LEDGER_NO_PROGRESS=perhaps"}, mention: "LEDGER_NO_PROGRESS"}},

		// ledger freshness
		"freshness":       {{args: []string{"freshness"}, mention: "set, show, clear"}, {args: []string{"freshness", "nosuch"}, mention: "nosuch"}},
		"freshness set":   {{args: with("freshness", "set"), mention: "--max-age"}, {args: with("freshness", "set", "--max-age", "soon"), mention: "--max-age"}, {args: with("freshness", "set", "--max-skew", "-5m"), mention: "--max-skew"}, {args: with("freshness", "set", "x", "--max-age", "1h"), mention: "no arguments"}},
		"freshness show":  {{args: with("freshness", "show", "x"), mention: "no arguments"}},
		"freshness clear": {{args: with("freshness", "clear", "x"), mention: "no arguments"}},
	}
	for p := range commandPaths(t) {
		if _, ok := cases[p]; !ok {
			t.Errorf("command %q has no usage-error cases: add its wrong invocations to TestUsageErrors", p)
		}
	}
	for _, cs := range cases {
		for _, c := range cs {
			stdout, stderr, code := runLedgerEnv(t, nil, c.env, c.args...)
			wantUsageError(t, c.args, stdout, stderr, code, c.mention)
		}
	}
}

// TestHelpEverywhere: `ledger help PATH` and `ledger PATH --help` print
// the same help for every command and subcommand, exit 0; `ledger help`
// is `ledger --help`.
func TestHelpEverywhere(t *testing.T) {
	top, _, code := runLedgerEnv(t, nil, nil, "--help")
	if code != 0 || !strings.Contains(top, "COMMANDS:") || !strings.Contains(top, "help, h") {
		t.Fatalf("ledger --help: exit %d, help command not listed:\n%s", code, top)
	}
	if out, _, code := runLedgerEnv(t, nil, nil, "help"); code != 0 || out != top {
		t.Errorf("ledger help: exit %d, differs from ledger --help:\n%s", code, out)
	}
	for p := range commandPaths(t) {
		words := strings.Fields(p)
		help, stderr, code := runLedgerEnv(t, nil, nil, append([]string{"help"}, words...)...)
		if code != 0 || stderr != "" {
			t.Errorf("ledger help %s: exit %d, stderr %q", p, code, stderr)
			continue
		}
		if !strings.Contains(help, "ledger "+p+" - ") {
			t.Errorf("ledger help %s: not its help:\n%s", p, help)
		}
		if strings.Contains(help, "help, h") && p != "" {
			t.Errorf("ledger help %s lists a help subcommand:\n%s", p, help)
		}
		flagHelp, _, code := runLedgerEnv(t, nil, nil, append(words, "--help")...)
		if code != 0 || flagHelp != help {
			t.Errorf("ledger %s --help: exit %d, differs from ledger help %s:\n%s", p, code, p, flagHelp)
		}
	}
}

// TestVersion: --version and the version command agree, and --json
// carries the module, the Go version and the VCS fields (null when the
// build has none, as in this test's build).
func TestVersion(t *testing.T) {
	flag, _, code1 := runLedgerEnv(t, nil, nil, "--version")
	cmd, _, code2 := runLedgerEnv(t, nil, nil, "version")
	if code1 != 0 || code2 != 0 || flag != cmd {
		t.Fatalf("--version (exit %d) and version (exit %d) differ:\n%s\n%s", code1, code2, flag, cmd)
	}
	if !strings.HasPrefix(flag, "ledger ") || !strings.Contains(flag, runtime.Version()) {
		t.Errorf("version text: %q", flag)
	}
	out, _, code := runLedgerEnv(t, nil, nil, "version", "--json")
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
		t.Fatalf("version --json: exit %d, %v: %q", code, err, out)
	}
	if v["module"] != "github.com/proofledger/ledger" || v["go"] != runtime.Version() || v["os"] != runtime.GOOS {
		t.Errorf("version --json: %v", v)
	}
	if _, ok := v["revision"]; !ok {
		t.Errorf("version --json has no revision key: %v", v)
	}
	// A command after --version does not run.
	if out, _, code := runLedgerEnv(t, nil, nil, "--version", "init", "--dir", filepath.Join(t.TempDir(), "x")); code != 0 || out != flag {
		t.Errorf("--version init: exit %d, %q", code, out)
	}
}

// TestBuildVersion checks the version read from build information, with
// and without VCS settings.
func TestBuildVersion(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "cd5127b0a1"},
		{Key: "vcs.time", Value: "2026-11-23T04:55:00Z"}, {Key: "vcs.modified", Value: "true"}, {Key: "GOOS", Value: "plan9"}}
	tests := []struct {
		name     string
		bi       *debug.BuildInfo
		version  string
		revision string // "" for null
		modified string // "" for null
		text     []string
	}{
		{"no build info", nil, "(unknown)", "", "", []string{"ledger (unknown)", "revision  unknown"}},
		{"devel without vcs", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/proofledger/ledger", Version: "(devel)"}},
			"(devel)", "", "", []string{"ledger (devel)", "revision  unknown", "go        go1.26.0"}},
		{"tagged with vcs", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/proofledger/ledger", Version: "v1.2.3"}, Settings: vcs},
			"v1.2.3", "cd5127b0a1", "true", []string{"ledger v1.2.3", "revision  cd5127b0a1 (modified)", "time      2026-11-23T04:55:00Z", "plan9/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := buildVersion(tt.bi)
			if v.Version != tt.version {
				t.Errorf("version %q, want %q", v.Version, tt.version)
			}
			if got := deref(v.Revision); got != tt.revision {
				t.Errorf("revision %q, want %q", got, tt.revision)
			}
			if got := ""; v.Modified != nil {
				got = map[bool]string{true: "true", false: "false"}[*v.Modified]
				if got != tt.modified {
					t.Errorf("modified %q, want %q", got, tt.modified)
				}
			} else if tt.modified != "" {
				t.Errorf("modified null, want %q", tt.modified)
			}
			text := versionText(v)
			for _, want := range tt.text {
				if !strings.Contains(text, want) {
					t.Errorf("text lacks %q:\n%s", want, text)
				}
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestInitIdempotent: init again with the same origin (and key, when one
// is given) exits 0 and changes nothing; another origin or key exits 2
// naming the difference.
func TestInitIdempotent(t *testing.T) {
	work := t.TempDir()
	key1, key2 := filepath.Join(work, "k1"), filepath.Join(work, "k2")
	if err := os.WriteFile(key1, []byte(strings.Repeat("11", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key2, []byte(strings.Repeat("22", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, "l")
	first, _, code := runLedgerEnv(t, nil, nil, "init", "--dir", dir, "--origin", "a.example/log", "--key", key1, "--json")
	var rep initJSON
	if err := json.Unmarshal([]byte(first), &rep); err != nil || code != 0 || !rep.Created {
		t.Fatalf("first init: exit %d, %v: %s", code, err, first)
	}
	pub, _ := os.ReadFile(filepath.Join(dir, "log.pub"))
	tests := []struct {
		name    string
		args    []string
		code    int
		mention string
	}{
		{"same origin and key", []string{"--origin", "a.example/log", "--key", key1}, 0, "already exists with this origin and key"},
		{"same origin, no key", []string{"--origin", "a.example/log"}, 0, "already exists with this origin"},
		{"another origin", []string{"--origin", "b.example/log"}, exitUsage, `origin "a.example/log", not "b.example/log"`},
		{"default origin", nil, exitUsage, `not "ledger.local"`},
		{"another key", []string{"--origin", "a.example/log", "--key", key2}, exitUsage, "another log key"},
		{"another origin and key", []string{"--origin", "c", "--key", key2}, exitUsage, "origin \"a.example/log\", not \"c\" and another log key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"init", "--dir", dir}, tt.args...)
			stdout, stderr, code := runLedgerEnv(t, nil, nil, args...)
			if code != tt.code || !strings.Contains(stdout+stderr, tt.mention) {
				t.Errorf("exit %d (want %d), output %q %q, want it to mention %q", code, tt.code, stdout, stderr, tt.mention)
			}
			if tt.code == exitUsage {
				wantUsageError(t, args, stdout, stderr, code, "")
			}
		})
	}
	again, _, code := runLedgerEnv(t, nil, nil, "init", "--dir", dir, "--origin", "a.example/log", "--json")
	if err := json.Unmarshal([]byte(again), &rep); err != nil || code != 0 || rep.Created || rep.Origin != "a.example/log" {
		t.Errorf("init --json again: exit %d, %v: %s", code, err, again)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "log.pub")); !bytes.Equal(after, pub) || rep.VerifierKey != strings.TrimSpace(string(pub)) {
		t.Errorf("log.pub changed: %q → %q (report %q)", pub, after, rep.VerifierKey)
	}
}

// TestDashMeansStdio: - is standard input or output wherever a file is
// taken: prove -o -, verify-proof - and --doc -, key add-hmac NAME -,
// policy add -, export - | import -, trend --plot -.
func TestDashMeansStdio(t *testing.T) {
	dir := newTestLedger(t)
	work := t.TempDir()
	pub := filepath.Join(dir, "log.pub")
	receipt := "testdata/vectors/vrf/01_tier0_pass.json"
	doc, err := os.ReadFile(filepath.Join("../..", receipt))
	if err != nil {
		t.Fatal(err)
	}
	run := func(stdin []byte, want int, args ...string) string {
		t.Helper()
		stdout, stderr, code := runLedgerEnv(t, stdin, nil, args...)
		if code != want {
			t.Fatalf("ledger %q: exit %d, want %d\n%s%s", args, code, want, stdout, stderr)
		}
		return stdout
	}
	// prove -o - writes what prove writes without -o, and -o FILE the same bytes.
	proofOut := run(nil, 0, "prove", "--dir", dir, "4317e99d-6ddf-45f5-8d9e-f7d2ec99d867", "-o", "-")
	if plain := run(nil, 0, "prove", "--dir", dir, "4317e99d-6ddf-45f5-8d9e-f7d2ec99d867"); plain != proofOut {
		t.Errorf("prove -o - differs from prove")
	}
	pf := filepath.Join(work, "r.proof")
	run(nil, 0, "prove", "--dir", dir, "4317e99d-6ddf-45f5-8d9e-f7d2ec99d867", "-o", pf)
	if b, _ := os.ReadFile(pf); string(b) != proofOut {
		t.Errorf("prove -o FILE differs from prove -o -")
	}
	// verify-proof reads the proof, or the document, from stdin.
	if out := run([]byte(proofOut), 0, "verify-proof", "-", "--key", pub, "--doc", receipt); !strings.HasPrefix(out, "-: OK: event 2") {
		t.Errorf("verify-proof -: %q", out)
	}
	if out := run(doc, 0, "verify-proof", pf, "--key", pub, "--doc", "-"); !strings.Contains(out, "the document matches its digest") {
		t.Errorf("verify-proof --doc -: %q", out)
	}
	run([]byte(`{"other": "document"}`), exitInvalid, "verify-proof", pf, "--key", pub, "--doc", "-")
	// key add-hmac NAME - takes the secret from stdin: the same key as the file.
	secret, err := os.ReadFile("../../testdata/vectors/rvww/hmac_key.txt")
	if err != nil {
		t.Fatal(err)
	}
	if out := run(secret, 0, "key", "add-hmac", "--dir", dir, "ci", "-"); !strings.HasPrefix(out, `registered HMAC key "ci"`) {
		t.Errorf("key add-hmac ci -: %q", out)
	}
	if out := run(nil, 0, "key", "add-hmac", "--dir", dir, "ci", "testdata/vectors/rvww/hmac_key.txt"); !strings.Contains(out, "already registered") {
		t.Errorf("the same key from its file: %q", out)
	}
	run(nil, exitUsage, "key", "add-hmac", "--dir", dir, "empty", "-")
	// policy add - reads the policy from stdin.
	policy, err := os.ReadFile("../../testdata/rvww/policies/custom_read_grep.json")
	if err != nil {
		t.Fatal(err)
	}
	if out := run(policy, 0, "policy", "add", "--dir", dir, "-"); !strings.HasPrefix(out, `registered policy "read-grep-small"`) {
		t.Errorf("policy add -: %q", out)
	}
	run([]byte("not: [a policy"), exitMalformed, "policy", "add", "--dir", dir, "-")
	// export - | import -
	archive := run(nil, 0, "export", "--dir", dir, "-")
	dir2 := filepath.Join(work, "copy")
	if out := run([]byte(archive), 0, "import", "--dir", dir2, "--hmac-key-file", "testdata/vectors/rvww/hmac_key.txt", "-"); !strings.Contains(out, "imported 4 events") {
		t.Errorf("import -: %q", out)
	}
	// trend --plot - writes a PNG instead of the table.
	png := run(nil, 0, "trend", "--dir", dir, "--plot", "-")
	if !strings.HasPrefix(png, "\x89PNG\r\n\x1a\n") {
		t.Errorf("trend --plot - did not write a PNG: %q…", png[:min(len(png), 40)])
	}
}

// jsonKeys lists the keys of the JSON encoding of type t: all of them,
// and those always present (not omitempty).
func jsonKeys(t reflect.Type) (all, always []string) {
	for _, f := range structFields(t) {
		all = append(all, f.name)
		if !f.omitEmpty {
			always = append(always, f.name)
		}
	}
	return all, always
}

// TestJSONOutputs runs every reporting command this package's conventions
// added --json to and checks that each prints one JSON object per line
// with exactly the keys its documented shape (jsonShapes) has.
func TestJSONOutputs(t *testing.T) {
	dir := newTestLedger(t)
	work := t.TempDir()
	pub := filepath.Join(dir, "log.pub")
	pf := filepath.Join(work, "p.proof")
	cf := filepath.Join(work, "c.proof")
	archive := filepath.Join(work, "a.jsonl.zst")
	tests := []struct {
		path  string // the command, for its shape
		stdin string
		code  int
		args  []string
		check func(t *testing.T, v map[string]any)
	}{
		{"init", "", 0, []string{"init", "--dir", filepath.Join(work, "new"), "--origin", "j.example"}, func(t *testing.T, v map[string]any) {
			if v["created"] != true || v["origin"] != "j.example" {
				t.Errorf("%v", v)
			}
		}},
		{"checkpoint", "", 0, []string{"checkpoint", "--dir", dir}, func(t *testing.T, v map[string]any) {
			note, _ := v["note"].(string)
			if v["size"] != 4.0 || v["origin"] != "conventions.test/log" || !strings.HasPrefix(note, "conventions.test/log\n4\n"+v["root"].(string)+"\n\n— conventions.test/log ") {
				t.Errorf("%v", v)
			}
			sigs, _ := v["signatures"].([]any)
			if len(sigs) != 1 || !strings.Contains(v["verifier_key"].(string), sigs[0].(map[string]any)["key_hash"].(string)) {
				t.Errorf("signatures %v do not name the verifier key %v", sigs, v["verifier_key"])
			}
		}},
		{"prove", "", 0, []string{"prove", "--dir", dir, "2", "-o", pf}, func(t *testing.T, v map[string]any) {
			proofText, _ := os.ReadFile(pf)
			leaf, _ := v["leaf"].(map[string]any)
			if v["type"] != "inclusion" || v["seq"] != 2.0 || v["proof"] != string(proofText) || v["file"] != pf || leaf["seq"] != 2.0 || v["size"] != 4.0 {
				t.Errorf("%v", v)
			}
		}},
		{"prove", "", 0, []string{"prove", "--dir", dir, "--consistency", "1", "4", "-o", cf}, func(t *testing.T, v map[string]any) {
			if v["type"] != "consistency" || v["old_size"] != 1.0 || v["size"] != 4.0 || v["seq"] != nil {
				t.Errorf("%v", v)
			}
		}},
		{"verify-proof", "", 0, []string{"verify-proof", pf, "--key", pub, "--doc", "testdata/vectors/vrf/01_tier0_pass.json"}, func(t *testing.T, v map[string]any) {
			if v["ok"] != true || v["seq"] != 2.0 || v["document_checked"] != true || v["error"] != nil || v["type"] != "inclusion" {
				t.Errorf("%v", v)
			}
		}},
		{"verify-proof", "", 0, []string{"verify-proof", cf, "--key", pub}, func(t *testing.T, v map[string]any) {
			if v["ok"] != true || v["old_size"] != 1.0 || v["type"] != "consistency" {
				t.Errorf("%v", v)
			}
		}},
		{"verify-proof", "", exitInvalid, []string{"verify-proof", pf, "--key", pub, "--doc", "testdata/vrf/chain_1.json"}, func(t *testing.T, v map[string]any) {
			if v["ok"] != false || v["error"] == nil || v["seq"] != nil {
				t.Errorf("%v", v)
			}
		}},
		{"verify-proof", "garbage\n", exitMalformed, []string{"verify-proof", "-", "--key", pub}, func(t *testing.T, v map[string]any) {
			if v["ok"] != false || v["file"] != "-" || v["error"] == nil {
				t.Errorf("%v", v)
			}
		}},
		{"key add-hmac", "", 0, []string{"key", "add-hmac", "--dir", dir, "runner", "testdata/vectors/rvww/hmac_key.txt"}, func(t *testing.T, v map[string]any) {
			if v["name"] != "runner" || v["added"] != true || !strings.HasPrefix(v["key_id"].(string), "hmac:") {
				t.Errorf("%v", v)
			}
		}},
		{"key add-hmac", "", 0, []string{"key", "add-hmac", "--dir", dir, "runner", "testdata/vectors/rvww/hmac_key.txt"}, func(t *testing.T, v map[string]any) {
			if v["added"] != false {
				t.Errorf("%v", v)
			}
		}},
		{"policy add", "", 0, []string{"policy", "add", "--dir", dir, "testdata/rvww/policies/custom_read_grep.json"}, func(t *testing.T, v map[string]any) {
			if v["name"] != "read-grep-small" || v["added"] != true || v["source"] != "registered" || v["hash"] != "7cc2a0d5ea562ac8" {
				t.Errorf("%v", v)
			}
		}},
		{"export", "", 0, []string{"export", "--dir", dir, archive}, func(t *testing.T, v map[string]any) {
			if v["events"] != 4.0 || v["file"] != archive {
				t.Errorf("%v", v)
			}
		}},
		{"import", "", 0, []string{"import", "--dir", filepath.Join(work, "imported"), "--hmac-key-file", "testdata/vectors/rvww/hmac_key.txt", archive}, func(t *testing.T, v map[string]any) {
			if v["events"] != 4.0 || v["signer"] != strings.TrimSpace(readFile(t, pub)) {
				t.Errorf("%v", v)
			}
		}},
		{"rebuild", "", 0, []string{"rebuild", "--dir", dir}, func(t *testing.T, v map[string]any) {
			if v["events"] != 4.0 {
				t.Errorf("%v", v)
			}
		}},
		{"audit", "", 0, []string{"audit", "--dir", dir}, func(t *testing.T, v map[string]any) {
			if v["ok"] != true || v["events"] != 4.0 {
				t.Errorf("%v", v)
			}
		}},
		{"version", "", 0, []string{"version"}, nil},
	}
	shapes := jsonShapes()
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:min(3, len(tt.args))], " "), func(t *testing.T) {
			var stdin []byte
			if tt.stdin != "" {
				stdin = []byte(tt.stdin)
			}
			stdout, stderr, code := runLedgerEnv(t, stdin, nil, append(tt.args, "--json")...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, stdout, stderr)
			}
			if strings.Count(stdout, "\n") != 1 {
				t.Fatalf("want one JSON line, got %q", stdout)
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(stdout), &v); err != nil {
				t.Fatalf("%v: %q", err, stdout)
			}
			all, always := jsonKeys(reflect.TypeOf(shapes[tt.path].v))
			for k := range v {
				if !slices.Contains(all, k) {
					t.Errorf("key %q is not in the documented shape %v", k, all)
				}
			}
			for _, k := range always {
				if _, ok := v[k]; !ok {
					t.Errorf("documented key %q missing: %s", k, stdout)
				}
			}
			if tt.check != nil {
				tt.check(t, v)
			}
		})
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJSONShapesComplete: every command with a --json flag has a
// documented shape, and every documented shape belongs to such a command.
func TestJSONShapesComplete(t *testing.T) {
	shapes := jsonShapes()
	withJSON := map[string]bool{}
	for _, dc := range allCommands(newApp(&env{})) {
		for _, f := range dc.cmd.Flags {
			if f.Names()[0] == "json" {
				withJSON[dc.path] = true
			}
		}
	}
	for p := range withJSON {
		if _, ok := shapes[p]; !ok {
			t.Errorf("ledger %s has --json but no shape in jsonShapes (docs/CLI.md)", p)
		}
	}
	for p, sh := range shapes {
		if !withJSON[p] {
			t.Errorf("jsonShapes documents ledger %s, which has no --json flag", p)
		}
		if reflect.TypeOf(sh.v).Kind() != reflect.Struct {
			t.Errorf("shape of %s is not a struct", p)
		}
	}
	// Every command that reports has --json: the commands that do not
	// are named here, with why.
	noJSON := map[string]string{
		"key":        "a group",
		"policy":     "a group",
		"completion": "prints a script",
		"trust":      "a group",
		"run":        "a group",
		"witness":    "a group",
		"freshness":  "a group",
	}
	for p := range commandPaths(t) {
		if !withJSON[p] && noJSON[p] == "" {
			t.Errorf("ledger %s has no --json", p)
		}
	}
}

// TestPanicIsOneLine: a panic in a command is one line on stderr and exit
// code 1; with --verbose (or LEDGER_VERBOSE) the stack follows.
func TestPanicIsOneLine(t *testing.T) {
	withPanic := func(e *env) *cli.App {
		app := newApp(e)
		app.Commands = append(app.Commands, &cli.Command{Name: "boom", Action: func(*cli.Context) error {
			panic("the value\nof the panic")
		}})
		return app
	}
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		wantStack bool
	}{
		{"quiet", []string{"ledger", "boom"}, nil, false},
		{"--verbose", []string{"ledger", "--verbose", "boom"}, nil, true},
		{"--verbose after the command", []string{"ledger", "boom", "--verbose"}, nil, true},
		{"LEDGER_VERBOSE", []string{"ledger", "boom"}, map[string]string{envVerbose: "1"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr,
				getenv: func(k string) string { return tt.env[k] }}
			code := runGuarded(context.Background(), tt.args, e, withPanic)
			if code != exitInternal {
				t.Errorf("exit %d, want %d", code, exitInternal)
			}
			first, rest, _ := strings.Cut(stderr.String(), "\n")
			if first != "ledger: internal error: the value of the panic (run with --verbose for details)" {
				t.Errorf("first line %q", first)
			}
			if hasStack := strings.Contains(rest, "goroutine ") && strings.Contains(rest, "panic"); hasStack != tt.wantStack {
				t.Errorf("stack shown %v, want %v:\n%s", hasStack, tt.wantStack, rest)
			}
			if !tt.wantStack && rest != "" {
				t.Errorf("more than one line: %q", stderr.String())
			}
		})
	}
}

// TestGlobalFlagsAndEnvironment: global flags work after the command
// too, and each has its LEDGER_* variable.
func TestGlobalFlagsAndEnvironment(t *testing.T) {
	dir := newTestLedger(t)
	tests := []struct {
		name    string
		env     []string
		args    []string
		verbose bool
	}{
		{"quiet", nil, []string{"log", "--dir", dir}, false},
		{"--verbose before", nil, []string{"--verbose", "log", "--dir", dir}, true},
		{"--verbose after", nil, []string{"log", "--dir", dir, "--verbose"}, true},
		{"LEDGER_VERBOSE=1", []string{"LEDGER_VERBOSE=1"}, []string{"log", "--dir", dir}, true},
		{"LEDGER_VERBOSE=false", []string{"LEDGER_VERBOSE=false"}, []string{"log", "--dir", dir}, false},
		{"LEDGER_NO_PROGRESS=1", []string{"LEDGER_NO_PROGRESS=1"}, []string{"audit", "--dir", dir, "--no-progress"}, false},
		{"LEDGER_DIR", []string{"LEDGER_DIR=" + dir}, []string{"log"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runLedgerEnv(t, nil, tt.env, tt.args...)
			if code != 0 || stdout == "" {
				t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
			}
			if got := strings.Contains(stderr, "component=pebble"); got != tt.verbose {
				t.Errorf("verbose logging %v, want %v: %q", got, tt.verbose, stderr)
			}
			if !tt.verbose && stderr != "" {
				t.Errorf("stderr: %q", stderr)
			}
		})
	}
}

// TestInterspersedGlobals checks the argument rewriting of global flags
// given after a command.
func TestInterspersedGlobals(t *testing.T) {
	app := newApp(&env{})
	tests := []struct{ in, want string }{
		{"ledger audit --verbose", "ledger --verbose audit"},
		{"ledger --no-progress audit --verbose --json", "ledger --no-progress --verbose audit --json"},
		{"ledger get 3 --raw --verbose", "ledger --verbose get --raw 3"},
		{"ledger key add-hmac n f --verbose --dir d", "ledger --verbose key add-hmac --dir d n f"},
		{"ledger log -- --verbose", "ledger log -- --verbose"},
		{"ledger help key add-hmac", "ledger key add-hmac --help"},
		{"ledger --verbose help log", "ledger --verbose log --help"},
	}
	for _, tt := range tests {
		got := strings.Join(interspersed(app, helpArgs(app, strings.Fields(tt.in))), " ")
		if got != tt.want {
			t.Errorf("%q → %q, want %q", tt.in, got, tt.want)
		}
	}
}
