package sandbox

import "golang.org/x/sys/unix"

// auditArch is the AUDIT_ARCH value the seccomp filter accepts.
const auditArch = unix.AUDIT_ARCH_X86_64

// x32Bit marks x32 system call numbers, which the filter refuses.
const x32Bit = 0x40000000

// archDeniedSyscalls are denied on this architecture only.
func archDeniedSyscalls() []uint32 {
	return []uint32{unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_MODIFY_LDT, unix.SYS_USELIB}
}
