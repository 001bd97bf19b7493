package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/ledger"
)

// The limits that need a Pebble store keep stores of their own, in the
// work directory, opened with the ledger's Pebble options so that the
// figure and its limit meet the same engine. They are filled with the data
// the figure works on, read from the ledger through its public API
// (Checkpoints, Scan, Snapshot); the ledger's own store is never opened,
// and nothing here depends on how the ledger lays out its keys.

// limitBatchBytes is the size at which a limit store's unsynced batch is
// committed while it is filled.
const limitBatchBytes = 4 << 20

// openLimitStore opens (creating it unless readOnly) a limit store at dir
// with the ledger's Pebble options.
func (b *bench) openLimitStore(dir string, readOnly bool) (*pebble.DB, error) {
	o := ledger.PebbleOptions(b.log)
	o.ReadOnly = readOnly
	db, err := pebble.Open(dir, o)
	if err != nil {
		return nil, fmt.Errorf("limit store %s: %w", filepath.Base(dir), err)
	}
	return db, nil
}

// freshDir removes what an interrupted run in --dir left at dir and
// returns dir. A leftover it cannot remove is an error: a limit store
// opened on it would hold more than the limit it measures.
func freshDir(dir string) (string, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("remove a leftover: %w", err)
	}
	return dir, nil
}

// settle flushes a limit store's memtable and compacts all its keys, so
// that the limit reads a store in its best shape whatever order it was
// written in.
func settle(ctx context.Context, db *pebble.DB) error {
	if err := db.Flush(); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if err := db.Compact(ctx, []byte{0}, []byte{0xff, 0xff}, true); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// batchWriter fills a limit store in unsynced batches of about
// limitBatchBytes (a limit store is rebuilt by every run: nothing in it
// needs to survive a crash).
type batchWriter struct {
	db    *pebble.DB
	batch *pebble.Batch
	keys  int64
}

func newBatchWriter(db *pebble.DB) *batchWriter { return &batchWriter{db: db, batch: db.NewBatch()} }

// set adds a key; the batch copies key and value.
func (w *batchWriter) set(key, value []byte) error {
	if err := w.batch.Set(key, value, nil); err != nil {
		return err
	}
	w.keys++
	if w.batch.Len() >= limitBatchBytes {
		return w.commit()
	}
	return nil
}

func (w *batchWriter) commit() error {
	if w.batch.Empty() {
		return nil
	}
	err := w.batch.Commit(pebble.NoSync)
	_ = w.batch.Close() // releases memory; fails only for a batch closed twice
	w.batch = w.db.NewBatch()
	return err
}

// close commits what is pending and releases the batch.
func (w *batchWriter) close() error {
	err := w.commit()
	_ = w.batch.Close() // releases memory; fails only for a batch closed twice
	return err
}

// commitSizes returns the number of events of each batch the ledger
// committed, in order: the differences of the sizes of its checkpoints
// (each committed batch signs one).
func commitSizes(l *ledger.Ledger) ([]int64, error) {
	var out []int64
	prev := int64(0)
	err := l.Checkpoints(func(size int64, _ []byte) (bool, error) {
		if size == 0 {
			return true, nil // the empty ledger's checkpoint, signed by Init
		}
		if size <= prev {
			return false, fmt.Errorf("checkpoint sizes out of order: %d after %d", size, prev)
		}
		out = append(out, size-prev)
		prev = size
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no checkpoint beyond the empty ledger's in %s", l.Dir())
	}
	if prev != l.Size() {
		return nil, fmt.Errorf("checkpoints cover %d events, the ledger holds %d", prev, l.Size())
	}
	return out, nil
}

// Keys of the lookup limit store, one keyspace per tag byte: the data a
// lookup or a replay check reads and that makes a ledger's store the size
// it is, for every event. The encoding is the bench's own.
const (
	tagIdentity = 'i' // i <kind> 0 <id>  → seq (8 bytes), SHA-256 of the document
	tagDigest   = 'g' // g <sha256>       → seq (8 bytes), kind, 0, id
	tagLeaf     = 'l' // l <seq>          → the encoded leaf (proof.Leaf.Encode)
	tagDocument = 'd' // d <seq>          → the document
	tagHash     = 'h' // h <stored index> → 32-byte tlog stored hash
)

// identityKey is the lookup limit store's key of a document identity.
func identityKey(kind codec.Kind, id string) []byte {
	k := make([]byte, 0, 2+len(kind)+len(id))
	k = append(k, tagIdentity)
	k = append(k, kind...)
	k = append(k, 0)
	return append(k, id...)
}

// seqKey is a key of tag and an 8-byte big-endian number.
func seqKey(tag byte, n int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{tag}, uint64(n))
}

// lookupStore is a filled lookup limit store.
type lookupStore struct {
	db *pebble.DB
	// present is a uniform random sample of its keys.
	present [][]byte
	// keys is how many keys it holds.
	keys int64
}

// fillLookupStore writes into db, for every event of l (read with
// l.ScanContext, documents included), its identity entry, digest entry,
// leaf, document and tree hashes, and keeps a uniform random sample of
// sampleSize of the keys written (reservoir sampling, deterministic for a
// seed). It then settles the store.
func (b *bench) fillLookupStore(ctx context.Context, l *ledger.Ledger, db *pebble.DB, sampleSize int) (*lookupStore, error) {
	r := rand.New(rand.NewPCG(b.sizes.Seed, 0x6b657973))
	st := &lookupStore{db: db, present: make([][]byte, 0, sampleSize)}
	w := newBatchWriter(db)
	put := func(k, v []byte) error {
		st.keys++
		if len(st.present) < sampleSize {
			st.present = append(st.present, bytes.Clone(k))
		} else if j := r.Int64N(st.keys); j < int64(sampleSize) {
			st.present[j] = bytes.Clone(k)
		}
		return w.set(k, v)
	}
	// The tree's stored hashes, kept in memory as they are computed.
	hashes := make([]tlog.Hash, 0, 2*l.Size()+64)
	reader := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x < 0 || x >= int64(len(hashes)) {
				return nil, fmt.Errorf("hash %d not stored", x)
			}
			out[i] = hashes[x]
		}
		return out, nil
	})
	var val []byte
	err := l.ScanContext(ctx, 0, true, func(ev *ledger.Event) (bool, error) {
		seq := ev.Seq
		val = binary.BigEndian.AppendUint64(val[:0], uint64(seq))
		val = append(val, ev.Digest[:]...)
		if err := put(identityKey(ev.Kind, ev.ID), val); err != nil {
			return false, err
		}
		val = binary.BigEndian.AppendUint64(val[:0], uint64(seq))
		val = append(append(append(val, ev.Kind...), 0), ev.ID...)
		if err := put(append([]byte{tagDigest}, ev.Digest[:]...), val); err != nil {
			return false, err
		}
		leaf := ev.Leaf.Encode()
		if err := put(seqKey(tagLeaf, seq), leaf); err != nil {
			return false, err
		}
		if err := put(seqKey(tagDocument, seq), ev.Data); err != nil {
			return false, err
		}
		hs, err := tlog.StoredHashesForRecordHash(seq, tlog.RecordHash(leaf), reader)
		if err != nil {
			return false, err
		}
		for _, h := range hs {
			if err := put(seqKey(tagHash, int64(len(hashes))), h[:]); err != nil {
				return false, err
			}
			hashes = append(hashes, h)
		}
		return true, nil
	})
	if cerr := w.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if err := settle(ctx, db); err != nil {
		return nil, err
	}
	return st, nil
}

