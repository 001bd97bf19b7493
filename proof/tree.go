package proof

import "golang.org/x/mod/sumdb/tlog"

// TreeBuilder computes the RFC 6962 root of a tree while its leaves are
// appended in order, in O(log n) memory: it keeps a compact range, the
// roots of the perfect subtrees that make up the tree so far (one for each
// set bit of the size, largest first). The zero TreeBuilder is the empty
// tree. Root equals tlog.TreeHash of the same leaves at every size.
type TreeBuilder struct {
	size  int64
	peaks []tlog.Hash // roots of perfect subtrees, largest (leftmost) first
}

// Append adds a leaf by its hash (LeafHash of the leaf's bytes).
func (b *TreeBuilder) Append(leafHash tlog.Hash) {
	h := leafHash
	// Each trailing one bit of the old size is a perfect subtree as large
	// as the one h has now grown to: merge them.
	for s := b.size; s&1 == 1; s >>= 1 {
		h = tlog.NodeHash(b.peaks[len(b.peaks)-1], h)
		b.peaks = b.peaks[:len(b.peaks)-1]
	}
	b.peaks = append(b.peaks, h)
	b.size++
}

// AppendLeaf adds a leaf by its bytes: Append(LeafHash(leaf)).
func (b *TreeBuilder) AppendLeaf(leaf []byte) { b.Append(LeafHash(leaf)) }

// Size returns the number of leaves appended.
func (b *TreeBuilder) Size() int64 { return b.size }

// Root returns the root of the tree of the leaves appended so far:
// EmptyRoot() when there are none.
func (b *TreeBuilder) Root() tlog.Hash {
	if len(b.peaks) == 0 {
		return EmptyRoot()
	}
	h := b.peaks[len(b.peaks)-1]
	for i := len(b.peaks) - 2; i >= 0; i-- {
		h = tlog.NodeHash(b.peaks[i], h)
	}
	return h
}
