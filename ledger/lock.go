package ledger

// Concurrency between processes (docs/ARCHITECTURE.md): one writer at a
// time, readers beside it.
//
//   - A writer (every open that can change the ledger: Init, a write Open,
//     an upgrade, an import's target) holds an exclusive lock on DIR/lock
//     for as long as it is open, waiting for it up to Options.Wait. Once it
//     holds it, it records itself in DIR/lock.info (pid, command, host,
//     start time and a session id), replaced atomically and synced before
//     the writer changes anything. The flock is the lock; the info file
//     only describes its holder (a stale one, of a dead process, is
//     harmless) and, by its session id, tells readers whether the newest
//     read copy was made by the last writer (copies.go).
//   - A reader reads a read copy (copies.go) and needs no lock of the
//     ledger's; when no read copy is current and no writer holds the lock,
//     it takes the lock in shared mode and reads the store itself.
//
// Locks are flock(2) locks on the operating system's file system; tests on
// Pebble's in-memory file systems share one MemLocker. Every file is still
// opened through the ledger's vfs.FS, so that error-injecting file systems
// reach the lock files too.

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Files of the writer lock, in the ledger directory.
const (
	lockFile     = "lock"      // flock: writers exclusive, readers of the store shared
	lockInfoFile = "lock.info" // the last writer's LockInfo, JSON
)

// maxCommandLen bounds the command line recorded in lock.info.
const maxCommandLen = 256

// ErrBusy: another process holds the ledger's writer lock and the wait for
// it (Options.Wait, or the context's deadline) ran out.
var ErrBusy = errors.New("ledger busy")

// errNoLocker: a ledger on a file system other than the operating
// system's needs a Locker shared by everything that opens it.
var errNoLocker = errors.New("ledger: Options.Locker is required on a file system other than the operating system's (share one NewMemLocker among the ledgers of that file system)")

// LockInfo describes the writer that holds (or last held) a ledger's
// writer lock: what DIR/lock.info holds.
type LockInfo struct {
	// PID is the writer's process id.
	PID int `json:"pid"`
	// Command is the writer's command line, its arguments joined by
	// spaces, at most 256 bytes.
	Command string `json:"command"`
	// Host is the host the writer runs on.
	Host string `json:"host"`
	// Since is when the writer took the lock.
	Since time.Time `json:"since"`
	// Session identifies the writer's hold of the lock (random, 128 bits
	// in hex); a read copy records the session that made it.
	Session string `json:"session"`
}

// String says who the holder is: "pid 1234 (ledger append …) since
// 2026-11-23T10:00:00Z on host h".
func (i LockInfo) String() string {
	cmd := ""
	if i.Command != "" {
		cmd = " (" + i.Command + ")"
	}
	return fmt.Sprintf("pid %d%s since %s on host %s", i.PID, cmd, i.Since.UTC().Format(time.RFC3339), i.Host)
}

// BusyError says that the ledger's writer lock stayed held by another
// process for as long as the caller would wait. It wraps ErrBusy.
type BusyError struct {
	Dir string
	// Holder is the writer lock.info names; nil when there is none.
	Holder *LockInfo
	// HolderEnded reports that Holder's process no longer runs (on this
	// host): the lock is held by someone else, a reader of the store.
	HolderEnded bool
	// Waited is how long the caller waited.
	Waited time.Duration
}

func (e *BusyError) Error() string {
	waited := e.Waited.Round(100 * time.Millisecond)
	switch {
	case e.Holder == nil:
		return fmt.Sprintf("%s: ledger is in use by another process, which left no holder information (a reader of the store); waited %s", e.Dir, waited)
	case e.HolderEnded:
		return fmt.Sprintf("%s: ledger is in use by another process (a reader of the store; the last writer, %s, has ended); waited %s", e.Dir, e.Holder, waited)
	}
	return fmt.Sprintf("%s: ledger is in use by %s; waited %s", e.Dir, e.Holder, waited)
}

// Unwrap returns ErrBusy.
func (e *BusyError) Unwrap() error { return ErrBusy }

// A Locker takes advisory locks on files of a ledger directory: the writer
// lock and the pins of read copies. The operating system's (flock(2)) is
// used when Options.Locker is nil and the ledger's file system is the
// operating system's; tests on in-memory file systems share one
// NewMemLocker among every ledger they open on that file system.
type Locker interface {
	// TryLock locks the file name, opened through fs (and created if it
	// does not exist), exclusively or shared, without waiting. It returns
	// a nil FileLock and a nil error when another holder's lock conflicts.
	TryLock(fs vfs.FS, name string, exclusive bool) (FileLock, error)
}

