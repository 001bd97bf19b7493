package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/proofledger/ledger/proof"
)

// Formats 1 and 2 named their keyspaces with one letter (docs/FORMAT.md
// keeps their table). Format 3 names them for what they hold, keeps only
// the store's own facts in the identity entry (a receipt's chain position
// and agent moved to the admission rules' chain/ keyspace), and leaves the
// rules' keyspaces and the projections to be rebuilt from the leaves.

// legacyFormatKey is where formats 1 and 2 kept their format version.
var legacyFormatKey = []byte("m/format")

// legacyMoves maps the keyspaces of formats 1 and 2 to format 3's, with
// how each value changes.
var legacyMoves = []struct {
	from, to []byte
	value    func([]byte) ([]byte, error)
}{
	{from: []byte("e/"), to: prefixLeaf},
	{from: []byte("p/"), to: prefixDoc},
	{from: []byte("h/"), to: prefixHash},
	{from: []byte("c/"), to: prefixCkpt},
	{from: []byte("i/"), to: prefixIdent, value: func(v []byte) ([]byte, error) {
		// seq and digest stay; a receipt's chain facts are the rules' now.
		if len(v) < 40 {
			return nil, fmt.Errorf("%w: identity entry of %d bytes", ErrCorrupt, len(v))
		}
		return v[:40], nil
	}},
	{from: []byte("d/"), to: prefixDigest},
	{from: []byte("t/"), to: prefixTime},
	{from: []byte("s/policy/"), to: join(prefixSetting, []byte("policy/"))},
}

// legacyDerived are the keyspaces of formats 1 and 2 that are rebuilt from
// the leaves after an upgrade: the chain and task indexes (now the
// admission rules') and the projections.
var legacyDerived = [][]byte{[]byte("k/"), []byte("K/"), []byte("n/"), []byte("x/")}

// legacySecretPrefix is where format 1 kept HMAC secrets, in the store.
var legacySecretPrefix = []byte("s/hmac/")

// LegacySecretPrefix names, among the secrets, the HMAC keys an upgrade
// moved out of a format-1 store: "hmac-<name>", the name the registry
// gives registered HMAC keys.
const LegacySecretPrefix = "hmac-"

// isLegacy reports whether the store uses the one-letter keyspaces of
// formats 1 and 2.
func isLegacy(r pebble.Reader) (bool, error) {
	_, err := getCopy(r, legacyFormatKey)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, err
}

