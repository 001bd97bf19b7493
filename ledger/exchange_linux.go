//go:build linux

package ledger

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// exchangeDirs atomically swaps two directories (renameat2 with
// RENAME_EXCHANGE) and makes the swap durable. On a file system that
// cannot exchange, it falls back to two renames, which leave a moment in
// which dst does not exist.
func exchangeDirs(src, dst string) error {
	err := unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_EXCHANGE)
	if err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP {
		return exchangeByRenames(src, dst)
	}
	if err != nil {
		return fmt.Errorf("exchange %s and %s: %w", src, dst, err)
	}
	return syncOSDir(filepath.Dir(dst))
}

// syncOSDir makes a directory's entries durable.
func syncOSDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }() // opened read-only to sync: nothing to lose
	return d.Sync()
}
