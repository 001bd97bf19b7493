package sandbox

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
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	python = "/usr/bin/python3"
	sh     = "/bin/sh"
	node   = "/usr/bin/node"
)

// newRunner returns a Runner, skipping the test where the kernel refuses
// namespaces.
func newRunner(tb testing.TB, cfg Config) *Runner {
	tb.Helper()
	r, err := New(cfg)
	if errors.Is(err, ErrUnavailable) {
		tb.Skipf("sandbox unavailable on this machine: %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := r.Close(); err != nil {
			tb.Error(err)
		}
	})
	return r
}

func skipUnlessAvailable(tb testing.TB) {
	tb.Helper()
	if err := Available(); errors.Is(err, ErrUnavailable) {
		tb.Skipf("sandbox unavailable on this machine: %v", err)
	} else if err != nil {
		tb.Fatal(err)
	}
}

// token returns a string unique to this test run, to find processes and
// files the sandboxed code might leave behind.
func token(tb testing.TB) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return "ledgertok" + hex.EncodeToString(b)
}

// hostProcessesWith lists the host processes whose command line contains s.
func hostProcessesWith(tb testing.TB, s string) []string {
	tb.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		tb.Fatal(err)
	}
	var found []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(s)) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// assertNoLeftovers fails if any host process still carries tok.
func assertNoLeftovers(tb testing.TB, tok string) {
	tb.Helper()
	if left := hostProcessesWith(tb, tok); len(left) > 0 {
		tb.Errorf("processes outlived the run: %q", left)
	}
}

func run(tb testing.TB, r *Runner, c Cmd) Result {
	tb.Helper()
	res, err := r.Run(context.Background(), c)
	if err != nil {
		tb.Fatalf("Run: %v (result %+v)", err, res)
	}
	return res
}

// show formats a Result for failure messages.
func show(res Result) string {
	return fmt.Sprintf("exit=%d signal=%q timedOut=%v cpuLimit=%v memLimit=%v fsizeLimit=%v wall=%v cpu=%v\nstdout: %.2000s\nstderr: %.2000s\nreport: %.2000s",
		res.ExitCode, res.Signal, res.TimedOut, res.CPULimit, res.MemoryLimit, res.FileSizeLimit, res.Wall, res.CPU, res.Stdout, res.Stderr, res.Report)
}

// pyReport runs Python code whose json.dump to fd 3 comes back decoded
// into out.
func pyReport(tb testing.TB, r *Runner, code string, lim Limits, out any, args ...string) Result {
	tb.Helper()
	prelude := "import json, os, sys\nrep = os.fdopen(3, 'w')\n"
	res := run(tb, r, Cmd{Path: python, Args: append([]string{"-c", prelude + code}, args...), Report: true, Limits: lim})
	if err := json.Unmarshal(res.Report, out); err != nil {
		tb.Fatalf("report %q: %v\n%s", res.Report, err, show(res))
	}
	return res
}

func TestForkBomb(t *testing.T) {
	r := newRunner(t, Config{})
	tok := token(t)
	lim := Limits{Procs: 32, Wall: 3 * time.Second, CPUTime: 10 * time.Second}
	// The shell classic: the command itself returns as soon as its first
	// pipeline is in the background; the bomb goes on below it and must
	// die with the run.
	run(t, r, Cmd{Path: sh, Args: []string{"-c", "b() { b | b & }; b; wait", tok}, Limits: lim})
	assertNoLeftovers(t, tok)

	// This one ignores failed forks and never ends by itself: RLIMIT_NPROC
	// keeps it at 32 processes and the wall clock ends it.
	res := run(t, r, Cmd{Path: python, Args: []string{"-c", `
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
`, tok}, Limits: lim})
	if !res.TimedOut || res.Signal != "SIGKILL" || res.CPULimit {
		t.Errorf("python fork bomb: want a wall-clock timeout\n%s", show(res))
	}
	assertNoLeftovers(t, tok)

	// How many processes can it get? At most Procs, the exec'd command
	// included.
	var got struct{ Children int }
	res = pyReport(t, r, `
import time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(1000)
            os._exit(0)
        n += 1
except OSError:
    pass
json.dump({"Children": n}, rep)
`, lim, &got, tok)
	if res.ExitCode != 0 || got.Children < 1 || got.Children >= lim.Procs {
		t.Errorf("forked %d children with Procs=%d, want 1..%d\n%s", got.Children, lim.Procs, lim.Procs-1, show(res))
	}
	assertNoLeftovers(t, tok)
}

