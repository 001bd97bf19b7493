package sandbox

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock access rights by ABI version (include/uapi/linux/landlock.h).
const (
	llReadOnly = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// ABI 1: EXECUTE (1<<0) to MAKE_SYM (1<<12).
	llFsV1        = 1<<13 - 1
	llRefer       = 1 << 13 // ABI 2
	llTruncate    = 1 << 14 // ABI 3
	llIoctlDev    = 1 << 15 // ABI 5
	llMakeDevices = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
	// ABI 6 scopes.
	llScopeAbstractUnix = 1 << 0
	llScopeSignal       = 1 << 1
)

// llRulesetAttr is struct landlock_ruleset_attr as of ABI 6; older kernels
// are given its first 8 or 16 bytes.
type llRulesetAttr struct {
	handledFs, handledNet, scoped uint64
}

// landlockABI returns the kernel's Landlock ABI version, 0 without
// Landlock.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// restrictLandlock confines this thread (and what it execs) to reading and
// executing everywhere, writing only below work and /tmp, and writing the
// harmless /dev nodes; with ABI 6 it may neither signal nor reach abstract
// Unix sockets outside its domain. TCP is left to the network namespace.
func restrictLandlock(abi int, work string) error {
	fsAll := uint64(llFsV1)
	if abi >= 2 {
		fsAll |= llRefer
	}
	if abi >= 3 {
		fsAll |= llTruncate
	}
	if abi >= 5 {
		fsAll |= llIoctlDev
	}
	attr := llRulesetAttr{handledFs: fsAll}
	size := uintptr(8)
	if abi >= 4 {
		size = 16
	}
	if abi >= 6 {
		attr.scoped = llScopeAbstractUnix | llScopeSignal
		size = 24
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("create ruleset: %w", errno)
	}
	defer func() { _ = unix.Close(int(fd)) }()
	fileRights := uint64(unix.LANDLOCK_ACCESS_FS_READ_FILE|unix.LANDLOCK_ACCESS_FS_WRITE_FILE) | fsAll&(llTruncate|llIoctlDev)
	rules := []struct {
		path   string
		access uint64
	}{
		{"/", llReadOnly},
		{work, fsAll &^ llMakeDevices},
		{"/tmp", fsAll &^ llMakeDevices},
		{"/dev/null", fileRights},
		{"/dev/zero", fileRights},
		{"/dev/full", fileRights},
		{"/dev/random", fileRights},
		{"/dev/urandom", fileRights},
	}
	for _, r := range rules {
		if err := landlockAllow(int(fd), r.path, r.access); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("restrict self: %w", errno)
	}
	return nil
}

// landlockAllow adds a path-beneath rule.
func landlockAllow(ruleset int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer func() { _ = unix.Close(fd) }()
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("add rule %s: %w", path, errno)
	}
	return nil
}
