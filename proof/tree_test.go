package proof

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// treeOracle stores the tlog hashes of leaves "leaf <i>" so that
// tlog.TreeHash can compute any root.
type treeOracle struct {
	hashes hashMap
	n      int64
}

func (o *treeOracle) add(t *testing.T, leaf []byte) {
	hs, err := tlog.StoredHashes(o.n, leaf, o.hashes)
	if err != nil {
		t.Fatal(err)
	}
	base := tlog.StoredHashIndex(0, o.n)
	for i, h := range hs {
		o.hashes[base+int64(i)] = h
	}
	o.n++
}

func (o *treeOracle) root(t *testing.T, n int64) tlog.Hash {
	h, err := tlog.TreeHash(n, o.hashes)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestTreeBuilderEverySize(t *testing.T) {
	var b TreeBuilder
	o := &treeOracle{hashes: hashMap{}}
	if b.Size() != 0 || b.Root() != EmptyRoot() || b.Root() != o.root(t, 0) {
		t.Fatalf("empty builder: size %d, root %s", b.Size(), b.Root())
	}
	for n := int64(1); n <= 300; n++ {
		leaf := []byte(fmt.Sprintf("leaf %d", n-1))
		b.AppendLeaf(leaf)
		o.add(t, leaf)
		if b.Size() != n {
			t.Fatalf("Size() = %d after %d leaves", b.Size(), n)
		}
		if got, want := b.Root(), o.root(t, n); got != want {
			t.Fatalf("size %d: Root() = %s, tlog.TreeHash = %s", n, got, want)
		}
		// Root does not disturb the builder.
		if b.Root() != o.root(t, n) {
			t.Fatalf("size %d: second Root() differs", n)
		}
		if len(b.peaks) != popcount(n) {
			t.Fatalf("size %d: %d peaks held", n, len(b.peaks))
		}
	}
}

func popcount(n int64) int {
	c := 0
	for ; n > 0; n &= n - 1 {
		c++
	}
	return c
}

func TestTreeBuilderLargeSizes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	sizes := map[int64]bool{1023: true, 1024: true, 1025: true, 4097: true, 65535: true, 65536: true, 100003: true}
	for len(sizes) < 12 {
		sizes[300+r.Int64N(100000)] = true
	}
	var b TreeBuilder
	o := &treeOracle{hashes: hashMap{}}
	for n := int64(1); n <= 100003; n++ {
		var leaf [8]byte
		for i := range leaf {
			leaf[i] = byte(r.Uint32())
		}
		b.AppendLeaf(leaf[:])
		o.add(t, leaf[:])
		if sizes[n] {
			if got, want := b.Root(), o.root(t, n); got != want {
				t.Fatalf("size %d: Root() = %s, tlog.TreeHash = %s", n, got, want)
			}
		}
	}
}