// A FileLock is a lock a Locker granted.
type FileLock interface {
	// Current reports whether the locked file is still the file at its
	// name: a lock on a file that was since removed or replaced protects
	// nothing.
	Current() (bool, error)
	// Unlock releases the lock.
	Unlock() error
}

// lockerFor returns the Locker for a ledger on fs.
func lockerFor(fs vfs.FS, lk Locker) (Locker, error) {
	if lk != nil {
		return lk, nil
	}
	if vfs.Root(fs) == vfs.Default {
		return osLocker{}, nil
	}
	return nil, errNoLocker
}

// MemLocker is an in-process Locker for ledgers on in-memory file systems
// (tests): locks are held per name, shared or exclusive, among everything
// that uses the same MemLocker. It opens each locked file through the
// file system all the same, so that injected errors reach it.
type MemLocker struct {
	mu   sync.Mutex
	held map[string]*memHold
}

type memHold struct {
	exclusive bool
	n         int
}

// NewMemLocker returns an empty MemLocker.
func NewMemLocker() *MemLocker { return &MemLocker{held: map[string]*memHold{}} }

// TryLock implements Locker.
func (m *MemLocker) TryLock(fs vfs.FS, name string, exclusive bool) (FileLock, error) {
	f, err := fs.OpenReadWrite(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.held[name]
	if h != nil && (exclusive || h.exclusive) {
		_ = f.Close() // opened only to lock it
		return nil, nil
	}
	if h == nil {
		h = &memHold{exclusive: exclusive}
		m.held[name] = h
	}
	h.n++
	return &memFileLock{m: m, fs: fs, name: name, f: f}, nil
}

type memFileLock struct {
	m    *MemLocker
	fs   vfs.FS
	name string
	f    vfs.File
	once sync.Once
}

func (l *memFileLock) Current() (bool, error) {
	return exists(l.fs, l.name)
}

func (l *memFileLock) Unlock() error {
	var err error
	l.once.Do(func() {
		l.m.mu.Lock()
		if h := l.m.held[l.name]; h != nil {
			if h.n--; h.n == 0 {
				delete(l.m.held, l.name)
			}
		}
		l.m.mu.Unlock()
		err = l.f.Close()
	})
	return err
}

// tryLockCurrent is TryLock that also makes sure the lock is on the file
// now at name (a lock file replaced, by an import, while it was being
// locked is locked again).
func tryLockCurrent(lk Locker, fs vfs.FS, name string, exclusive bool) (FileLock, error) {
	for range 100 {
		fl, err := lk.TryLock(fs, name, exclusive)
		if err != nil || fl == nil {
			return nil, err
		}
		ok, err := fl.Current()
		if err == nil && ok {
			return fl, nil
		}
		_ = fl.Unlock() // a lock on a file no longer there: drop it and try again
		if err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%s: the lock file keeps being replaced", name)
}

// errWouldWait: the wait for a lock ran out.
var errWouldWait = errors.New("lock wait ran out")

// waitLock calls try until it returns true or an error, polling with a
// capped backoff until wait has passed or ctx is done. It returns
// errWouldWait when the wait (or ctx's deadline) ran out, ctx.Err() when
// ctx was cancelled.
func waitLock(ctx context.Context, wait time.Duration, try func() (bool, error)) error {
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	delay := time.Millisecond
	for {
		ok, err := try()
		if err != nil || ok {
			return err
		}
		if wait <= 0 {
			return errWouldWait
		}
		// Jitter keeps many waiting processes from polling in step.
		t := time.NewTimer(delay/2 + rand.N(delay/2+1))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return errWouldWait
			}
			return ctx.Err()
		}
		delay = min(delay*3/2+time.Millisecond, 50*time.Millisecond)
	}
}

// LockOptions configure LockWriter.
type LockOptions struct {
	// FS is the file system holding the ledger; nil is the operating
	// system's.
	FS vfs.FS
	// Locker takes the lock (see Locker); nil is flock(2), which needs FS
	// to be the operating system's.
	Locker Locker
	// Wait is how long to wait for another process to release the lock;
	// 0 does not wait. A deadline of the context also ends the wait.
	Wait time.Duration
	// Command is recorded in lock.info as the holder's command line;
	// empty records the process's arguments.
	Command string
}

// WriterLock is a held writer lock of a ledger directory: the exclusive
// flock on DIR/lock, with DIR/lock.info naming its holder.
type WriterLock struct {
	dir  string
	fs   vfs.FS
	fl   FileLock
	info LockInfo
	once sync.Once
}

