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
		os.Rename(tmp, dst)
		return err
	}
	if err := os.Rename(tmp, src); err != nil {
		return fmt.Errorf("exchange: %w", err)
	}
	return syncOSDir(filepath.Dir(dst))
}
