package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// initDir makes a ledger in a temporary directory of the operating
// system's file system (flock locks) and appends n events through a
// writer, which leaves a read copy when n > 0.
func initDir(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ledger")
	if err := Init(dir, InitOptions{Origin: "lock.test", Key: testKey(3)}); err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		l := openT(t, dir, Options{})
		appendRaw(t, l, 0, n)
		closeT(t, l)
	}
	return dir
}

func openT(t *testing.T, dir string, opts Options) *Ledger {
	t.Helper()
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func closeT(t *testing.T, l *Ledger) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWriterLock: one writer at a time. A second writer that cannot wait
// fails with ErrBusy naming the holder; one that waits gets the lock when
// the first closes; the context's deadline ends a wait as ErrBusy, its
// cancellation as the context's error.
func TestWriterLock(t *testing.T) {
	rows := []struct {
		name     string
		opts     Options
		ctx      func() (context.Context, context.CancelFunc)
		release  bool // the holder closes a moment after the second open starts
		wantErr  error
		wantBusy bool
	}{
		{name: "no wait", opts: Options{}, wantBusy: true},
		{name: "wait shorter than the hold", opts: Options{Wait: 30 * time.Millisecond}, wantBusy: true},
		{name: "wait for the release", opts: Options{Wait: time.Hour}, release: true},
		{name: "context deadline", opts: Options{Wait: time.Hour}, wantBusy: true,
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 30*time.Millisecond)
			}},
		{name: "context cancelled", opts: Options{Wait: time.Hour}, wantErr: context.Canceled,
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				go func() { time.Sleep(20 * time.Millisecond); cancel() }()
				return ctx, cancel
			}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			dir := initDir(t, 3)
			holder := openT(t, dir, Options{Command: "ledger append --dir d x.json"})
			defer func() { _ = holder.Close() }() // closed below in the release row
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if row.ctx != nil {
				ctx, cancel = row.ctx()
			}
			defer cancel()
			if row.release {
				go func() {
					time.Sleep(20 * time.Millisecond)
					_ = holder.Close()
				}()
			}
			l, err := OpenContext(ctx, dir, row.opts)
			switch {
			case row.wantBusy:
				var be *BusyError
				if !errors.Is(err, ErrBusy) || !errors.As(err, &be) {
					t.Fatalf("second writer: %v, want ErrBusy", err)
				}
				if be.Holder == nil || be.Holder.PID != os.Getpid() || be.Holder.Command != "ledger append --dir d x.json" || be.HolderEnded {
					t.Errorf("holder %+v (ended %v), want this process, its command", be.Holder, be.HolderEnded)
				}
				want := fmt.Sprintf("ledger is in use by pid %d (ledger append --dir d x.json) since ", os.Getpid())
				if msg := err.Error(); !strings.Contains(msg, want) || !strings.Contains(msg, " on host ") || !strings.Contains(msg, "; waited ") {
					t.Errorf("message %q, want it to name the holder (%q…), host and wait", msg, want)
				}
			case row.wantErr != nil:
				if !errors.Is(err, row.wantErr) || errors.Is(err, ErrBusy) {
					t.Fatalf("second writer: %v, want %v", err, row.wantErr)
				}
			default:
				if err != nil {
					t.Fatalf("second writer after the release: %v", err)
				}
				appendRaw(t, l, 3, 1)
				closeT(t, l)
			}
		})
	}
}