// copyProjections copies every key of the projections (the
// ledger.ProjectionPrefix keyspace, read through snap) into db and
// settles it. It returns the number of keys copied.
func copyProjections(ctx context.Context, snap *ledger.Snapshot, db *pebble.DB) (int64, error) {
	w := newBatchWriter(db)
	err := snap.RangePrefix(ledger.ProjectionPrefix, func(k, v []byte) (bool, error) {
		if w.keys%65536 == 0 && ctx.Err() != nil {
			return false, ctx.Err()
		}
		return true, w.set(k, v)
	})
	if cerr := w.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("copy projections: %w", err)
	}
	if w.keys == 0 {
		return 0, errors.New("copy projections: the ledger has none")
	}
	return w.keys, settle(ctx, db)
}

// copyLeaves writes the encoded leaf of every event of l (read with
// l.ScanContext, without documents) into db under its sequence number,
// and settles it.
func copyLeaves(ctx context.Context, l *ledger.Ledger, db *pebble.DB) error {
	w := newBatchWriter(db)
	err := l.ScanContext(ctx, 0, false, func(ev *ledger.Event) (bool, error) {
		return true, w.set(seqKey(tagLeaf, ev.Seq), ev.Leaf.Encode())
	})
	if cerr := w.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy leaves: %w", err)
	}
	return settle(ctx, db)
}

// dirSize adds up the sizes of the regular files under dir, each file once.
func dirSize(dir string) (int64, error) {
	var total int64
	// A read copy hard links the store's tables: a file is counted once
	// however many names it has, as du(1) counts it.
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				k := inode{uint64(st.Dev), st.Ino}
				if seen[k] {
					return nil
				}
				seen[k] = true
			}
			total += info.Size()
		}
		return nil
	})
	return total, err
}