func TestCPULimit(t *testing.T) {
	r := newRunner(t, Config{})
	tok := token(t)
	// The wall-clock limit is generous so that a loaded machine still
	// reaches the CPU limit first.
	lim := Limits{CPUTime: time.Second, Wall: 120 * time.Second}
	for _, tc := range []struct {
		name string
		cmd  Cmd
	}{
		// Threads of one process share its RLIMIT_CPU.
		{"threads", Cmd{Path: python, Args: []string{"-c", `
import threading
def spin():
    while True:
        pass
for _ in range(8):
    threading.Thread(target=spin).start()
`, tok}}},
		// Separate processes each stay below RLIMIT_CPU; the supervisor
		// sums them.
		{"processes", Cmd{Path: sh, Args: []string{"-c", "for i in 1 2 3 4; do (while :; do :; done) & done; wait", tok}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cmd.Limits = lim
			res := run(t, r, tc.cmd)
			if !res.CPULimit || res.TimedOut || res.ExitCode != -1 || res.Signal == "" {
				t.Errorf("want a kill by the CPU limit\n%s", show(res))
			}
			// RLIMIT_CPU is checked on timer ticks, and rusage is sampled
			// differently: allow a quarter below the limit.
			if res.CPU < lim.CPUTime*3/4 {
				t.Errorf("CPU %v is well below the limit %v that ended the run", res.CPU, lim.CPUTime)
			}
			assertNoLeftovers(t, tok)
		})
	}
}

func TestWallTimeout(t *testing.T) {
	r := newRunner(t, Config{})
	tok := token(t)
	res := run(t, r, Cmd{Path: sh, Args: []string{"-c", "sleep 1000", tok}, Limits: Limits{Wall: 500 * time.Millisecond}})
	if !res.TimedOut || res.CPULimit || res.ExitCode != -1 || res.Signal != "SIGKILL" {
		t.Errorf("want a wall-clock timeout only\n%s", show(res))
	}
	if res.Wall < 500*time.Millisecond {
		t.Errorf("wall %v is below the limit that ended the run", res.Wall)
	}
	assertNoLeftovers(t, tok)

	// The CPU time of what the timeout killed is counted: a child burns
	// 200 ms of CPU, says so, and sleeps until the wall clock ends the run.
	res = run(t, r, Cmd{Path: python, Args: []string{"-c", `
import os, time
if os.fork() == 0:
    while time.process_time() < 0.2:
        pass
    os.write(3, b"spun")
time.sleep(1000)
`, tok}, Report: true, Limits: Limits{Wall: 5 * time.Second}})
	if !res.TimedOut {
		t.Errorf("want a wall-clock timeout\n%s", show(res))
	}
	if string(res.Report) != "spun" {
		t.Logf("the machine was too loaded for the child to burn 200 ms of CPU in 5 s; CPU not checked")
	} else if res.CPU < 200*time.Millisecond {
		t.Errorf("CPU %v does not count the killed child's 200 ms", res.CPU)
	}
	assertNoLeftovers(t, tok)
}

func TestMemoryLimit(t *testing.T) {
	r := newRunner(t, Config{})
	tok := token(t)
	lim := Limits{Memory: 128 << 20, Wall: 60 * time.Second}
	t.Run("one process", func(t *testing.T) {
		// RLIMIT_DATA refuses the allocation; only the process is told.
		res := run(t, r, Cmd{Path: python, Args: []string{"-c", "x = bytearray(1 << 30)", tok}, Limits: lim})
		if res.ExitCode != 1 || !bytes.Contains(res.Stderr, []byte("MemoryError")) || res.MemoryLimit || res.TimedOut {
			t.Errorf("want MemoryError and exit 1\n%s", show(res))
		}
		assertNoLeftovers(t, tok)
	})
	t.Run("many processes", func(t *testing.T) {
		// Each child stays below RLIMIT_DATA; together they pass Memory
		// and the supervisor kills the sandbox.
		res := run(t, r, Cmd{Path: python, Args: []string{"-c", `
import os, time
for _ in range(4):
    if os.fork() == 0:
        x = b"\x01" * (100 << 20)
        time.sleep(1000)
time.sleep(1000)
`, tok}, Limits: lim})
		if !res.MemoryLimit || res.TimedOut || res.Signal != "SIGKILL" {
			t.Errorf("want a kill by the memory limit\n%s", show(res))
		}
		assertNoLeftovers(t, tok)
	})
	if _, err := os.Stat(node); err == nil {
		t.Run("node", func(t *testing.T) {
			res := run(t, r, Cmd{Path: node, Args: []string{"-e", "const a = []; for (;;) a.push(new Array(1e6).fill(1))", tok}, Limits: lim})
			if res.ExitCode == 0 || res.TimedOut {
				t.Errorf("node memory hog: want it to die of its heap limit\n%s", show(res))
			}
			assertNoLeftovers(t, tok)
		})
	}
}