// TestLockInfo: a writer records itself in lock.info (0600, like the lock
// file); an info file left by a process that has ended is harmless, and
// replaced by the next writer's.
func TestLockInfo(t *testing.T) {
	dir := initDir(t, 0)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true(1) to make a process that has ended:", err)
	}
	host, _ := os.Hostname()
	stale, _ := json.Marshal(LockInfo{PID: dead.Process.Pid, Command: "ledger append gone", Host: host, Since: time.Now(), Session: "old"})
	if err := os.WriteFile(filepath.Join(dir, lockInfoFile), stale, 0o600); err != nil {
		t.Fatal(err)
	}
	l := openT(t, dir, Options{Command: "writer under test"})
	defer closeT(t, l)
	info, err := readLockInfo(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	if info.PID != os.Getpid() || info.Command != "writer under test" || info.Host != host || info.Session == "old" || len(info.Session) != 32 ||
		time.Since(info.Since) > time.Hour || info.Since.After(time.Now()) {
		t.Errorf("lock.info %+v", info)
	}
	for _, name := range []string{lockFile, lockInfoFile} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", name, st.Mode(), err)
		}
	}
	long := strings.Repeat("x", 1000)
	if got := newLockInfo(long).Command; len(got) > maxCommandLen+len("…") {
		t.Errorf("a command line of %d bytes is recorded as %d", len(long), len(got))
	}
	// A writer whose predecessor ended: the busy message says so.
	be := busyError(vfs.Default, dir, 0)
	if be.HolderEnded {
		t.Errorf("the holder (this process) is reported as ended")
	}
	if err := os.WriteFile(filepath.Join(dir, lockInfoFile), stale, 0o600); err != nil {
		t.Fatal(err)
	}
	if be := busyError(vfs.Default, dir, 0); !be.HolderEnded || !strings.Contains(be.Error(), "has ended") {
		t.Errorf("busy error with an ended holder: %v", be)
	}
}

// TestReadersBesideWriter: a reader opens while a writer holds the lock,
// reads the newest read copy (what the last writer left, never ahead of
// what was acknowledged), says how far behind it is and who writes; a
// reader's pin keeps its copy while newer ones are made; a reader of a
// current copy is not behind.
func TestReadersBesideWriter(t *testing.T) {
	ctx := context.Background()
	dir := initDir(t, 10)
	w := openT(t, dir, Options{Command: "the writer"})
	appendRaw(t, w, 10, 5)
	r1 := openT(t, dir, Options{ReadOnly: true})
	src := r1.Source()
	if !src.Copy || src.Size != 10 || src.Latest != 15 || !src.Behind() || src.Writer == nil || src.Writer.Command != "the writer" {
		t.Errorf("reader beside the writer: source %+v", src)
	}
	if r1.Size() != 10 {
		t.Errorf("reader beside the writer serves %d events, want the copy's 10", r1.Size())
	}
	if _, err := r1.Event(12, false); !errors.Is(err, ErrNotFound) {
		t.Errorf("event 12, appended after the copy: %v, want not found", err)
	}
	if _, err := r1.ProveInclusion(3, 0); err != nil {
		t.Errorf("prove from the copy: %v", err)
	}
	// An older size, whose checkpoint was never kept: a reader signs it,
	// after proving it consistent.
	if _, err := r1.ProveInclusion(2, 7); err != nil {
		t.Errorf("prove at size 7 from the copy: %v", err)
	}
	if rep, err := r1.Audit(ctx, AuditOptions{}); err != nil || !rep.OK() || rep.Events != 10 {
		t.Errorf("audit of the copy beside the writer: %v %+v", err, rep)
	}
	if err := w.MakeReadCopy(ctx); err != nil {
		t.Fatal(err)
	}
	gen1 := filepath.Join(dir, copiesDir, fmt.Sprint(src.Gen))
	if _, err := os.Stat(gen1); err != nil {
		t.Errorf("the copy a reader pins was removed: %v", err)
	}
	r2 := openT(t, dir, Options{ReadOnly: true})
	if s := r2.Source(); !s.Copy || s.Size != 15 || s.Behind() || s.Gen <= src.Gen {
		t.Errorf("reader after MakeReadCopy: source %+v", s)
	}
	closeT(t, r2)
	closeT(t, r1)
	closeT(t, w)
	// The writer's close made a copy and removed the unpinned ones.
	ents, err := os.ReadDir(filepath.Join(dir, copiesDir))
	if err != nil || len(ents) != 1 {
		t.Errorf("copies after the writer closed: %v %v, want one", ents, err)
	}
	r3 := openT(t, dir, Options{ReadOnly: true})
	defer closeT(t, r3)
	if s := r3.Source(); !s.Copy || s.Size != 15 || s.Behind() {
		t.Errorf("reader after the writer closed: source %+v", s)
	}
	if rep, err := r3.Audit(ctx, AuditOptions{}); err != nil || !rep.OK() {
		t.Errorf("audit of the copy: %v %v", err, rep.Problems)
	}
}

