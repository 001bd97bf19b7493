//go:build benchmove

package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"

	"github.com/proofledger/ledger/ledger"
)

// The bench reads a closed ledger's Pebble store directly for three things
// the ledger package does not expose: the sizes of its group commits, a
// sample of present keys for the raw Get limits, and a manual compaction
// before measuring bytes on disk. It relies on three facts of the store
// format (ledger/keys.go, docs/FORMAT.md): the store lives in <dir>/store,
// each committed batch writes one checkpoint under
// "c/" + 8-byte big-endian tree size, and the identity index lives under
// "i/". An exported ledger.Stats (batches committed) and ledger.Compact
// would remove the first two dependencies.
const (
	ledgerStoreDir   = "store"
	checkpointPrefix = "c/"
	identityPrefix   = "i/"
)

// openStore opens a closed ledger's Pebble store with the ledger's options.
func openStore(ledgerDir string, readOnly bool, logger *slog.Logger) (*pebble.DB, error) {
	o := ledger.PebbleOptions(logger)
	o.ReadOnly = readOnly
	db, err := pebble.Open(filepath.Join(ledgerDir, ledgerStoreDir), o)
	if err != nil {
		return nil, fmt.Errorf("open store of %s: %w", ledgerDir, err)
	}
	return db, nil
}

// commitSizes returns the number of events of each batch the ledger
// committed, in order, from the tree sizes of its checkpoints.
func commitSizes(ledgerDir string, logger *slog.Logger) ([]int64, error) {
	db, err := openStore(ledgerDir, true, logger)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	p := []byte(checkpointPrefix)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: []byte("c0")})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []int64
	prev := int64(0)
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != len(p)+8 || !bytes.HasPrefix(k, p) {
			return nil, fmt.Errorf("unexpected checkpoint key %q", k)
		}
		size := int64(binary.BigEndian.Uint64(k[len(p):]))
		if size == 0 {
			continue // the empty ledger's checkpoint, signed by init
		}
		if size <= prev {
			return nil, fmt.Errorf("checkpoint sizes out of order: %d after %d", size, prev)
		}
		out = append(out, size-prev)
		prev = size
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no checkpoints in %s", ledgerDir)
	}
	return out, nil
}

// sampleKeys walks the whole store and keeps a uniform random sample of n
// present keys (reservoir sampling, deterministic for a seed). It also
// returns how many keys the store holds.
func sampleKeys(ctx context.Context, db *pebble.DB, n int, seed uint64) ([][]byte, int64, error) {
	return sampleKeysUnder(ctx, db, nil, n, seed)
}

// sampleKeysUnder is sampleKeys restricted to the keys under prefix.
func sampleKeysUnder(ctx context.Context, db *pebble.DB, prefix []byte, n int, seed uint64) ([][]byte, int64, error) {
	r := rand.New(rand.NewPCG(seed, 0x6b657973))
	opts := &pebble.IterOptions{}
	if len(prefix) > 0 {
		opts.LowerBound, opts.UpperBound = prefix, ledger.PrefixEnd(prefix)
	}
	it, err := db.NewIter(opts)
	if err != nil {
		return nil, 0, err
	}
	defer it.Close()
	out := make([][]byte, 0, n)
	seen := int64(0)
	for ok := it.First(); ok; ok = it.Next() {
		if seen%65536 == 0 && ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		seen++
		if len(out) < n {
			out = append(out, bytes.Clone(it.Key()))
		} else if j := r.Int64N(seen); j < int64(n) {
			out[j] = bytes.Clone(it.Key())
		}
	}
	return out, seen, it.Error()
}

// compactStore flushes the memtable and compacts every key of a closed
// ledger's store, so that its size on disk is what the data needs.
func compactStore(ctx context.Context, ledgerDir string, logger *slog.Logger) error {
	db, err := openStore(ledgerDir, false, logger)
	if err != nil {
		return err
	}
	if err := db.Flush(); err != nil {
		db.Close()
		return fmt.Errorf("flush: %w", err)
	}
	if err := db.Compact(ctx, []byte{0}, []byte{0xff, 0xff}, true); err != nil {
		db.Close()
		return fmt.Errorf("compact: %w", err)
	}
	return db.Close()
}

// dirSize adds up the sizes of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	return total, err
}
