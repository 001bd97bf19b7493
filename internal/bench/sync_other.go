//go:build !linux

package bench

import "os"

// datasync flushes f to stable storage (fsync: the portable fallback of
// fdatasync).
func datasync(f *os.File) error { return f.Sync() }
