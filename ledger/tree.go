package ledger

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/mod/sumdb/tlog"
)

func sha256Sum(b []byte) [sha256.Size]byte { return sha256.Sum256(b) }

// leafHashString is tlog.RecordHash of a leaf held as a string.
func leafHashString(leaf string) tlog.Hash {
	h := sha256.New()
	h.Write([]byte{0})
	_, _ = io.WriteString(h, leaf) // a hash.Hash never fails a write
	var out tlog.Hash
	h.Sum(out[:0])
	return out
}

// hashReader reads tlog stored hashes from r, seeing first the hashes of a
// batch that is still being built.
type hashReader struct {
	r       pebble.Reader
	pending map[int64]tlog.Hash
}

// ReadHashes implements tlog.HashReader. Proofs and tree hashes ask for
// tens of hashes at once: they are read with one iterator.
func (h hashReader) ReadHashes(indexes []int64) (out []tlog.Hash, err error) {
	out = make([]tlog.Hash, len(indexes))
	var it *pebble.Iterator
	defer func() {
		if it != nil {
			closeIter(it, &err)
		}
	}()
	for i, idx := range indexes {
		if hh, ok := h.pending[idx]; ok {
			out[i] = hh
			continue
		}
		if it == nil {
			if it, err = h.r.NewIter(&pebble.IterOptions{LowerBound: prefixHash, UpperBound: prefixEnd(prefixHash)}); err != nil {
				return nil, storeErr(err)
			}
		}
		k := hashKey(idx)
		if !it.SeekGE(k) || !bytes.Equal(it.Key(), k) {
			if err := it.Error(); err != nil {
				return nil, storeErr(err)
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
