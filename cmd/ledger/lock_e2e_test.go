package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
)

// ledgerCmd is the binary run with args in the repository root, with env
// added to the environment, its output captured.
func ledgerCmd(env []string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.Command(ledgerBin, args...)
	cmd.Dir = "../.."
	cmd.Env = append(append(os.Environ(), "LEDGER_DIR=", "LEDGER_WAIT="), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	return cmd, &out, &errb
}

func processExit(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

// logIDs lists the ledger's events (`ledger log --json`): id by seq.
func logIDs(t *testing.T, dir string) []string {
	t.Helper()
	out := mustRun(t, 0, "log", "--json", "--dir", dir)
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var ev struct {
			Seq int64  `json:"seq"`
			ID  string `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if ev.Seq != int64(len(ids)) {
			t.Fatalf("log: seq %d at line %d", ev.Seq, len(ids))
		}
		ids = append(ids, ev.ID)
	}
	return ids
}

// TestParallelAppends is issue 10's report: 40 `ledger append` processes
// of distinct documents on one directory at once. Each waits for the
// writer lock (--wait) instead of failing, and the ledger holds every
// document exactly once.
func TestParallelAppends(t *testing.T) {
	const n = 40
	dir := filepath.Join(t.TempDir(), "ledger")
	mustRun(t, 0, "init", "--dir", dir)
	files := writeReceiptChains(t, t.TempDir(), n, 1) // 40 chains of one receipt
	cmds := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	errs := make([]*bytes.Buffer, n)
	for i, f := range files {
		cmds[i], outs[i], errs[i] = ledgerCmd(nil, "append", "--wait", "5m", "--json", "--dir", dir, f)
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]bool{}
	for i, cmd := range cmds {
		if code := processExit(t, cmd.Wait()); code != 0 {
			t.Errorf("append %d: exit %d: %s", i, code, errs[i])
			continue
		}
		var o struct{ Status, ID string }
		if err := json.Unmarshal(outs[i].Bytes(), &o); err != nil || o.Status != "appended" {
			t.Errorf("append %d: %q %v", i, outs[i], err)
		}
		want[o.ID] = true
	}
	ids := logIDs(t, dir)
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	if len(ids) != n || len(seen) != n {
		t.Errorf("the ledger holds %d events, %d distinct; want %d", len(ids), len(seen), n)
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("%s is in the ledger %d times", id, seen[id])
		}
	}
	mustRun(t, 0, "audit", "--dir", dir)
}

// TestBusyNamesHolder: while another process holds the writer lock, every
// writer with --wait 0 (or LEDGER_WAIT=0, or --wait before the command)
// exits 8 with one line naming the holder; a short wait says how long it
// waited.
func TestBusyNamesHolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledger")
	mustRun(t, 0, "init", "--dir", dir)
	files := writeReceiptChains(t, t.TempDir(), 2, 1)
	mustRun(t, 0, "append", "--dir", dir, files[0])
	wl, err := ledger.LockWriter(context.Background(), dir, ledger.LockOptions{Command: "test holder"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = wl.Unlock() }()
	holder := fmt.Sprintf("ledger is in use by pid %d (test holder) since ", os.Getpid())
	rows := []struct {
		env  []string
		args []string
	}{
		{args: []string{"append", "--wait", "0", files[1]}},
		{env: []string{"LEDGER_WAIT=0"}, args: []string{"append", files[1]}},
		{args: []string{"--wait", "0", "append", files[1]}},
		{args: []string{"append", "--wait", "150ms", files[1]}},
		{args: []string{"key", "add-hmac", "--wait", "0", "k", "testdata/vectors/rvww/hmac_key.txt"}},
		{args: []string{"policy", "add", "--wait", "0", "testdata/rvww/policies/custom_read_grep.json"}},
		{args: []string{"rebuild", "--wait", "0"}},
	}
	for _, row := range rows {
		cmd, out, stderr := ledgerCmd(row.env, append(row.args, "--dir", dir)...)
		code := processExit(t, cmd.Run())
		checkOneLine(t, strings.Join(row.args, " "), stderr.String(), code, exitBusy, holder)
		if out.Len() != 0 {
			t.Errorf("%v: wrote %q", row.args, out)
		}
	}
	if ids := logIDs(t, dir); len(ids) != 1 {
		t.Errorf("%d events after refused appends, want 1", len(ids))
	}
	if err := wl.Unlock(); err != nil {
		t.Fatal(err)
	}
	mustRun(t, 0, "append", "--wait", "0", "--dir", dir, files[1])
}

// TestReadersBesideWriter: while a writer holds the ledger and has
// appended more, readers run and succeed, print what they printed before
// the writer started (the read copy the last writer left: never ahead of
// what the writer acknowledged), and say on one stderr line that they
// read an older size; a read copy the writer makes is what the next
// reader reads, exactly.
func TestReadersBesideWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledger")
	mustRun(t, 0, "init", "--dir", dir, "--origin", "beside.test")
	files := writeReceiptChains(t, t.TempDir(), 5, 8)
	mustRun(t, 0, append([]string{"append", "--dir", dir}, files[:20]...)...)
	mustRun(t, 0, "append", "--dir", dir, "--hmac-key-file", "testdata/vectors/rvww/hmac_key.txt", "testdata/vectors/rvww/01_solved_autonomous_signed.rvww")
	first := logIDs(t, dir)[0]
	out := filepath.Join(t.TempDir(), "out")
	readers := []struct {
		args    []string
		compare bool // stdout must equal the output before the writer
	}{
		{args: []string{"log"}, compare: true},
		{args: []string{"log", "--json"}, compare: true},
		{args: []string{"get", "5"}, compare: true},
		{args: []string{"get", first, "--raw"}, compare: true},
		{args: []string{"chain", first}, compare: true},
		{args: []string{"checkpoint"}, compare: true},
		{args: []string{"prove", "3"}, compare: true},
		{args: []string{"prove", "--consistency", "4", "21"}, compare: true},
		{args: []string{"scorecard"}, compare: true},
		{args: []string{"policy", "list"}, compare: true},
		{args: []string{"systems"}, compare: true},
		{args: []string{"reputation"}},
		{args: []string{"trend"}},
		{args: []string{"audit"}},
		{args: []string{"export", out}},
	}
	type result struct {
		out  string
		code int
	}
	before := map[string]result{}
	for _, r := range readers {
		cmd, stdout, stderr := ledgerCmd(nil, append(r.args, "--dir", dir)...)
		code := processExit(t, cmd.Run())
		if stderr.Len() != 0 && code == 0 {
			t.Errorf("%v without a writer: stderr %q", r.args, stderr)
		}
		before[strings.Join(r.args, " ")] = result{stdout.String(), code}
		_ = os.Remove(out)
	}

	w, err := admit.Open(dir, ledger.Options{Projectors: ledgerProjectors(), Command: "ledger append (test writer)"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	appendDocs := func(paths []string) {
		t.Helper()
		var subs []admit.Submission
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			subs = append(subs, admit.Submission{Name: p, Data: b})
		}
		res, err := w.Append(context.Background(), subs, admit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res {
			if o.Status != ledger.StatusAppended {
				t.Fatalf("writer: %s %s", o.Status, o.Reason)
			}
		}
	}
	appendDocs(files[20:30]) // acknowledged: 31 events
	note := fmt.Sprintf("ledger: reading the ledger as of size 21 (31 signed): a writer (pid %d: ledger append (test writer)) holds it\n", os.Getpid())
	for _, r := range readers {
		cmd, stdout, stderr := ledgerCmd(nil, append(r.args, "--dir", dir, "--wait", "0")...)
		code := processExit(t, cmd.Run())
		b := before[strings.Join(r.args, " ")]
		if code != b.code {
			t.Errorf("%v beside the writer: exit %d, before %d (stderr %q)", r.args, code, b.code, stderr)
		}
		if !strings.HasPrefix(stderr.String(), note) {
			t.Errorf("%v beside the writer: stderr %q, want it to start with %q", r.args, stderr, note)
		}
		if r.compare && stdout.String() != b.out {
			t.Errorf("%v beside the writer printed\n%s\nbefore the writer\n%s", r.args, stdout, b.out)
		}
		_ = os.Remove(out)
	}
	if _, _, code := runLedger(t, nil, "get", "25", "--dir", dir); code == 0 {
		t.Error("get 25, appended after the read copy, succeeded beside the writer")
	}
	// A copy the writer makes is exactly what the next reader reads.
	acked := 31
	for i := 30; i < 40; i += 3 {
		appendDocs(files[i:min(i+3, 40)])
		acked += min(i+3, 40) - i
		if err := w.MakeReadCopy(context.Background()); err != nil {
			t.Fatal(err)
		}
		ck := mustRun(t, 0, "checkpoint", "--dir", dir)
		if want := fmt.Sprintf("beside.test\n%d\n", acked); !strings.HasPrefix(ck, want) {
			t.Errorf("checkpoint after a read copy of %d events:\n%s", acked, ck)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runLedger(t, nil, "log", "--dir", dir); code != 0 || stderr != "" {
		t.Errorf("log after the writer closed: exit %d, %q", code, stderr)
	}
}

// TestKillDuringCopy kills `ledger append` processes at random moments,
// some while they make their read copy: readers and the next writer are
// always fine, readers always see every acknowledged append, and the
// next writer's copy leaves nothing of the interrupted ones.
func TestKillDuringCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the binary many times")
	}
	dir := filepath.Join(t.TempDir(), "ledger")
	mustRun(t, 0, "init", "--dir", dir)
	files := writeReceiptChains(t, t.TempDir(), 30, 2)
	mustRun(t, 0, append([]string{"append", "--dir", dir}, files[:30]...)...)
	rng := rand.New(rand.NewPCG(5, 6))
	acked := 30
	next := 30
	for next < len(files) {
		cmd, out, _ := ledgerCmd(nil, "append", "--json", "--dir", dir, files[next])
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if strings.Contains(out.String(), `"appended"`) {
			acked++
		}
		ids := logIDs(t, dir)
		if len(ids) < acked || len(ids) > next+1 {
			t.Fatalf("after a kill: the reader sees %d events; %d acknowledged, %d tried", len(ids), acked, next+1)
		}
		acked = len(ids) // a killed append may have landed unreported
		next = len(ids)
		if next < len(files) && rng.IntN(3) == 0 {
			mustRun(t, 0, "append", "--dir", dir, files[next])
			acked++
			next++
		}
	}
	mustRun(t, 0, "audit", "--dir", dir)
	mustRun(t, 0, "policy", "add", "--dir", dir, "testdata/rvww/policies/custom_read_grep.json")
	ents, err := os.ReadDir(filepath.Join(dir, "copies"))
	if err != nil || len(ents) != 1 {
		t.Errorf("copies after a clean writer: %v %v, want exactly one", ents, err)
	}
}