// TestReaderWithoutCopy: with no read copy, a reader reads the store
// itself under the lock held shared (a writer waits for it), and beside a
// writer it waits like a writer.
func TestReaderWithoutCopy(t *testing.T) {
	dir := initDir(t, 0) // Init leaves no copy
	r := openT(t, dir, Options{ReadOnly: true})
	if s := r.Source(); s.Copy {
		t.Errorf("reader of a ledger without copies: source %+v", s)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrBusy) {
		t.Errorf("writer beside a reader of the store: %v, want ErrBusy", err)
	}
	r2 := openT(t, dir, Options{ReadOnly: true}) // readers share
	closeT(t, r2)
	closeT(t, r)
	w := openT(t, dir, Options{})
	appendRaw(t, w, 0, 4)
	if _, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrBusy) {
		t.Errorf("reader beside a writer, no copy, no wait: %v, want ErrBusy", err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = w.Close()
	}()
	r = openT(t, dir, Options{ReadOnly: true, Wait: time.Hour})
	defer closeT(t, r)
	if s := r.Source(); !s.Copy || s.Size != 4 || r.Size() != 4 {
		t.Errorf("reader that waited for the writer: source %+v, %d events", s, r.Size())
	}
}

// TestStaleCopyNotServed: a copy the last writer did not make (its own
// copy failed, or it was killed) is not current: with the lock free a
// reader reads the store, settings included.
func TestStaleCopyNotServed(t *testing.T) {
	dir := initDir(t, 5)
	w := openT(t, dir, Options{})
	if err := w.SetSetting("policy/x", []byte("new")); err != nil {
		t.Fatal(err)
	}
	w.noCopy = true // as if its copy failed
	closeT(t, w)
	r := openT(t, dir, Options{ReadOnly: true})
	defer closeT(t, r)
	got := ""
	if err := r.Settings("policy/", func(_ string, v []byte) error { got = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	if s := r.Source(); s.Copy || got != "new" {
		t.Errorf("reader after a writer left no copy: source %+v, setting %q", s, got)
	}
}

// TestLockFilesUnwritable: a lock file that cannot be opened is a clear
// error naming it; an info file that cannot be written fails the writer
// (readers rely on it) and releases the lock.
func TestLockFilesUnwritable(t *testing.T) {
	ffs := newFaultFS(vfs.NewMem())
	lk := NewMemLocker()
	if err := Init(memDir, InitOptions{Origin: "lock.test", Key: testKey(9), FS: ffs.fs, Locker: lk}); err != nil {
		t.Fatal(err)
	}
	opts := Options{FS: ffs.fs, Locker: lk}
	ffs.arm(func(op errorfs.Op) bool { return op.Path == memDir+"/"+lockFile && op.Kind == errorfs.OpOpen })
	_, err := Open(memDir, opts)
	if err == nil || !strings.Contains(err.Error(), "writer lock "+memDir+"/lock") || !errors.Is(err, errorfs.ErrInjected) {
		t.Errorf("writer with an unwritable lock file: %v", err)
	}
	if _, err := Open(memDir, Options{FS: ffs.fs, Locker: lk, ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "lock") {
		t.Errorf("reader with an unwritable lock file and no copy: %v", err)
	}
	ffs.arm(func(op errorfs.Op) bool { return strings.HasSuffix(op.Path, "/"+lockInfoFile+".tmp") })
	_, err = Open(memDir, opts)
	ffs.disarm()
	if err == nil || !strings.Contains(err.Error(), "record the writer in lock.info") || errors.Is(err, ErrBusy) {
		t.Errorf("writer with an unwritable info file: %v", err)
	}
	l, err := Open(memDir, opts)
	if err != nil {
		t.Fatalf("writer once the info file is writable: %v (was the lock released?)", err)
	}
	appendRaw(t, l, 0, 2)
	closeT(t, l)
}

// TestLockNotInNonLedger: opening a directory that holds no ledger
// creates no lock file there.
func TestLockNotInNonLedger(t *testing.T) {
	dir := t.TempDir()
	for _, ro := range []bool{false, true} {
		if _, err := Open(dir, Options{ReadOnly: ro}); !errors.Is(err, ErrNotLedger) {
			t.Errorf("open (read-only %v) of an empty directory: %v", ro, err)
		}
	}
	if _, err := LockWriter(context.Background(), dir, LockOptions{}); !errors.Is(err, ErrNotLedger) {
		t.Errorf("LockWriter of an empty directory: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left in a directory that is not a ledger: %v", ents)
	}
}
