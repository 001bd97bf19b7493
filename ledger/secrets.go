package ledger

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/proofledger/ledger/codec/keys"
)

// HMAC keys registered in a ledger are secrets. They live outside the
// Pebble store, one file per key under secrets/ (directory 0700, files
// 0600, in a ledger directory that is itself 0700): never in SST or WAL
// files, which keep overwritten and deleted values until compaction and
// log recycling get to them, and which are read by anyone who can read
// the store.

// secretPrefix starts the name of a key's file in secrets/.
const secretPrefix = "hmac-"

// ValidKeyName reports whether name can name a registered HMAC key: 1 to
// 64 letters, digits, '.', '_' or '-', not starting with '.'.
func ValidKeyName(name string) error {
	if name == "" || len(name) > 64 || name[0] == '.' {
		return fmt.Errorf("HMAC key name %.70q: want 1 to 64 characters, not starting with '.'", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("HMAC key name %q: only letters, digits, '.', '_' and '-'", name)
		}
	}
	return nil
}

// AddHMACKey registers a named HMAC key for verifying witness bundles. It
// returns added false (and no error) when the same key is already
// registered under that name, and an error wrapping ErrExists when a
// different one is.
func (l *Ledger) AddHMACKey(k keys.HMACKey) (added bool, err error) {
	if l.readOnly {
		return false, ErrReadOnly
	}
	if err := ValidKeyName(k.Name); err != nil {
		return false, err
	}
	if len(k.Secret) == 0 {
		return false, fmt.Errorf("HMAC key %q: empty secret", k.Name)
	}
	have, err := l.HMACKeys()
	if err != nil {
		return false, err
	}
	for _, h := range have {
		if h.Name == k.Name {
			if subtle.ConstantTimeCompare(h.Secret, k.Secret) == 1 {
				return false, nil
			}
			return false, fmt.Errorf("HMAC key %q: %w with a different secret (%s)", k.Name, ErrExists, HMACKeyID(h.Secret))
		}
	}
	if err := l.writeSecret(k); err != nil {
		return false, err
	}
	l.dropSettings()
	return true, nil
}

func (l *Ledger) writeSecret(k keys.HMACKey) error {
	dir := l.path(secretsDir)
	if err := mkdirPrivate(l.fs, dir); err != nil {
		return err
	}
	return writeFileDurable(l.fs, l.fs.PathJoin(dir, secretPrefix+k.Name), k.Secret, 0o600)
}

// HMACKeys returns the registered HMAC keys in name order.
func (l *Ledger) HMACKeys() ([]keys.HMACKey, error) {
	dir := l.path(secretsDir)
	names, err := l.fs.List(dir)
	if err != nil {
		if ok, serr := exists(l.fs, dir); serr == nil && !ok {
			return nil, nil
		}
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	sort.Strings(names)
	var out []keys.HMACKey
	for _, n := range names {
		name, ok := strings.CutPrefix(n, secretPrefix)
		if !ok || strings.HasSuffix(n, ".tmp") {
			continue
		}
		if ValidKeyName(name) != nil {
			return nil, fmt.Errorf("%w: %s: unexpected file %q", ErrCorrupt, dir, n)
		}
		secret, err := readSmallFile(l.fs, l.fs.PathJoin(dir, n), keys.MaxHMACKeySize)
		if err != nil {
			return nil, fmt.Errorf("HMAC key %q: %w", name, err)
		}
		if len(secret) == 0 {
			return nil, fmt.Errorf("%w: HMAC key %q: empty file", ErrCorrupt, name)
		}
		out = append(out, keys.HMACKey{Name: name, Secret: secret})
	}
	return out, nil
}

// legacySecretPrefix is where format 1 kept HMAC secrets, in the store.
var legacySecretPrefix = []byte("s/hmac/")

// moveSecretsOut moves HMAC secrets a format-1 store kept into files,
// deletes them from the store and compacts their key range, so that they
// leave the store's tables.
func (l *Ledger) moveSecretsOut() (err error) {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: legacySecretPrefix, UpperBound: prefixEnd(legacySecretPrefix)})
	if err != nil {
		return err
	}
	var found []keys.HMACKey
	for ok := it.First(); ok; ok = it.Next() {
		found = append(found, keys.HMACKey{Name: string(it.Key()[len(legacySecretPrefix):]), Secret: bytes.Clone(it.Value())})
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	if len(found) == 0 {
		return nil
	}
	for _, k := range found {
		if ValidKeyName(k.Name) != nil {
			k.Name = "key-" + strings.TrimPrefix(HMACKeyID(k.Secret), "hmac:")
		}
		if err := l.writeSecret(k); err != nil {
			return err
		}
	}
	if err := l.db.DeleteRange(legacySecretPrefix, prefixEnd(legacySecretPrefix), pebble.Sync); err != nil {
		return err
	}
	if err := l.db.Flush(); err != nil {
		return err
	}
	return l.db.Compact(context.Background(), legacySecretPrefix, prefixEnd(legacySecretPrefix), true)
}
