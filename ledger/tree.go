package ledger

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"golang.org/x/mod/sumdb/tlog"
)

func sha256Sum(b []byte) [sha256.Size]byte { return sha256.Sum256(b) }

// hashReader reads tlog stored hashes from the store, seeing first the
// hashes of a batch that is still being built.
type hashReader struct {
	l       *Ledger
	pending map[int64]tlog.Hash
}

// ReadHashes implements tlog.HashReader. Proofs and tree hashes ask for
// tens of hashes at once: they are read with one iterator.
func (r hashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var it *pebble.Iterator
	defer func() {
		if it != nil {
			it.Close()
		}
	}()
	for i, idx := range indexes {
		if h, ok := r.pending[idx]; ok {
			out[i] = h
			continue
		}
		if it == nil {
			var err error
			if it, err = r.l.db.NewIter(&pebble.IterOptions{LowerBound: prefixHash, UpperBound: prefixEnd(prefixHash)}); err != nil {
				return nil, err
			}
		}
		k := hashKey(idx)
		if !it.SeekGE(k) || !bytes.Equal(it.Key(), k) {
			if err := it.Error(); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: stored hash %d missing", ErrCorrupt, idx)
		}
		v := it.Value()
		if len(v) != tlog.HashSize {
			return nil, fmt.Errorf("%w: stored hash %d has %d bytes", ErrCorrupt, idx, len(v))
		}
		out[i] = tlog.Hash(v)
	}
	return out, nil
}

// TreeHash returns the root of the tree of the first n events.
func (l *Ledger) TreeHash(n int64) (tlog.Hash, error) {
	if n < 0 || n > l.Size() {
		return tlog.Hash{}, fmt.Errorf("tree size %d: the ledger has %d events", n, l.Size())
	}
	return tlog.TreeHash(n, hashReader{l: l})
}

// ProveInclusion returns an inclusion proof of event seq in the tree of
// size n (n = 0 means the latest checkpoint's size), with the checkpoint
// at that size (signed now if the ledger kept none for it).
func (l *Ledger) ProveInclusion(seq, n int64) (*InclusionProof, error) {
	ckpt, c, err := l.checkpointAt(n)
	if err != nil {
		return nil, err
	}
	if seq < 0 || seq >= c.Size {
		return nil, fmt.Errorf("event %d is not in the tree of size %d: %w", seq, c.Size, ErrNotFound)
	}
	proof, err := tlog.ProveRecord(c.Size, seq, hashReader{l: l})
	if err != nil {
		return nil, fmt.Errorf("prove event %d: %w", seq, err)
	}
	v, err := l.get(eventKey(seq))
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", seq, err)
	}
	leaf, err := leafOf(v)
	if err != nil {
		return nil, err
	}
	return &InclusionProof{Index: seq, Leaf: append([]byte(nil), leaf...), Hashes: proof, Checkpoint: ckpt}, nil
}

// ProveConsistency returns a proof that the tree of size newSize (0 means
// the latest) extends the tree of size oldSize.
func (l *Ledger) ProveConsistency(oldSize, newSize int64) (*ConsistencyProof, error) {
	ckpt, c, err := l.checkpointAt(newSize)
	if err != nil {
		return nil, err
	}
	if oldSize < 0 || oldSize > c.Size {
		return nil, fmt.Errorf("old size %d: must be between 0 and %d", oldSize, c.Size)
	}
	p := &ConsistencyProof{OldSize: oldSize, Checkpoint: ckpt}
	if oldSize > 0 {
		if p.OldRoot, err = tlog.TreeHash(oldSize, hashReader{l: l}); err != nil {
			return nil, err
		}
		if p.Hashes, err = tlog.ProveTree(c.Size, oldSize, hashReader{l: l}); err != nil {
			return nil, fmt.Errorf("prove consistency %d→%d: %w", oldSize, c.Size, err)
		}
		if oc, err := l.get(checkpointKey(oldSize)); err == nil {
			p.OldCheckpoint = oc
		}
	}
	return p, nil
}