func TestFileSizeLimit(t *testing.T) {
	r := newRunner(t, Config{})
	tok := token(t)
	lim := Limits{FileSize: 1 << 20, Disk: 8 << 20}
	before := hostTmpNames(t)
	t.Run("sh", func(t *testing.T) {
		res := run(t, r, Cmd{Path: sh, Args: []string{"-c", "exec head -c 100000000 /dev/zero > " + tok, tok}, Limits: lim})
		if !res.FileSizeLimit || res.Signal != "SIGXFSZ" {
			t.Errorf("want a SIGXFSZ death\n%s", show(res))
		}
	})
	t.Run("python", func(t *testing.T) {
		// CPython ignores SIGXFSZ and gets EFBIG; the file stops at the
		// limit.
		var got struct{ Err string }
		res := pyReport(t, r, `
try:
    with open(sys.argv[1], "wb") as f:
        f.write(bytes(100 << 20))
    err = ""
except OSError as e:
    err = "%s %d" % (e.strerror, os.path.getsize(sys.argv[1]))
json.dump({"Err": err}, rep)
`, lim, &got, tok)
		if got.Err != fmt.Sprintf("File too large %d", lim.FileSize) || res.ExitCode != 0 {
			t.Errorf("got %q, want EFBIG at %d bytes\n%s", got.Err, lim.FileSize, show(res))
		}
	})
	t.Run("disk", func(t *testing.T) {
		// Many files below the size limit fill the tmpfs, not the host.
		var got struct{ Err string }
		res := pyReport(t, r, `
err = ""
try:
    for i in range(100):
        with open("%s.%d" % (sys.argv[1], i), "wb") as f:
            f.write(bytes(1 << 20))
except OSError as e:
    err = e.strerror
json.dump({"Err": err}, rep)
`, lim, &got, tok)
		if got.Err != "No space left on device" {
			t.Errorf("got %q, want ENOSPC\n%s", got.Err, show(res))
		}
	})
	if after := hostTmpNames(t); len(after) != len(before) {
		for name := range after {
			if strings.Contains(name, tok) {
				t.Errorf("file %s appeared in the host's temporary directory", name)
			}
		}
	}
	assertNoLeftovers(t, tok)
}

