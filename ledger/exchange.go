package ledger

import (
	"fmt"
	"os"
	"path/filepath"
)

// exchangeByRenames swaps src and dst through a third name.
func exchangeByRenames(src, dst string) error {
	tmp := dst + ".exchange"
	if err := os.Rename(dst, tmp); err != nil {
		return err
	}
	if err := os.Rename(src, dst); err != nil {
		// Put dst back; when that fails too, dst is only at tmp: say so.
		if rerr := os.Rename(tmp, dst); rerr != nil {
			return fmt.Errorf("exchange: %w; %s is left at %s (moving it back failed: %v)", err, dst, tmp, rerr)
		}
		return err
	}
	if err := os.Rename(tmp, src); err != nil {
		return fmt.Errorf("exchange: %w", err)
	}
	return syncOSDir(filepath.Dir(dst))
}
