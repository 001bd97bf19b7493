package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the test reads the master, the
// command writes to the slave, which is a terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		_ = m.Close()
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		_ = m.Close()
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		_ = m.Close()
		t.Skipf("open the pty's slave: %v", err)
	}
	return m, s
}

// runOnTerminal runs the binary with stdout and stderr on one terminal
// (or only stderr, when stdoutPipe) and returns what the terminal showed
// and what went to the stdout pipe.
func runOnTerminal(t *testing.T, env []string, stdoutPipe bool, args ...string) (terminal, stdout string, code int) {
	t.Helper()
	master, slave := openPTY(t)
	defer func() { _ = master.Close() }()
	cmd := exec.Command(ledgerBin, args...)
	cmd.Dir = "../.."
	cmd.Env = append(cleanEnv(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = slave, slave
	if stdoutPipe {
		cmd.Stdout = &out
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = slave.Close() // the child has it; the master reads EIO once the child is gone
	var term bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(&term, master) // ends with EIO when the child exits
	}()
	err := cmd.Wait()
	<-done
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return term.String(), out.String(), code
}

// cleanEnv is the environment without LEDGER_* settings, NO_COLOR and TERM.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEDGER_") && !strings.HasPrefix(kv, "NO_COLOR=") && !strings.HasPrefix(kv, "TERM=") {
			env = append(env, kv)
		}
	}
	return env
}

const (
	green   = "\x1b[32m"
	boldRed = "\x1b[1;31m"
)

// TestTerminalOutput: progress bars and colour appear on a terminal only,
// and NO_COLOR, TERM=dumb, --no-progress and LEDGER_NO_PROGRESS turn them
// off; on pipes (every other test) stderr stays empty.
func TestTerminalOutput(t *testing.T) {
	dir := newTestLedger(t)
	work := t.TempDir()
	// A ledger whose scorecard fails: a failed bundle halves the solve rate.
	failing := newTestLedger(t)
	if out, stderr, code := runLedgerEnv(t, nil, nil, "append", "--dir", failing, "--hmac-key-file", "testdata/vectors/rvww/hmac_key.txt",
		"testdata/rvww/valid_failed_approved_signed.rvww"); code != 0 {
		t.Fatalf("append: %s%s", out, stderr)
	}
	proofFile := filepath.Join(work, "p.proof")
	if _, stderr, code := runLedgerEnv(t, nil, nil, "prove", "--dir", dir, "0", "-o", proofFile); code != 0 {
		t.Fatalf("prove: %s", stderr)
	}
	tests := []struct {
		name       string
		env        []string
		args       []string
		stdoutPipe bool
		code       int
		colour     string // a colour sequence that must appear ("" none may)
		bar        string // the bar's description that must appear ("" no bar)
	}{
		{"audit colour and bar", []string{"TERM=xterm"}, []string{"audit", "--dir", dir}, false, 0, green, "audit"},
		{"audit NO_COLOR", []string{"TERM=xterm", "NO_COLOR=1"}, []string{"audit", "--dir", dir}, false, 0, "", "audit"},
		{"audit TERM=dumb", []string{"TERM=dumb"}, []string{"audit", "--dir", dir}, false, 0, "", "audit"},
		{"audit --no-progress", []string{"TERM=xterm"}, []string{"audit", "--dir", dir, "--no-progress"}, false, 0, green, ""},
		{"audit LEDGER_NO_PROGRESS", []string{"TERM=xterm", "LEDGER_NO_PROGRESS=1"}, []string{"audit", "--dir", dir}, false, 0, green, ""},
		{"audit --json: no colour", []string{"TERM=xterm"}, []string{"audit", "--dir", dir, "--json"}, false, 0, "", "audit"},
		{"scorecard NOT MET", []string{"TERM=xterm"}, []string{"scorecard", "--dir", failing}, false, exitNotAccepted, boldRed + "NOT MET", ""},
		{"rebuild bar", []string{"TERM=xterm"}, []string{"rebuild", "--dir", dir}, false, 0, "", "rebuild"},
		{"rebuild --quiet", []string{"TERM=xterm"}, []string{"rebuild", "--dir", dir, "--quiet"}, false, 0, "", ""},
		{"append bar", []string{"TERM=xterm"}, []string{"append", "--dir", dir, "testdata/vrf/chain_3.json"}, false, 0, "", "append"},
		{"export bar, stdout piped", []string{"TERM=xterm"}, []string{"export", "--dir", dir, filepath.Join(work, "a.zst")}, true, 0, "", "export"},
		{"import bar", []string{"TERM=xterm"}, []string{"import", "--dir", filepath.Join(work, "b"), "--hmac-key-file", "testdata/vectors/rvww/hmac_key.txt", filepath.Join(work, "a.zst")}, false, 0, "", "import"},
		{"scorecard met, stdout piped: no colour", []string{"TERM=xterm"}, []string{"scorecard", "--dir", dir}, true, 0, "", ""},
		{"verify-proof OK", []string{"TERM=xterm"}, []string{"verify-proof", proofFile, "--key", filepath.Join(dir, "log.pub")}, false, 0, green + "OK", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term, stdout, code := runOnTerminal(t, tt.env, tt.stdoutPipe, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%q", code, tt.code, term)
			}
			all := term + stdout
			if tt.colour != "" && !strings.Contains(all, tt.colour) {
				t.Errorf("no colour %q in %q", tt.colour, all)
			}
			if tt.colour == "" && (strings.Contains(all, green) || strings.Contains(all, boldRed)) {
				t.Errorf("colour where there must be none: %q", all)
			}
			hasBar := strings.Contains(term, "|") && strings.Contains(term, "%")
			if tt.bar != "" && (!hasBar || !strings.Contains(term, tt.bar)) {
				t.Errorf("no %s progress bar on the terminal: %q", tt.bar, term)
			}
			if tt.bar == "" && hasBar {
				t.Errorf("a progress bar where there must be none: %q", term)
			}
			if strings.Contains(stdout, "\x1b") {
				t.Errorf("escape sequences on the stdout pipe: %q", stdout)
			}
		})
	}
}