// hostTmpNames lists the host's temporary directory.
func hostTmpNames(tb testing.TB) map[string]bool {
	ents, err := os.ReadDir(os.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	m := make(map[string]bool)
	for _, e := range ents {
		m[e.Name()] = true
	}
	return m
}

func TestNoNetwork(t *testing.T) {
	r := newRunner(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }() // a listener: nothing to lose
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	var got struct {
		Interfaces []string
		Connect    map[string]string
	}
	res := pyReport(t, r, `
import socket
out = {"Interfaces": [n for _, n in socket.if_nameindex()], "Connect": {}}
for host in ["127.0.0.1", "localhost", "::1"]:
    try:
        socket.create_connection((host, int(sys.argv[1])), timeout=5).close()
        out["Connect"][host] = "connected"
    except OSError as e:
        out["Connect"][host] = type(e).__name__
json.dump(out, rep)
`, Limits{}, &got, port)
	if strings.Join(got.Interfaces, ",") != "lo" {
		t.Errorf("interfaces %q, want only lo\n%s", got.Interfaces, show(res))
	}
	for host, outcome := range got.Connect {
		if outcome != "ConnectionRefusedError" {
			t.Errorf("connect to %s:%s from the sandbox: %s, want ConnectionRefusedError", host, port, outcome)
		}
	}
	if len(got.Connect) != 3 {
		t.Errorf("connect results %v", got.Connect)
	}
	// Nothing reached the host's listener.
	if err := ln.(*net.TCPListener).SetDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if c, err := ln.Accept(); err == nil {
		_ = c.Close() // the test fails anyway
		t.Error("the host's listener accepted a connection from the sandbox")
	}
}

func TestHostFilesInvisible(t *testing.T) {
	r := newRunner(t, Config{})
	tok := token(t)
	secretDir := t.TempDir()
	secrets := []string{filepath.Join(secretDir, "secret.key"), filepath.Join(os.TempDir(), tok+".key")}
	for _, p := range secrets {
		if err := os.WriteFile(p, []byte("SECRET "+tok), 0o644); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = os.Remove(p) }() // best effort: a temporary file
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	hidden := append(secrets, secretDir, "/root", "/root/.bashrc", "/root/.pyenv", "/home",
		filepath.Join(wd, "sandbox.go"), "/work", "/etc/shadow", "/etc/ssh", "/var", "/opt", "/sys", "/run",
		"/dev/shm/"+tok, "/dev/sda", "/dev/vda", "/dev/mem", "/dev/kmsg")
	if wd != "/" && wd != os.TempDir() {
		hidden = append(hidden, wd) // the package directory, under go test
	}
	var got map[string]string
	res := pyReport(t, r, `
out = {}
for p in sys.argv[1:]:
    try:
        if os.path.isdir(p):
            out[p] = "dir: %s" % os.listdir(p)[:5]
        else:
            with open(p, "rb") as f:
                out[p] = "read: %r" % f.read(40)
    except OSError as e:
        out[p] = type(e).__name__
json.dump(out, rep)
`, Limits{}, &got, append(hidden, python, "/etc/passwd")...)
	for _, p := range hidden {
		if got[p] != "FileNotFoundError" {
			t.Errorf("%s: %s, want FileNotFoundError", p, got[p])
		}
	}
	// The check can see what it should see.
	for _, p := range []string{python, "/etc/passwd"} {
		if !strings.HasPrefix(got[p], "read: ") {
			t.Errorf("%s: %s, want it readable", p, got[p])
		}
	}
	if bytes.Contains(res.Report, []byte("SECRET")) || bytes.Contains(res.Stdout, []byte("SECRET")) {
		t.Error("a secret reached the sandbox")
	}
}

func TestWritesOutsideWorkDir(t *testing.T) {
	r := newRunner(t, Config{})
	tok := token(t)
	before := hostTmpNames(t)
	targets := []string{"/usr/" + tok, "/usr/lib/" + tok, "/etc/" + tok, "/etc/passwd", "/" + tok, "/dev/" + tok, "/proc/sys/kernel/hostname", "/.ledger-sandbox"}
	var got map[string]string
	res := pyReport(t, r, `
out = {}
for p in sys.argv[1:]:
    try:
        with open(p, "a") as f:
            f.write("x")
        out[p] = "written"
    except OSError as e:
        out[p] = type(e).__name__ + " " + (e.strerror or "")
json.dump(out, rep)
`, Limits{}, &got, append(targets, workDir+"/"+tok, "/tmp/"+tok)...)
	for _, p := range targets {
		if !strings.HasPrefix(got[p], "OSError Read-only file system") && !strings.HasPrefix(got[p], "PermissionError") {
			t.Errorf("write %s: %q, want a read-only or permission error", p, got[p])
		}
	}
	for _, p := range []string{workDir + "/" + tok, "/tmp/" + tok} {
		if got[p] != "written" {
			t.Errorf("write %s: %q, want written\n%s", p, got[p], show(res))
		}
	}
	for _, p := range []string{"/usr/" + tok, "/etc/" + tok, "/" + tok, filepath.Join(os.TempDir(), tok)} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("host path %s: %v, want it absent", p, err)
		}
	}
	if after := hostTmpNames(t); len(after) > len(before) {
		for name := range after {
			if strings.Contains(name, tok) {
				t.Errorf("%s appeared in the host's temporary directory", name)
			}
		}
	}
	// A second run starts from an empty working directory and /tmp.
	var again map[string]bool
	pyReport(t, r, `json.dump({p: os.path.exists(p) for p in sys.argv[1:]}, rep)`, Limits{}, &again, workDir+"/"+tok, "/tmp/"+tok)
	for p, exists := range again {
		if exists {
			t.Errorf("%s survived into the next run", p)
		}
	}
}

func TestNoProcessOutlivesRun(t *testing.T) {
	r := newRunner(t, Config{})
	tok := token(t)
	// Double fork and setsid: the grandchild is a daemon reparented to
	// the sandbox's init, and must die with the run.
	var got struct{ Daemon int }
	res := pyReport(t, r, `
import time
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, str(os.getpid()).encode())
        os.close(w)
        time.sleep(1000)
    os._exit(0)
os.close(w)
json.dump({"Daemon": int(os.read(r, 20))}, rep)
`, Limits{}, &got, tok)
	if res.ExitCode != 0 || got.Daemon == 0 {
		t.Fatalf("daemon not started\n%s", show(res))
	}
	assertNoLeftovers(t, tok)
}

