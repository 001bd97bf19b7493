//go:build linux && (amd64 || arm64)

package sandbox

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Offsets in struct seccomp_data.
const (
	seccompNr   = 0
	seccompArch = 4
	seccompArg0 = 16 // args[i] at 16+8*i; the low 32 bits first on little-endian
	seccompArg1 = 24
)

// nsCloneFlags are the clone flags that create namespaces.
const nsCloneFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWTIME

// deniedSyscalls are refused with EPERM: mounting and namespaces, tracing
// and cross-process memory access, kernel modules and kexec, eBPF and perf,
// keyrings, userfaultfd, handle-based opens, clock setting, swap, reboot
// and the like. None of them is needed to run tests or benchmarks, and most
// are where kernel escapes are found.
func deniedSyscalls() []uint32 {
	return append([]uint32{
		unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
		unix.SYS_MOUNT_SETATTR, unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_FSOPEN,
		unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
		unix.SYS_UNSHARE, unix.SYS_SETNS,
		unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD,
		unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE,
		unix.SYS_DELETE_MODULE, unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_FANOTIFY_INIT,
		unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_USERFAULTFD,
		unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
		unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_ACCT,
		unix.SYS_QUOTACTL, unix.SYS_QUOTACTL_FD, unix.SYS_SYSLOG, unix.SYS_VHANGUP,
		unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
		unix.SYS_MIGRATE_PAGES, unix.SYS_MOVE_PAGES,
	}, archDeniedSyscalls()...)
}

// enosysSyscalls are refused with ENOSYS, so that libraries fall back:
// clone3 (its flags sit in memory a filter cannot read; glibc then uses
// clone) and io_uring (libuv then uses its thread pool).
func enosysSyscalls() []uint32 {
	return []uint32{unix.SYS_CLONE3, unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER}
}

func bpfStmt(code uint16, k uint32) unix.SockFilter {
	return unix.SockFilter{Code: code, K: k}
}

func bpfJump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// seccompFilter builds the classic BPF program: other architectures (and
// on amd64 the x32 ABI) are refused, the denied system calls fail, clone
// may not create namespaces, ioctl may not push input into a terminal, and
// everything else is allowed.
func seccompFilter(killAction uint32) []unix.SockFilter {
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	enosys := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	f := []unix.SockFilter{
		bpfStmt(ld, seccompArch),
		bpfJump(jeq, auditArch, 1, 0),
		bpfStmt(ret, killAction),
		bpfStmt(ld, seccompNr),
	}
	if x32Bit != 0 {
		f = append(f, bpfJump(jge, x32Bit, 0, 1), bpfStmt(ret, enosys))
	}
	for _, nr := range deniedSyscalls() {
		f = append(f, bpfJump(jeq, nr, 0, 1), bpfStmt(ret, eperm))
	}
	for _, nr := range enosysSyscalls() {
		f = append(f, bpfJump(jeq, nr, 0, 1), bpfStmt(ret, enosys))
	}
	f = append(f,
		// clone(flags, ...): no namespace flags.
		bpfJump(jeq, unix.SYS_CLONE, 0, 4),
		bpfStmt(ld, seccompArg0),
		bpfJump(jset, nsCloneFlags, 0, 1),
		bpfStmt(ret, eperm),
		bpfStmt(ret, allow),
		// ioctl(fd, cmd, ...): no TIOCSTI, no TIOCLINUX.
		bpfJump(jeq, unix.SYS_IOCTL, 0, 5),
		bpfStmt(ld, seccompArg1),
		bpfJump(jeq, unix.TIOCSTI, 2, 0),
		bpfJump(jeq, unix.TIOCLINUX, 1, 0),
		bpfStmt(ret, allow),
		bpfStmt(ret, eperm),
		bpfStmt(ret, allow),
	)
	return f
}

// seccompAvailable reports whether filters can be installed here.
func seccompAvailable() bool {
	if auditArch == 0 {
		return false
	}
	_, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	return err == nil
}

// killActionFor picks SECCOMP_RET_KILL_PROCESS where the kernel has it
// (4.14) and SECCOMP_RET_KILL_THREAD before.
func killActionFor() uint32 {
	action := uint32(unix.SECCOMP_RET_KILL_PROCESS)
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action))); errno != 0 {
		return unix.SECCOMP_RET_KILL_THREAD
	}
	return action
}

// installSeccomp installs the filter on the calling thread; no_new_privs
// must be set already.
func installSeccomp() error {
	if auditArch == 0 {
		return errors.New("no filter for this architecture")
	}
	f := seccompFilter(killActionFor())
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog)))
	if errno == unix.ENOSYS {
		// Before Linux 3.17.
		return unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0)
	}
	if errno != 0 {
		return errno
	}
	return nil
}