// upgradeLegacy brings a format-1 or format-2 store to format 3, in place.
// Every step can be repeated, and the store stays legacy (m/format) until
// the last batch, so an interrupted upgrade resumes on the next open:
//
//  1. HMAC secrets of format 1 move to secrets/ and leave the store;
//  2. every store keyspace is renamed, in batches of 4,096 keys;
//  3. the rules' keyspaces and the projections are dropped;
//  4. an empty format-1 ledger gets its size-0 checkpoint, and a format-1
//     ledger its checkpoint log, written from the checkpoints it kept;
//  5. one batch writes the meta/ keys (with the rebuilding mark and format
//  3. and deletes the m/ keys;
//  6. the LEDGER format file says 3.
//
// The next write open then rebuilds the rules' entries and the
// projections from the leaves (the rebuilding mark).
func upgradeLegacy(dir string, fs vfs.FS, logger *slog.Logger) (err error) {
	po := pebbleOptions(pebbleLogger{l: logger})
	po.FS, po.ErrorIfNotExists = fs, true
	defer recoverFatal(&err)
	db, err := pebble.Open(fs.PathJoin(dir, storeDir), po)
	if err != nil {
		return fmt.Errorf("open store: %w", storeErr(err))
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	get := func(k string) ([]byte, error) { return getCopy(db, []byte(k)) }
	fv, err := get("m/format")
	if err != nil {
		return err
	}
	format, n := binary.Uvarint(fv)
	if n != len(fv) || format < 1 || format > 2 {
		return fmt.Errorf("%w: m/format: %x", ErrCorrupt, fv)
	}
	origin, err := get("m/origin")
	if err != nil {
		return fmt.Errorf("m/origin: %w", err)
	}
	sizeV, err := get("m/size")
	if err != nil {
		return fmt.Errorf("m/size: %w", err)
	}
	size, err := be64([]byte("m/size"), sizeV)
	if err != nil {
		return err
	}
	logger.Warn("upgrading the ledger's store to format 3 (once)", "dir", dir, "from", format, "events", size)
	// 1. Secrets out of the store.
	if err := moveLegacySecrets(db, fs, fs.PathJoin(dir, secretsDir)); err != nil {
		return err
	}
	// 2. and 3. Keyspaces renamed, derived ones dropped.
	for _, m := range legacyMoves {
		if err := moveKeys(db, m.from, m.to, m.value); err != nil {
			return fmt.Errorf("move %s to %s: %w", m.from, m.to, err)
		}
	}
	for _, p := range legacyDerived {
		if err := db.DeleteRange(p, prefixEnd(p), pebble.NoSync); err != nil {
			return err
		}
	}
	// 4. The size-0 checkpoint and the checkpoint log.
	priv, err := keyOf(fs, dir)
	if err != nil {
		return fmt.Errorf("log key: %w", err)
	}
	signer, err := newNoteSigner(string(origin), priv)
	if err != nil {
		return err
	}
	if size == 0 {
		if _, err := getCopy(db, checkpointKey(0)); errors.Is(err, ErrNotFound) {
			note, err := signer.sign(proof.Checkpoint{Origin: string(origin), Size: 0, Root: proof.EmptyRoot()})
			if err != nil {
				return err
			}
			if err := db.Set(checkpointKey(0), note, pebble.Sync); err != nil {
				return err
			}
		}
	}
	if ok, err := exists(fs, fs.PathJoin(dir, ckptLogFile)); err != nil {
		return err
	} else if !ok || format == 1 {
		if err := writeCkptLogFromStore(db, fs, fs.PathJoin(dir, ckptLogFile), func(note []byte) error {
			c, err := proof.OpenCheckpoint(note, signer.vkey)
			if err == nil && c.Origin != string(origin) {
				err = fmt.Errorf("origin %q", c.Origin)
			}
			return err
		}); err != nil {
			return err
		}
	}
	// 5. The meta/ keys, in one batch: from here on the store is format 3.
	b := db.NewBatch()
	defer func() { _ = b.Close() }() // releases memory; fails only for a batch closed twice
	errs := []error{
		b.Set(keyOrigin, origin, nil),
		b.Set(keySize, sizeV, nil),
		b.Set(keyRebuilding, []byte{1}, nil),
		b.Set(keyFormat, binary.AppendUvarint(nil, FormatVersion), nil),
		b.DeleteRange([]byte("m/"), prefixEnd([]byte("m/")), nil),
	}
	if lt, err := get("m/last_time"); err == nil {
		errs = append(errs, b.Set(keyLastTime, lt, nil))
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	if err := db.Flush(); err != nil {
		return err
	}
	if err := db.Compact(context.Background(), []byte("c/"), []byte("u/"), true); err != nil {
		return fmt.Errorf("compact the old keyspaces: %w", err)
	}
	// 6. The format file.
	if err := writeFileDurable(fs, fs.PathJoin(dir, formatFile), encodeFormatFile(FormatVersion), 0o644); err != nil {
		return err
	}
	return chmodOS(fs, dir, dirMode)
}

// moveKeys renames every key under from to the same suffix under to,
// changing values with value (when set), in batches.
func moveKeys(db *pebble.DB, from, to []byte, value func([]byte) ([]byte, error)) error {
	for {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: from, UpperBound: prefixEnd(from)})
		if err != nil {
			return err
		}
		b := db.NewBatch()
		n := 0
		var errs []error
		for ok := it.First(); ok && n < 4096; ok = it.Next() {
			v := it.Value()
			if value != nil {
				if v, err = value(v); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", KeyName(it.Key()), err))
					break
				}
			}
			errs = append(errs, b.Set(join(to, it.Key()[len(from):]), v, nil), b.Delete(it.Key(), nil))
			n++
		}
		errs = append(errs, it.Error(), it.Close())
		if err := errors.Join(errs...); err != nil {
			_ = b.Close() // releases memory; fails only for a batch closed twice
			return err
		}
		if n == 0 {
			return b.Close()
		}
		err = b.Commit(pebble.NoSync)
		_ = b.Close() // releases memory; fails only for a batch closed twice
		if err != nil {
			return err
		}
	}
}

// moveLegacySecrets writes the HMAC secrets a format-1 store kept to
// secret files and deletes them from the store.
func moveLegacySecrets(db *pebble.DB, fs vfs.FS, dir string) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: legacySecretPrefix, UpperBound: prefixEnd(legacySecretPrefix)})
	if err != nil {
		return err
	}
	type secret struct {
		name  string
		value []byte
	}
	var found []secret
	for ok := it.First(); ok; ok = it.Next() {
		found = append(found, secret{string(it.Key()[len(legacySecretPrefix):]), bytes.Clone(it.Value())})
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	if len(found) == 0 {
		return nil
	}
	if err := mkdirPrivate(fs, dir); err != nil {
		return err
	}
	for _, s := range found {
		name := LegacySecretPrefix + s.name
		if validName(name, false) != nil {
			name = fmt.Sprintf("%skey-%x", LegacySecretPrefix, sha256Sum([]byte(s.name)))[:len(LegacySecretPrefix)+20]
		}
		if err := writeFileDurable(fs, fs.PathJoin(dir, name), s.value, 0o600); err != nil {
			return err
		}
	}
	return db.DeleteRange(legacySecretPrefix, prefixEnd(legacySecretPrefix), pebble.Sync)
}

// writeCkptLogFromStore writes a checkpoint log holding every checkpoint
// the store kept, each checked by verify.
func writeCkptLogFromStore(db *pebble.DB, fs vfs.FS, name string, verify func([]byte) error) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: prefixCkpt, UpperBound: prefixEnd(prefixCkpt)})
	if err != nil {
		return err
	}
	var all []byte
	for ok := it.First(); ok; ok = it.Next() {
		if err := verify(it.Value()); err != nil {
			_ = it.Close() // the failed check is the error to report
			return fmt.Errorf("%w: stored checkpoint %s: %v", ErrCorrupt, KeyName(it.Key()), err)
		}
		all = append(all, encodeCkptRecords(it.Value())...)
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	return writeFileDurable(fs, name, all, 0o644)
}
