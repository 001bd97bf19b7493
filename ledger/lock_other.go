//go:build !linux && !darwin

package ledger

import (
	"errors"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// osLocker has no implementation on this system: ledgers on the operating
// system's file system need flock(2) (Linux, macOS).
type osLocker struct{}

func (osLocker) TryLock(vfs.FS, string, bool) (FileLock, error) {
	return nil, errors.New("ledger: file locks need Linux or macOS")
}

// processAlive cannot tell here: it assumes the process runs.
func processAlive(int) bool { return true }