// LockWriter takes the writer lock of the ledger in dir (a directory
// holding no ledger is refused with ErrNotLedger, and gets no lock file):
// an exclusive lock on dir/lock (created, mode 0600, if missing),
// waiting for other holders up to opts.Wait or ctx's deadline. On a
// timeout it returns a *BusyError (wrapping ErrBusy) naming the holder.
// Once it holds the lock it records the holder in dir/lock.info, synced;
// a writer that cannot record itself releases the lock and fails, since
// readers rely on that record to know whether their read copy is current.
// Open and Init take the lock themselves; a caller that must hold it
// across several opens (an import replacing the ledger) takes it here and
// passes it in Options.Lock.
func LockWriter(ctx context.Context, dir string, opts LockOptions) (*WriterLock, error) {
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	if _, err := readDirFormat(fs, dir); err != nil {
		return nil, err
	}
	opts.FS = fs
	return lockWriter(ctx, dir, opts)
}

// lockWriter is LockWriter on any directory (Init's, before it holds a
// ledger).
func lockWriter(ctx context.Context, dir string, opts LockOptions) (*WriterLock, error) {
	fs := opts.FS
	lk, err := lockerFor(fs, opts.Locker)
	if err != nil {
		return nil, err
	}
	switch st, err := fs.Stat(dir); {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", dir, err)
	case !st.IsDir():
		return nil, fmt.Errorf("%s: %w (not a directory)", dir, ErrNotLedger)
	}
	name := fs.PathJoin(dir, lockFile)
	var fl FileLock
	start := time.Now()
	err = waitLock(ctx, opts.Wait, func() (bool, error) {
		var err error
		fl, err = tryLockCurrent(lk, fs, name, true)
		return fl != nil, err
	})
	if errors.Is(err, errWouldWait) {
		return nil, busyError(fs, dir, time.Since(start))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: writer lock %s: %w", dir, name, err)
	}
	w := &WriterLock{dir: dir, fs: fs, fl: fl}
	if err := chmodOS(fs, name, 0o600); err != nil {
		_ = fl.Unlock() // err is the error to report
		return nil, fmt.Errorf("%s: writer lock %s: %w", dir, name, err)
	}
	w.info = newLockInfo(opts.Command)
	data, err := json.Marshal(w.info)
	if err == nil {
		err = writeFileDurable(fs, fs.PathJoin(dir, lockInfoFile), append(data, '\n'), 0o600)
	}
	if err != nil {
		_ = fl.Unlock() // nothing was changed under it; err is the error to report
		return nil, fmt.Errorf("%s: record the writer in %s: %w", dir, lockInfoFile, err)
	}
	return w, nil
}

// busyError describes who holds dir's lock.
func busyError(fs vfs.FS, dir string, waited time.Duration) *BusyError {
	e := &BusyError{Dir: dir, Waited: waited}
	if info, err := readLockInfo(fs, dir); err == nil {
		e.Holder = info
		if host, _ := os.Hostname(); host == info.Host && vfs.Root(fs) == vfs.Default {
			e.HolderEnded = !processAlive(info.PID)
		}
	}
	return e
}

// newLockInfo describes this process as a lock holder.
func newLockInfo(command string) LockInfo {
	if command == "" {
		args := append([]string(nil), os.Args...)
		if len(args) > 0 {
			args[0] = filepath.Base(args[0])
		}
		command = strings.Join(args, " ")
	}
	if len(command) > maxCommandLen {
		command = strings.ToValidUTF8(command[:maxCommandLen], "") + "…"
	}
	host, _ := os.Hostname()
	var sess [16]byte
	_, _ = crand.Read(sess[:]) // crypto/rand.Read never fails (Go 1.24+)
	return LockInfo{PID: os.Getpid(), Command: command, Host: host, Since: time.Now().UTC().Truncate(time.Second), Session: hex.EncodeToString(sess[:])}
}

// readLockInfo reads dir/lock.info.
func readLockInfo(fs vfs.FS, dir string) (*LockInfo, error) {
	b, err := readSmallFile(fs, fs.PathJoin(dir, lockInfoFile), 4<<10)
	if err != nil {
		return nil, err
	}
	var info LockInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("%s: %w", lockInfoFile, err)
	}
	return &info, nil
}

// Dir returns the locked ledger directory.
func (w *WriterLock) Dir() string { return w.dir }

// Info returns what the lock recorded about its holder.
func (w *WriterLock) Info() LockInfo { return w.info }

// Unlock releases the lock. lock.info stays: it names the last writer.
// Unlock may be called more than once.
func (w *WriterLock) Unlock() error {
	var err error
	w.once.Do(func() { err = w.fl.Unlock() })
	return err
}
