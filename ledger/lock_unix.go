//go:build linux || darwin

package ledger

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// osLocker takes flock(2) locks: per open file description, so that two
// opens in one process exclude each other as two processes do.
type osLocker struct{}

func (osLocker) TryLock(fs vfs.FS, name string, exclusive bool) (FileLock, error) {
	f, err := fs.OpenReadWrite(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	if uintptr(fd) == vfs.InvalidFd {
		_ = f.Close() // opened only to lock it
		return nil, fmt.Errorf("lock %s: the file system has no file descriptors (use a MemLocker)", name)
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for {
		err = unix.Flock(fd, how|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if errors.Is(err, unix.EWOULDBLOCK) {
		_ = f.Close() // opened only to lock it
		return nil, nil
	}
	if err != nil {
		_ = f.Close() // err is the error to report
		return nil, fmt.Errorf("flock %s: %w", name, err)
	}
	// Lock files are the owner's only (a new one was created 0666 less
	// the umask); a failure leaves the mode, which the 0700 directory
	// already protects.
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && st.Mode&0o777 != 0o600 {
		_ = unix.Fchmod(fd, 0o600)
	}
	return &osFileLock{f: f, fd: fd, name: name}, nil
}

type osFileLock struct {
	f    vfs.File
	fd   int
	name string
}

func (l *osFileLock) Current() (bool, error) {
	var held, now unix.Stat_t
	if err := unix.Fstat(l.fd, &held); err != nil {
		return false, fmt.Errorf("stat %s: %w", l.name, err)
	}
	if err := unix.Stat(l.name, &now); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, fmt.Errorf("stat %s: %w", l.name, err)
	}
	return held.Dev == now.Dev && held.Ino == now.Ino, nil
}

// Unlock closes the file, which releases the flock.
func (l *osFileLock) Unlock() error { return l.f.Close() }

// processAlive reports whether a process with that id runs (on this host).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
