package proof

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkLeafParserParseString is the scan path (rebuild, audit): many
// leaves through one LeafParser, strict checks and canonical comparison
// included.
func BenchmarkLeafParserParseString(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	leaves := make([]string, 256)
	size := 0
	for i := range leaves {
		leaves[i] = string(randLeaf(r).Encode())
		size += len(leaves[i])
	}
	var p LeafParser
	b.SetBytes(int64(size / len(leaves)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := p.ParseString(leaves[i%len(leaves)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTreeBuilder appends leaf hashes (export, rebuild and audit
// recompute roots this way).
func BenchmarkTreeBuilder(b *testing.B) {
	var t TreeBuilder
	h := LeafHash([]byte(goodLeaf))
	for b.Loop() {
		t.Append(h)
	}
	_ = t.Root()
}