func TestStdio(t *testing.T) {
	r := newRunner(t, Config{})
	t.Run("stdin to stdout", func(t *testing.T) {
		in := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB, more than a pipe holds
		res := run(t, r, Cmd{Path: python, Args: []string{"-c", "import sys; d = sys.stdin.buffer.read(); sys.stdout.buffer.write(d); sys.stderr.write('err %d' % len(d))"}, Stdin: in})
		if !bytes.Equal(res.Stdout, in) || string(res.Stderr) != fmt.Sprintf("err %d", len(in)) || res.Truncated || res.ExitCode != 0 {
			t.Errorf("stdout %d bytes, stderr %q\n%s", len(res.Stdout), res.Stderr, show(res))
		}
	})
	t.Run("unread stdin", func(t *testing.T) {
		res := run(t, r, Cmd{Path: sh, Args: []string{"-c", "echo done"}, Stdin: make([]byte, 4<<20)})
		if string(res.Stdout) != "done\n" || res.ExitCode != 0 {
			t.Errorf("%s", show(res))
		}
	})
	t.Run("capped", func(t *testing.T) {
		res := run(t, r, Cmd{Path: python, Args: []string{"-c", "import sys\nfor _ in range(1000): print('x' * 1000); print('y' * 1000, file=sys.stderr)"}, Limits: Limits{Output: 1500}})
		if len(res.Stdout) != 1500 || len(res.Stderr) != 1500 || !res.Truncated || res.ExitCode != 0 {
			t.Errorf("stdout %d, stderr %d bytes, truncated %v", len(res.Stdout), len(res.Stderr), res.Truncated)
		}
	})
	t.Run("exactly at the cap", func(t *testing.T) {
		res := run(t, r, Cmd{Path: sh, Args: []string{"-c", "printf 12345"}, Limits: Limits{Output: 5}})
		if string(res.Stdout) != "12345" || res.Truncated {
			t.Errorf("stdout %q truncated %v", res.Stdout, res.Truncated)
		}
	})
}

func TestReportChannel(t *testing.T) {
	r := newRunner(t, Config{})
	code := `
import os, sys
print("import-time noise")
print("more noise", file=sys.stderr)
os.write(3, b'{"status": "pass"}')
`
	res := run(t, r, Cmd{Path: python, Args: []string{"-c", code}, Report: true})
	if string(res.Report) != `{"status": "pass"}` || string(res.Stdout) != "import-time noise\n" || bytes.Contains(res.Stdout, []byte("status")) {
		t.Errorf("report %q stdout %q", res.Report, res.Stdout)
	}
	// Without Report, fd 3 is closed: the code cannot fake a report.
	res = run(t, r, Cmd{Path: python, Args: []string{"-c", code}})
	if len(res.Report) != 0 || res.ExitCode != 1 || !bytes.Contains(res.Stderr, []byte("Bad file descriptor")) {
		t.Errorf("without Report:\n%s", show(res))
	}
	// Files sit in the working directory, and scripts are executable.
	res = run(t, r, Cmd{Path: sh, Args: []string{"-c", "cat data/in.txt; ./run.sh"}, Files: map[string][]byte{
		"data/in.txt": []byte("input "),
		"run.sh":      []byte("#!/bin/sh\necho ran in $(pwd) as $(id -un)\n"),
	}})
	if string(res.Stdout) != "input ran in /box as sandbox\n" {
		t.Errorf("files:\n%s", show(res))
	}
}

func TestExitCodeAndSignal(t *testing.T) {
	r := newRunner(t, Config{})
	for _, tc := range []struct {
		script string
		exit   int
		signal string
	}{
		{"exit 0", 0, ""},
		{"exit 3", 3, ""},
		{"kill -TERM $$", -1, "SIGTERM"},
		{"kill -SEGV $$", -1, "SIGSEGV"},
		{"kill -KILL $$", -1, "SIGKILL"},
	} {
		res := run(t, r, Cmd{Path: sh, Args: []string{"-c", tc.script}})
		if res.ExitCode != tc.exit || res.Signal != tc.signal || res.TimedOut || res.CPULimit || res.MemoryLimit || res.FileSizeLimit {
			t.Errorf("%q: want exit %d signal %q\n%s", tc.script, tc.exit, tc.signal, show(res))
		}
	}
}

