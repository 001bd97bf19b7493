//go:build !linux

package ledger

import (
	"os"
)

// exchangeDirs swaps two directories with two renames (this system has no
// atomic exchange): there is a moment in which dst does not exist.
func exchangeDirs(src, dst string) error { return exchangeByRenames(src, dst) }

// syncOSDir makes a directory's entries durable.
func syncOSDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }() // opened read-only to sync: nothing to lose
	return d.Sync()
}
