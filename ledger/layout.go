package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Files inside a ledger directory (docs/FORMAT.md). Every file is reached
// through a vfs.FS, so that tests run the ledger on Pebble's in-memory and
// error-injecting file systems.
const (
	formatFile    = "LEDGER"      // the ledger's own format file; its absence means "not a ledger"
	storeDir      = "store"       // the Pebble database
	logKeyFile    = "log.key"     // Ed25519 log key, PKCS#8 PEM
	logPubFile    = "log.pub"     // signed-note verifier key
	ckptLogFile   = "checkpoints" // every signed checkpoint, append-only (ckptlog.go)
	secretsDir    = "secrets"     // HMAC secrets, one file each (secrets.go)
	defaultOrigin = "ledger.local"
)

// dirMode is the mode of a ledger directory and of its secrets directory:
// only the owner may list or read them.
const dirMode = 0o700

// formatMagic is the first line of the format file.
const formatMagic = "proofledger ledger"

// maxSmallFile bounds the small files of a ledger directory (format file,
// keys) when they are read: a damaged or hostile file cannot make the
// ledger read gigabytes.
const maxSmallFile = 64 << 10

// encodeFormatFile returns the content of the format file.
func encodeFormatFile(version int) []byte {
	return fmt.Appendf(nil, "%s\nformat %d\n", formatMagic, version)
}

// parseFormatFile reads the format file's version.
func parseFormatFile(b []byte) (int, error) {
	magic, rest, ok := bytes.Cut(b, []byte("\n"))
	if !ok || string(magic) != formatMagic {
		return 0, fmt.Errorf("%w: %s: first line is not %q", ErrCorrupt, formatFile, formatMagic)
	}
	line, rest, ok := bytes.Cut(rest, []byte("\n"))
	v, found := bytes.CutPrefix(line, []byte("format "))
	n, err := strconv.Atoi(string(v))
	if !ok || !found || err != nil || n <= 0 || len(rest) != 0 || string(v) != strconv.Itoa(n) {
		return 0, fmt.Errorf("%w: %s: want a line \"format N\" and nothing after it", ErrCorrupt, formatFile)
	}
	return n, nil
}

// readSmallFile reads a whole file of at most max bytes.
func readSmallFile(fs vfs.FS, name string, max int64) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only: nothing to lose
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, max)
	}
	return b, nil
}

// writeFileDurable writes a new file (replacing any old one through a
// rename, so readers see the old or the new content, never a mix), syncs
// it and its directory, and restricts its mode where the file system has
// modes.
func writeFileDurable(fs vfs.FS, name string, data []byte, mode os.FileMode) error {
	tmp := name + ".tmp"
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	// On failure the temporary file is never renamed into place: the
	// first error is the one to report, and Close only frees it.
	if err := chmodOS(fs, tmp, mode); err != nil {
		_ = f.Close()
		return err
	}
	if _, err := f.Write(bytes.Clone(data)); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename(tmp, name); err != nil {
		return err
	}
	return syncDir(fs, fs.PathDir(name))
}

// syncDir makes a directory's entries durable.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close() // the failed sync is the error to report
		return err
	}
	return d.Close()
}

// mkdirPrivate creates dir (and its parents) and gives it dirMode; a new
// directory's entry is synced in its parent.
func mkdirPrivate(fs vfs.FS, dir string) error {
	existed, err := exists(fs, dir)
	if err != nil {
		return err
	}
	if err := fs.MkdirAll(dir, dirMode); err != nil {
		return err
	}
	if err := chmodOS(fs, dir, dirMode); err != nil {
		return err
	}
	if existed {
		return nil
	}
	return syncDir(fs, fs.PathDir(dir))
}

// chmodOS sets a file's mode when fs is the operating system's file system
// (vfs.FS has no modes; the in-memory file systems of tests need none).
func chmodOS(fs vfs.FS, name string, mode os.FileMode) error {
	if vfs.Root(fs) != vfs.Default {
		return nil
	}
	return os.Chmod(name, mode)
}

// exists reports whether name exists; errors other than "does not exist"
// are returned.
func exists(fs vfs.FS, name string) (bool, error) {
	_, err := fs.Stat(name)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, err
}