func TestCancel(t *testing.T) {
	r := newRunner(t, Config{})
	tok := token(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(time.Second)
		cancel()
	}()
	// The cancellation may come during the sandbox's set-up on a loaded
	// machine, or while the command runs: either way Run ends with the
	// context's error and leaves nothing behind.
	res, err := r.Run(ctx, Cmd{Path: sh, Args: []string{"-c", "sleep 1000 & sleep 1000", tok}})
	if !errors.Is(err, context.Canceled) || res.TimedOut {
		t.Errorf("err %v\n%s", err, show(res))
	}
	if started := res.Wall != 0; started && (res.Signal != "SIGKILL" || res.ExitCode != -1) {
		t.Errorf("a cancelled command must be reported killed\n%s", show(res))
	}
	assertNoLeftovers(t, tok)
	// A context that is already done does not start anything.
	if _, err := r.Run(ctx, Cmd{Path: sh, Args: []string{"-c", "true", tok}}); !errors.Is(err, context.Canceled) {
		t.Errorf("run with a done context: %v", err)
	}
}

func TestConcurrentRuns(t *testing.T) {
	for _, pool := range []int{0, 2} {
		t.Run(fmt.Sprintf("pool=%d", pool), func(t *testing.T) {
			r := newRunner(t, Config{Pool: pool})
			const n = 12
			var wg sync.WaitGroup
			errs := make(chan string, n)
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					in := fmt.Sprintf("run %d", i)
					res, err := r.Run(context.Background(), Cmd{
						Path: python, Args: []string{"-c", "import sys, os; os.write(3, sys.stdin.read().encode()); open('f', 'w').write('x')"},
						Stdin: []byte(in), Report: true, Files: map[string][]byte{"id": []byte(in)},
					})
					if err != nil || string(res.Report) != in || res.ExitCode != 0 {
						errs <- fmt.Sprintf("run %d: %v\n%s", i, err, show(res))
					}
				}(i)
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
		})
	}
}

func TestPrivileges(t *testing.T) {
	r := newRunner(t, Config{})
	var got map[string]string
	res := pyReport(t, r, `
import ctypes, socket
libc = ctypes.CDLL(None, use_errno=True)
out = {"uid": "%d %d" % (os.getuid(), os.geteuid()), "gid": "%d %d" % (os.getgid(), os.getegid()), "groups": str(os.getgroups())}
for line in open("/proc/self/status"):
    k, v = line.split(":", 1)
    if k in ("CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"):
        out[k] = v.strip()
def errno_of(ret):
    return "ok" if ret == 0 else os.strerror(ctypes.get_errno())
out["unshare"] = errno_of(libc.unshare(0x10000000))
out["mount"] = errno_of(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
out["ptrace"] = errno_of(libc.ptrace(16, 1, 0, 0))
out["hostname"] = socket.gethostname()
out["pid"] = str(os.getpid())
out["kill init"] = errno_of(libc.kill(1, 9))
json.dump(out, rep)
`, Limits{}, &got)
	want := map[string]string{
		"uid": "1000 1000", "gid": "1000 1000",
		"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapAmb": "0000000000000000",
		"NoNewPrivs": "1", "hostname": "sandbox",
		"unshare": "Operation not permitted", "mount": "Operation not permitted", "ptrace": "Operation not permitted",
	}
	if r.rootMap {
		// Only a root Runner can drop the supplementary groups and the
		// bounding set (an unprivileged one keeps its own groups, which
		// show as the overflow id).
		want["groups"] = "[]"
		want["CapBnd"] = "0000000000000000"
	}
	if r.feat.Seccomp {
		want["Seccomp"] = "2"
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if got["kill init"] == "ok" {
		t.Errorf("the command could signal the sandbox's init\n%s", show(res))
	}
}

func TestLookPathAndInterpreterPrefix(t *testing.T) {
	p, err := LookPath("python3")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p, "/usr/") || strings.Contains(p, "pyenv") {
		t.Errorf("LookPath(python3) = %s, want the system interpreter", p)
	}
	if _, err := LookPath("no-such-program-" + token(t)); !errors.Is(err, ErrStart) {
		t.Errorf("LookPath of a missing program: %v", err)
	}
	matches, _ := filepath.Glob("/root/.pyenv/versions/3.*/bin/python3")
	if len(matches) == 0 {
		t.Skip("no pyenv interpreter under /root on this machine")
	}
	skipUnlessAvailable(t)
	r := newRunner(t, Config{})
	home := matches[len(matches)-1]
	if _, err := r.Run(context.Background(), Cmd{Path: home, Args: []string{"-c", "pass"}}); !errors.Is(err, ErrNotVisible) {
		t.Errorf("interpreter under /root without its prefix: %v, want ErrNotVisible", err)
	}
	prefix, err := InterpreterPrefix(home)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	res := run(t, r, Cmd{Path: home, Args: []string{"-c", `
import json, os, sys
out = {"prefix": sys.prefix}
for p in ["/root/.bashrc", "/root/.pyenv/shims", os.path.dirname(sys.prefix)]:
    out[p] = "visible" if os.path.exists(p) else "absent"
os.write(3, json.dumps(out).encode())
`}, ReadOnly: []string{prefix}, Report: true})
	if err := json.Unmarshal(res.Report, &got); err != nil {
		t.Fatalf("%v\n%s", err, show(res))
	}
	if got["prefix"] != prefix || got["/root/.bashrc"] != "absent" || got["/root/.pyenv/shims"] != "absent" {
		t.Errorf("interpreter with its prefix: %v", got)
	}
}

