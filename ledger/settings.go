package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// Settings configure how documents are checked (registered governance
// policies, freshness rules); they live in the store under setting/ but are
// not part of the log. Secrets (HMAC keys) live outside the store, one file
// each under secrets/ (directory 0700, files 0600, in a ledger directory
// that is itself 0700): never in SST or WAL files, which keep overwritten
// and deleted values until compaction and log recycling get to them. What
// the settings and secrets mean is the registry's business (package
// registry); the store only keeps them.

// ErrBadName: a setting or secret name the store cannot keep.
var ErrBadName = errors.New("bad name")

// validName reports whether name can name a setting or a secret: 1 to 128
// letters, digits, '.', '_', '-' or '/' (settings only), not starting with
// '.' or '/'.
func validName(name string, slash bool) error {
	if name == "" || len(name) > 128 || name[0] == '.' || name[0] == '/' {
		return fmt.Errorf("%w %.130q: want 1 to 128 characters, not starting with '.' or '/'", ErrBadName, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' || slash && r == '/') {
			return fmt.Errorf("%w %q: only letters, digits, '.', '_' and '-'", ErrBadName, name)
		}
	}
	return nil
}

// SetSetting stores a setting durably.
func (l *Ledger) SetSetting(name string, value []byte) error {
	if l.readOnly {
		return ErrReadOnly
	}
	if err := validName(name, true); err != nil {
		return err
	}
	l.nonLogChange.Store(true)
	return l.db.Set(join(prefixSetting, []byte(name)), value, pebble.Sync)
}

// DeleteSetting removes a setting durably; removing one that does not
// exist is not an error.
func (l *Ledger) DeleteSetting(name string) error {
	if l.readOnly {
		return ErrReadOnly
	}
	if err := validName(name, true); err != nil {
		return err
	}
	return l.db.Delete(join(prefixSetting, []byte(name)), pebble.Sync)
}

// Settings calls fn for every setting whose name starts with prefix, in
// name order, as the store holds them now.
func (l *Ledger) Settings(prefix string, fn func(name string, value []byte) error) (err error) {
	p := join(prefixSetting, []byte(prefix))
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return storeErr(err)
	}
	defer closeIter(it, &err)
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(string(it.Key()[len(prefixSetting):]), bytes.Clone(it.Value())); err != nil {
			return err
		}
	}
	return storeErr(it.Error())
}

// maxSecretSize bounds a secret file.
const maxSecretSize = 64 << 10

// PutSecret stores a secret in its own file under secrets/, created 0600
// and replaced atomically.
func (l *Ledger) PutSecret(name string, value []byte) error {
	if l.readOnly {
		return ErrReadOnly
	}
	if err := validName(name, false); err != nil {
		return err
	}
	if len(value) == 0 || len(value) > maxSecretSize {
		return fmt.Errorf("secret %q: %d bytes, want 1 to %d", name, len(value), maxSecretSize)
	}
	return l.putSecret(name, value)
}

func (l *Ledger) putSecret(name string, value []byte) error {
	dir := l.path(secretsDir)
	if err := mkdirPrivate(l.fs, dir); err != nil {
		return err
	}
	return writeFileDurable(l.fs, l.fs.PathJoin(dir, name), value, 0o600)
}

// Secrets calls fn for every secret whose name starts with prefix, in name
// order.
func (l *Ledger) Secrets(prefix string, fn func(name string, value []byte) error) error {
	dir := l.path(secretsDir)
	names, err := l.fs.List(dir)
	if err != nil {
		if ok, serr := exists(l.fs, dir); serr == nil && !ok {
			return nil
		}
		return fmt.Errorf("list %s: %w", dir, err)
	}
	sort.Strings(names)
	for _, n := range names {
		if !strings.HasPrefix(n, prefix) || strings.HasSuffix(n, ".tmp") {
			continue
		}
		if validName(n, false) != nil {
			return fmt.Errorf("%w: %s: unexpected file %q", ErrCorrupt, dir, n)
		}
		v, err := readSmallFile(l.fs, l.fs.PathJoin(dir, n), maxSecretSize)
		if err != nil {
			return fmt.Errorf("secret %q: %w", n, err)
		}
		if err := fn(n, v); err != nil {
			return err
		}
	}
	return nil
}
