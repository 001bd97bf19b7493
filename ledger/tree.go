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
	io.WriteString(h, leaf)
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

// rootBuilder computes the RFC 6962 root of leaves appended in order in
// O(log n) memory (a compact range): export, rebuild and audit recompute
// the root of the leaves they stream and compare it with the signed one.
type rootBuilder struct {
	n     int64
	stack []tlog.Hash // roots of the perfect subtrees, largest first
}

func newRootBuilder() *rootBuilder { return &rootBuilder{} }

// add appends a leaf hash.
func (b *rootBuilder) add(h tlog.Hash) {
	b.stack = append(b.stack, h)
	for n := b.n; n&1 == 1; n >>= 1 {
		k := len(b.stack)
		b.stack = append(b.stack[:k-2], tlog.NodeHash(b.stack[k-2], b.stack[k-1]))
	}
	b.n++
}

// root returns the root of the leaves added so far.
func (b *rootBuilder) root() tlog.Hash {
	if len(b.stack) == 0 {
		return EmptyRoot
	}
	h := b.stack[len(b.stack)-1]
	for i := len(b.stack) - 2; i >= 0; i-- {
		h = tlog.NodeHash(b.stack[i], h)
	}
	return h
}
