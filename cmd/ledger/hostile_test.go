package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proofledger/ledger/verifier/sandbox"
)

// hostileCase is one piece of hostile code submitted as a tier-0 python
// request: code, the test's input and expected_output, its timeout, the
// statuses the reference would name for what it does when confined, and
// a text the detail's error must hold.
type hostileCase struct {
	name, code, input, expected string
	timeoutMS                   int
	statuses                    []string
	errorHas                    string
}

// TestHostileRequests submits hostile code through `ledger run vrf`, the
// real binary, in the sandbox: a fork bomb, an endless loop in many
// threads, a memory hog, a huge file, a connection to a listener on the
// host's loopback, a read of the ledger's log key by its absolute path,
// writes outside the working directory, and a child process left behind.
// Each ends within its limits with a truthful signed receipt; the host is
// unchanged (the listener sees no connection, the paths stay absent, the
// log key is the same, no process outlives the run); and the ledger keeps
// working: a normal request is appended afterwards and the ledger audits
// clean.
func TestHostileRequests(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("skipping: the kernel refuses user namespaces (%v); submitted code runs only in the sandbox", err)
	}
	requirePython(t)
	dir := newRunLedger(t)
	absDir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	logKey := filepath.Join(absDir, "log.key")
	keyBefore, err := os.ReadFile(logKey)
	if err != nil {
		t.Fatal(err)
	}

	// The host's side: a listener on the loopback that must see nothing,
	// paths that must stay absent, and markers no process may carry after
	// the run.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }() // the test is over; a close error changes nothing
	var connected atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connected.Add(1)
			_ = c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	tmpEscape := filepath.Join(t.TempDir(), "escape", "written.txt") // the host's /tmp: the sandbox has its own
	workEscape, err := filepath.Abs(filepath.Join("testdata", ".hostile-escape-"+token(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(workEscape) }) // only if the sandbox failed
	// A checkout under /tmp (CI's clean clone may be one) puts workEscape
	// where the sandbox mounts its own private /tmp: the write succeeds in
	// the box and must leave the host unchanged (checked below), like
	// write_tmp. Anywhere else the path is outside the box's writable
	// directories and the write fails.
	hostWriteStatuses, hostWriteError := []string{"error"}, "Read-only file system"
	if strings.HasPrefix(workEscape, "/tmp/") {
		hostWriteStatuses, hostWriteError = []string{"pass"}, ""
	}
	bombName, spinName, childMark := token(t), token(t), "ledger-hostile-"+token(t)
	setName := func(name string) string {
		// prctl(PR_SET_NAME): the host sees the name as /proc/<pid>/comm,
		// and forked children inherit it.
		return fmt.Sprintf("import ctypes\nctypes.CDLL(None).prctl(15, b%q, 0, 0, 0)\n", name)
	}

	cases := []hostileCase{
		{name: "fork_bomb", timeoutMS: 3000, statuses: []string{"timeout"}, errorHas: "Exceeded 3.0s",
			code:  setName(bombName) + "import os\ndef bomb():\n    while True:\n        try:\n            os.fork()\n        except OSError:\n            pass\n",
			input: "bomb()", expected: "None"},
		{name: "spin_threads", timeoutMS: 2000, statuses: []string{"timeout"}, errorHas: "Exceeded 2.0s",
			code: setName(spinName) + "import threading\ndef spin():\n    while True:\n        pass\n" +
				"def many():\n    for _ in range(32):\n        threading.Thread(target=spin, daemon=True).start()\n    spin()\n",
			input: "many()", expected: "None"},
		// RLIMIT_DATA refuses the allocation past the sandbox's 512 MiB.
		{name: "memory_hog", timeoutMS: 10000, statuses: []string{"error"}, errorHas: "refused after 4", // 448 MiB or more
			code: "def hog():\n    chunks = []\n    try:\n        while True:\n            chunks.append(bytearray(64 << 20))\n" +
				"    except MemoryError:\n        raise MemoryError('refused after %d MiB' % (64 * len(chunks)))\n",
			input: "hog()", expected: "None"},
		{name: "huge_file", timeoutMS: 10000, statuses: []string{"error"}, errorHas: "File too large",
			code:  "def fill():\n    chunk = b'x' * (1 << 20)\n    with open('big.bin', 'wb') as f:\n        while True:\n            f.write(chunk)\n",
			input: "fill()", expected: "None"},
		{name: "loopback", timeoutMS: 10000, statuses: []string{"fail"}, errorHas: "got 'refused'",
			code: fmt.Sprintf("import socket\ndef connect():\n    try:\n        socket.create_connection(('127.0.0.1', %d), timeout=2).close()\n"+
				"        return 'connected'\n    except OSError:\n        return 'refused'\n", port),
			input: "connect()", expected: "'connected'"},
		{name: "read_log_key", timeoutMS: 10000, statuses: []string{"error"}, errorHas: "No such file or directory",
			code:  fmt.Sprintf("def steal():\n    with open(%q) as f:\n        return f.read()\n", logKey),
			input: "len(steal()) > 0", expected: "True"},
		// Its own /tmp is private: the write succeeds there, and the host's
		// path stays absent.
		{name: "write_tmp", timeoutMS: 10000, statuses: []string{"pass"},
			code: fmt.Sprintf("import os\ndef escape():\n    os.makedirs(%q, exist_ok=True)\n    with open(%q, 'w') as f:\n        f.write('x')\n    return 'written'\n",
				filepath.Dir(tmpEscape), tmpEscape),
			input: "escape()", expected: "'written'"},
		{name: "write_host", timeoutMS: 10000, statuses: hostWriteStatuses, errorHas: hostWriteError,
			code: fmt.Sprintf("import os\ndef escape():\n    os.makedirs(%q, exist_ok=True)\n    with open(%q, 'w') as f:\n        f.write('x')\n    return 'written'\n",
				workEscape, filepath.Join(workEscape, "written.txt")),
			input: "escape()", expected: "'written'"},
		{name: "write_usr", timeoutMS: 10000, statuses: []string{"error"}, errorHas: "Read-only file system",
			code:  "def escape():\n    with open('/usr/ledger-escape.txt', 'w') as f:\n        f.write('x')\n",
			input: "escape()", expected: "None"},
		{name: "leftover_child", timeoutMS: 10000, statuses: []string{"pass"},
			code: fmt.Sprintf("import subprocess, sys\ndef spawn():\n    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', %q],\n"+
				"        start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n    return 'spawned'\n", childMark),
			input: "spawn()", expected: "'spawned'"},
	}
	var files []string
	reqDir := t.TempDir()
	for _, c := range cases {
		body, err := json.Marshal(map[string]any{
			"tier":   0,
			"output": map[string]any{"content": c.code},
			"verification": map[string]any{"test_suite": map[string]any{"tests": []any{
				map[string]any{"name": c.name, "input": c.input, "expected_output": c.expected, "timeout_ms": c.timeoutMS},
			}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(reqDir, c.name+".json")
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}

	out, stderr, code := runLedgerGuarded(t, append([]string{"run", "vrf", "--dir", dir, "--json"}, files...)...)
	if code != 0 {
		t.Fatalf("run vrf: exit %d\n%s%s", code, out, stderr)
	}
	lines := parseRunLines(t, out)
	if len(lines) != len(cases) {
		t.Fatalf("%d lines for %d requests:\n%s", len(lines), len(cases), out)
	}
	for i, c := range cases {
		l := lines[i]
		if l.Status != "appended" {
			t.Errorf("%s: %s (%s)", c.name, l.Status, l.Reason)
			continue
		}
		var r struct {
			Verdict string `json:"verdict"`
			Results struct {
				Details []struct{ Name, Status, Error string } `json:"details"`
			} `json:"results"`
			Metadata struct {
				Sandboxed bool   `json:"sandboxed"`
				Sandbox   string `json:"sandbox"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(l.Receipt, &r); err != nil {
			t.Fatal(err)
		}
		d := r.Results.Details[0]
		ok := false
		for _, s := range c.statuses {
			ok = ok || d.Status == s
		}
		if !ok || !strings.Contains(d.Error, c.errorHas) {
			t.Errorf("%s: status %s, error %q; want status %v and an error holding %q", c.name, d.Status, clipText(d.Error, 300), c.statuses, c.errorHas)
		}
		if !r.Metadata.Sandboxed || !strings.HasPrefix(r.Metadata.Sandbox, "linux-namespaces(") {
			t.Errorf("%s: sandboxed %v, sandbox %q", c.name, r.Metadata.Sandboxed, r.Metadata.Sandbox)
		}
	}
	checkStored(t, dir, lines)

	// Nothing on the host changed.
	if n := connected.Load(); n != 0 {
		t.Errorf("the host's loopback listener accepted %d connections", n)
	}
	for _, p := range []string{tmpEscape, filepath.Dir(tmpEscape), workEscape} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists on the host (%v)", p, err)
		}
	}
	if _, err := os.Lstat("/usr/ledger-escape.txt"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("/usr/ledger-escape.txt exists on the host (%v)", err)
	}
	if keyAfter, err := os.ReadFile(logKey); err != nil || !bytes.Equal(keyAfter, keyBefore) {
		t.Errorf("the log key changed (%v)", err)
	}
	// No process outlives the run: the run has ended, so the kernel has
	// killed every process of its sandboxes; give their reaping a moment.
	for _, mark := range []string{bombName, spinName, childMark} {
		if pids := waitGone(mark, 5*time.Second); len(pids) > 0 {
			t.Errorf("processes marked %s outlived the run: %v", mark, pids)
		}
	}

	// The ledger keeps working.
	out, stderr, code = runLedgerGuarded(t, "run", "vrf", "--dir", dir, "--json", "testdata/run/tier0_sort.json")
	lines = parseRunLines(t, out)
	if code != 0 || len(lines) != 1 || lines[0].Status != "appended" || receiptOf(t, lines[0]).Verdict != "pass" {
		t.Errorf("a normal request afterwards: exit %d\n%s%s", code, out, stderr)
	}
	if o, stderr, code := runLedger(t, nil, "audit", "--dir", dir); code != 0 {
		t.Errorf("audit: exit %d\n%s%s", code, o, stderr)
	}
}

// runLedgerGuarded runs the binary as runLedger does, killed after five
// minutes: a hang guard, not a measurement.
func runLedgerGuarded(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ledgerBin, args...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "LEDGER_DIR=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("ledger %v did not end: killed\n%s%s", args, out.String(), errb.String())
	}
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// token returns a short random name (it fits a process's 15-byte comm).
func token(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "hx" + hex.EncodeToString(b)
}

// waitGone waits up to d for every host process whose name (comm) or
// command line holds mark to be gone, and returns those still there.
func waitGone(mark string, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		pids := processesMarked(mark)
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func processesMarked(mark string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.TrimSpace(string(comm)) == mark || bytes.Contains(cmdline, []byte(mark)) {
			out = append(out, e.Name())
		}
	}
	return out
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
