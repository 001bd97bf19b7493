package admit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofledger/ledger/ledger"
)

// TestUpgradeTakesWriterLock: the read-only open that upgrades a ledger
// of an earlier format writes, so it takes the writer lock: while another
// process holds it the open is busy and changes nothing; once it is free,
// the same open upgrades and reads.
func TestUpgradeTakesWriterLock(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ledger")
	untar(t, "../../testdata/legacy/format2.tar.gz", dir)
	wl, err := ledger.LockWriter(ctx, dir, ledger.LockOptions{Command: "another writer"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, ledger.Options{ReadOnly: true})
	if !errors.Is(err, ledger.ErrBusy) || !strings.Contains(err.Error(), "another writer") {
		t.Errorf("read-only open of a format-2 ledger while a writer holds it: %v, want ErrBusy naming it", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "LEDGER")); err != nil || !strings.Contains(string(b), "format 2") {
		t.Errorf("LEDGER after the refused open: %q %v, want format 2 still", b, err)
	}
	if err := wl.Unlock(); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	if l.Size() != 8 {
		t.Errorf("%d events after the upgrade, want 8", l.Size())
	}
}

// TestImportHoldsTargetLock: an import into an existing ledger holds its
// writer lock; while another writer holds it the import is busy and the
// target is left as it was.
func TestImportHoldsTargetLock(t *testing.T) {
	ctx := context.Background()
	src := newLedger(t, ledger.Options{})
	appendReceipts(t, src, 0, 5)
	archive := compress(t, archiveLines(t, src))
	dir := filepath.Join(t.TempDir(), "target")
	if err := ledger.Init(dir, ledger.InitOptions{Origin: "target"}); err != nil {
		t.Fatal(err)
	}
	wl, err := ledger.LockWriter(ctx, dir, ledger.LockOptions{Command: "another writer"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Import(ctx, dir, bytes.NewReader(archive), ImportOptions{}); !errors.Is(err, ledger.ErrBusy) {
		t.Errorf("import while a writer holds the target: %v, want ErrBusy", err)
	}
	if err := wl.Unlock(); err != nil {
		t.Fatal(err)
	}
	st, err := Import(ctx, dir, bytes.NewReader(archive), ImportOptions{})
	if err != nil || st.Events != 5 {
		t.Fatalf("import once the lock is free: %+v %v", st, err)
	}
	// The imported ledger's readers read the copy its staging writer left.
	l, err := Open(dir, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	if s := l.Source(); !s.Copy || s.Size != 5 || s.Behind() {
		t.Errorf("reader of the imported ledger: source %+v, want its current read copy", s)
	}
}
