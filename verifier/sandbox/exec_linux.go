package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// execMain is the exec stage: it reads its spec, changes to the sandbox
// user, sets no_new_privs, Landlock, seccomp and the rlimits, and execs the
// command. It writes why it could not on the exec-error pipe.
func execMain() int {
	// no_new_privs, seccomp and Landlock are per thread; execve keeps the
	// calling thread's, so all of it happens on this one.
	runtime.LockOSThread()
	if _, err := unix.FcntlInt(execFdErr, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return 126
	}
	errw := os.NewFile(execFdErr, "exec-error")
	specf := os.NewFile(execFdSpec, "spec")
	var spec execSpec
	err := json.NewDecoder(specf).Decode(&spec)
	_ = specf.Close() // read-only, and decoded
	if err == nil {
		err = execCommand(spec)
	}
	_, _ = fmt.Fprint(errw, err) // the exit code says it failed; there is no one else to tell
	return 127
}

// execCommand applies the spec and execs; it returns only on failure.
func execCommand(spec execSpec) error {
	if spec.Namespace {
		// init moved this process into the sandbox root with pivot_root;
		// refuse to run anywhere else.
		if err := unix.Chdir("/"); err != nil {
			return err
		}
		if _, err := os.Stat(rootMarker); err != nil {
			return fmt.Errorf("not inside the sandbox root: %w", err)
		}
	}
	if err := unix.Chdir(spec.Dir); err != nil {
		return fmt.Errorf("chdir %s: %w", spec.Dir, err)
	}
	if spec.SetUID {
		if err := dropToUser(spec.UID, spec.GID); err != nil {
			return err
		}
	}
	if spec.Namespace {
		if err := checkNoCaps(); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if spec.Landlock > 0 {
		if err := restrictLandlock(spec.Landlock, spec.Dir); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	if spec.Seccomp {
		if err := installSeccomp(); err != nil {
			return fmt.Errorf("seccomp: %w", err)
		}
	}
	first := 3
	if spec.Report {
		if err := unix.Dup3(execFdReport, 3, 0); err != nil {
			return fmt.Errorf("report pipe: %w", err)
		}
		first = 4
	}
	if err := closeOnExecFrom(first); err != nil {
		return err
	}
	if err := setRlimits(spec.Limits); err != nil {
		return err
	}
	err := syscall.Exec(spec.Path, spec.Argv, spec.Env)
	return fmt.Errorf("execve %s: %w", spec.Path, err)
}

// dropToUser empties the capability bounding set and changes to uid and gid
// with no supplementary groups; changing from root to another uid clears
// the permitted and effective capabilities. Credentials are per thread in
// Linux and execve keeps the calling thread's, so only this (locked) thread
// changes: the raw system calls avoid syscall.Setuid's stop-the-world
// change of every thread, which costs milliseconds.
func dropToUser(uid, gid int) error {
	for c := 0; c <= 63; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); errno != 0 {
		return fmt.Errorf("setgroups: %w", errno)
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(gid), uintptr(gid), uintptr(gid)); errno != 0 {
		return fmt.Errorf("setresgid: %w", errno)
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); errno != 0 {
		return fmt.Errorf("setresuid: %w", errno)
	}
	return nil
}

// checkNoCaps fails unless the thread has no permitted, effective or
// inheritable capability left.
func checkNoCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return errors.New("capabilities left before exec")
		}
	}
	return nil
}

// closeOnExecFrom marks every file descriptor from first on close-on-exec.
func closeOnExecFrom(first int) error {
	err := unix.CloseRange(uint(first), math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Before Linux 5.11.
	ents, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return fmt.Errorf("close_range: %w", err)
	}
	for _, e := range ents {
		fd, perr := strconv.Atoi(e.Name())
		if perr == nil && fd >= first {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
	return nil
}

// setRlimits sets the per-process limits. It comes last before execve
// because RLIMIT_DATA and RLIMIT_NPROC could starve the Go runtime.
func setRlimits(l Limits) error {
	cpu := uint64(math.Ceil(l.CPUTime.Seconds()))
	for _, r := range []struct {
		name       string
		res        int
		soft, hard uint64
	}{
		{"RLIMIT_CORE", unix.RLIMIT_CORE, 0, 0},
		{"RLIMIT_CPU", unix.RLIMIT_CPU, cpu, cpu + 1},
		{"RLIMIT_FSIZE", unix.RLIMIT_FSIZE, uint64(l.FileSize), uint64(l.FileSize)},
		{"RLIMIT_NOFILE", unix.RLIMIT_NOFILE, uint64(l.OpenFiles), uint64(l.OpenFiles)},
		{"RLIMIT_MEMLOCK", unix.RLIMIT_MEMLOCK, 0, 0},
		{"RLIMIT_MSGQUEUE", unix.RLIMIT_MSGQUEUE, 0, 0},
		{"RLIMIT_DATA", unix.RLIMIT_DATA, uint64(l.Memory), uint64(l.Memory)},
		{"RLIMIT_NPROC", unix.RLIMIT_NPROC, uint64(l.Procs), uint64(l.Procs)},
	} {
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(r.res, &cur); err != nil {
			return fmt.Errorf("getrlimit %s: %w", r.name, err)
		}
		// Never ask for more than the hard limit we have.
		soft, hard := min(r.soft, cur.Max), min(r.hard, cur.Max)
		// syscall.Setrlimit, not prlimit: it also stops the Go runtime from
		// restoring its saved RLIMIT_NOFILE at execve.
		if err := syscall.Setrlimit(r.res, &syscall.Rlimit{Cur: soft, Max: hard}); err != nil {
			return fmt.Errorf("setrlimit %s: %w", r.name, err)
		}
	}
	return nil
}