func TestColourAllowed(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{"TERM": "xterm-256color"}, true},
		{map[string]string{}, true},
		{map[string]string{"NO_COLOR": "1"}, false},
		{map[string]string{"NO_COLOR": "false"}, false}, // any non-empty value
		{map[string]string{"NO_COLOR": ""}, true},
		{map[string]string{"TERM": "dumb"}, false},
	}
	for _, tt := range tests {
		if got := colourAllowed(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("%v: colourAllowed %v, want %v", tt.env, got, tt.want)
		}
	}
	// Not a terminal: plain whatever the environment says.
	e := &env{getenv: func(string) string { return "" }}
	if p := e.painter(&bytes.Buffer{}); p.paint(toneGood, "met") != "met" {
		t.Error("colour on a buffer")
	}
	if got := (painter{on: true}).paint(toneBad, "NOT MET"); got != boldRed+"NOT MET\x1b[0m" {
		t.Errorf("paint: %q", got)
	}
}

func TestVisibleWidth(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{
		{"", 0},
		{"met", 3},
		{"\x1b[32mmet\x1b[0m", 3},
		{"\x1b[1;31mNOT MET\x1b[0m (x)", 11},
		{"café → ok", 9},
		{"\x1b[", 0},
	}
	for _, tt := range tests {
		if got := visibleWidth(tt.s); got != tt.want {
			t.Errorf("visibleWidth(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
	// A coloured cell pads like a plain one.
	var plain, coloured bytes.Buffer
	printTable(&plain, "", nil, [][]string{{"a", "met", "x"}, {"bb", "NOT MET", "y"}}, nil)
	printTable(&coloured, "", nil, [][]string{{"a", painter{on: true}.paint(toneGood, "met"), "x"}, {"bb", painter{on: true}.paint(toneBad, "NOT MET"), "y"}}, nil)
	stripped := strings.NewReplacer(green, "", boldRed, "", "\x1b[0m", "").Replace(coloured.String())
	if stripped != plain.String() {
		t.Errorf("coloured table aligns differently:\n%s\n%s", plain.String(), stripped)
	}
}

// TestEventCounter: the export progress counts the lines of a zstd
// stream it sees in pieces, and never blocks or fails the writer.
func TestEventCounter(t *testing.T) {
	var raw bytes.Buffer
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&raw, "{\"seq\":%d,\"data\":\"%s\"}\n", i, strings.Repeat("x", i%300))
	}
	var compressed bytes.Buffer
	zw, err := zstd.NewWriter(&compressed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	var last int64
	c := newEventCounter(func(n int64) { last = n })
	data := compressed.Bytes()
	for len(data) > 0 {
		n := min(len(data), 777)
		if w, err := c.Write(data[:n]); w != n || err != nil {
			t.Fatalf("write: %d, %v", w, err)
		}
		data = data[n:]
	}
	c.close()
	if last != 5000 {
		t.Errorf("counted %d lines, want 5000", last)
	}
	// Garbage: the count stops, the writes go on.
	g := newEventCounter(func(int64) {})
	for i := 0; i < 100; i++ {
		if _, err := g.Write(bytes.Repeat([]byte{0xff}, 4096)); err != nil {
			t.Fatalf("write garbage: %v", err)
		}
	}
	g.close()
}
