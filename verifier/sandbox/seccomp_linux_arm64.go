package sandbox

import "golang.org/x/sys/unix"

// auditArch is the AUDIT_ARCH value the seccomp filter accepts.
const auditArch = unix.AUDIT_ARCH_AARCH64

// x32Bit is zero: arm64 has no x32-like second ABI.
const x32Bit = 0

// archDeniedSyscalls are denied on this architecture only.
func archDeniedSyscalls() []uint32 { return nil }