func TestInvalidCommands(t *testing.T) {
	r := newRunner(t, Config{Hidden: []string{"/opt/ledger-keys"}})
	for _, tc := range []struct {
		name string
		cmd  Cmd
		want error
	}{
		{"empty path", Cmd{}, ErrInvalid},
		{"relative path", Cmd{Path: "./x"}, ErrInvalid},
		{"missing program", Cmd{Path: "/usr/bin/no-such-program"}, ErrStart},
		{"program outside", Cmd{Path: os.Args[0]}, ErrNotVisible},
		{"file with ..", Cmd{Path: sh, Files: map[string][]byte{"../x": nil}}, ErrInvalid},
		{"absolute file", Cmd{Path: sh, Files: map[string][]byte{"/etc/x": nil}}, ErrInvalid},
		{"read-only root", Cmd{Path: sh, ReadOnly: []string{"/"}}, ErrNotVisible},
		{"read-only home", Cmd{Path: sh, ReadOnly: []string{"/root"}}, ErrNotVisible},
		{"read-only tmp", Cmd{Path: sh, ReadOnly: []string{os.TempDir()}}, ErrNotVisible},
		{"read-only etc", Cmd{Path: sh, ReadOnly: []string{"/etc/ssl"}}, ErrNotVisible},
		{"read-only relative", Cmd{Path: sh, ReadOnly: []string{"usr"}}, ErrInvalid},
		{"env without =", Cmd{Path: sh, Env: []string{"X"}}, ErrInvalid},
	} {
		if _, err := r.Run(context.Background(), tc.cmd); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := New(Config{ReadOnly: []string{"/home"}}); !errors.Is(err, ErrNotVisible) {
		t.Errorf("Config.ReadOnly /home: %v", err)
	}
	if _, err := New(Config{Mode: Mode(7)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad mode: %v", err)
	}
	if _, err := r.Run(context.Background(), Cmd{Path: "/usr/lib/os-release"}); !errors.Is(err, ErrStart) {
		t.Errorf("non-executable program: %v", err)
	}
}

func TestNoneMode(t *testing.T) {
	r, err := New(Config{Mode: ModeNone})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sandbox() != "none" {
		t.Errorf("Sandbox() = %q", r.Sandbox())
	}
	var dir string
	res := run(t, r, Cmd{Path: sh, Args: []string{"-c", "cat in; pwd >&3; read x; echo $x; exit 4"}, Files: map[string][]byte{"in": []byte("file ")}, Stdin: []byte("stdin\n"), Report: true})
	dir = strings.TrimSpace(string(res.Report))
	if string(res.Stdout) != "file stdin\n" || res.ExitCode != 4 || res.Sandbox != "none" || dir == "" {
		t.Errorf("%s", show(res))
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("working directory %s left behind: %v", dir, err)
	}
	res = run(t, r, Cmd{Path: sh, Args: []string{"-c", "sleep 1000"}, Limits: Limits{Wall: 200 * time.Millisecond}})
	if !res.TimedOut {
		t.Errorf("none mode timeout:\n%s", show(res))
	}

	// ModeNone does not hold a daemon: a double fork with setsid outlives
	// the run. This also shows that the leftover check the namespace tests
	// rely on finds such a process.
	tok := token(t)
	run(t, r, Cmd{Path: python, Args: []string{"-c", `
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        time.sleep(1000)
    os._exit(0)
time.sleep(0.2)
`, tok}})
	left := hostProcessesWith(t, tok)
	if len(left) == 0 {
		t.Error("ModeNone: the escaped daemon was not found")
	}
	for _, l := range left {
		pid, _ := strconv.Atoi(strings.SplitN(l, ":", 2)[0])
		if pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mode
		err  bool
	}{{"namespaces", ModeNamespaces, false}, {"", ModeNamespaces, false}, {"none", ModeNone, false}, {"off", 0, true}} {
		m, err := ParseMode(tc.in)
		if (err != nil) != tc.err || (!tc.err && m != tc.want) {
			t.Errorf("ParseMode(%q) = %v, %v", tc.in, m, err)
		}
		if !tc.err && m.String() != map[string]string{"": "namespaces"}[tc.in]+tc.in {
			t.Errorf("String() = %q", m.String())
		}
	}
}

func TestWithoutProc(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("an unprivileged Runner cannot run without a fresh /proc (its nested user namespace is mapped through /proc)")
	}
	r := newRunner(t, Config{noProc: true})
	if strings.Contains(r.Sandbox(), "supervisor") {
		t.Errorf("Sandbox() = %q claims a supervisor it does not have", r.Sandbox())
	}
	tok := token(t)
	res := run(t, r, Cmd{Path: sh, Args: []string{"-c", "test -e /proc/self || echo no proc; id -u; sleep 1000 &", tok}})
	if string(res.Stdout) != "no proc\n1000\n" || res.ExitCode != 0 || res.Sandbox != r.Sandbox() {
		t.Errorf("%s", show(res))
	}
	assertNoLeftovers(t, tok)
	// rlimits still hold without the supervisor.
	res = run(t, r, Cmd{Path: python, Args: []string{"-c", "while True: pass", tok}, Limits: Limits{CPUTime: time.Second, Wall: 120 * time.Second}})
	if !res.CPULimit || res.Signal != "SIGXCPU" {
		t.Errorf("%s", show(res))
	}
	assertNoLeftovers(t, tok)
}

func TestStagesCarryNothing(t *testing.T) {
	r := newRunner(t, Config{})
	tok := token(t)
	t.Setenv("LEDGER_TEST_SECRET", tok)
	// A descriptor the ledger holds without close-on-exec (as if its own
	// parent had left it open) is passed on by os/exec: the stages must
	// close it.
	keyPath := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyPath, []byte(tok), 0o600); err != nil {
		t.Fatal(err)
	}
	keyFd, err := syscall.Open(keyPath, syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Close(keyFd) }() // read-only: nothing to lose

	// The command sees its own environment and descriptors 0-2 (3 with
	// Report) only.
	var got struct {
		Env []string
		Fds []string
	}
	pyReport(t, r, `
fds = sorted(os.listdir("/proc/self/fd"), key=int)
json.dump({"Env": sorted(os.environ), "Fds": fds}, rep)
`, Limits{}, &got)
	if strings.Join(got.Env, ",") != "HOME,LANG,PATH,TMPDIR" {
		t.Errorf("environment %q", got.Env)
	}
	// 0-3, plus the descriptor listdir itself had open.
	if len(got.Fds) != 5 || strings.Join(got.Fds[:4], ",") != "0,1,2,3" {
		t.Errorf("descriptors %q", got.Fds)
	}

	// init, seen from the host while a command runs: the marker is its
	// whole environment, and it holds pipes and runtime descriptors only.
	done := make(chan Result, 1)
	go func() {
		res, _ := r.Run(context.Background(), Cmd{Path: sh, Args: []string{"-c", "sleep 2", tok}})
		done <- res
	}()
	var initPid string
	for i := 0; i < 200 && initPid == ""; i++ {
		time.Sleep(20 * time.Millisecond)
		for _, l := range hostProcessesWith(t, stageInit) {
			pid := strings.SplitN(l, ":", 2)[0]
			if b, err := os.ReadFile("/proc/" + pid + "/environ"); err == nil && len(b) > 0 {
				if string(b) != strings.Join(stageEnviron(stageInit), "\x00")+"\x00" {
					t.Errorf("init's environment: %q", b)
				}
				initPid = pid
			}
		}
	}
	if initPid == "" {
		t.Fatal("init not found on the host")
	}
	ents, err := os.ReadDir("/proc/" + initPid + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		target, err := os.Readlink("/proc/" + initPid + "/fd/" + e.Name())
		if err != nil {
			continue
		}
		if !strings.HasPrefix(target, "pipe:") && !strings.HasPrefix(target, "anon_inode:") {
			t.Errorf("init holds fd %s -> %s", e.Name(), target)
		}
	}
	<-done
	assertNoLeftovers(t, tok)
}
