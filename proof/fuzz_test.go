package proof

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// fuzzLog is the log whose key the fuzz targets verify against, with a
// few real proofs as seeds.
func fuzzLog(f *testing.F) *memLog {
	return newMemLog(f, testOrigin, testKey(1)).grow(9)
}

// addFixtures adds the committed real-binary fixtures as seeds.
func addFixtures(f *testing.F, names ...string) {
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join("testdata", "fixtures", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzParseCheckpoint: no panic; what parses prints back to its first
// three lines.
func FuzzParseCheckpoint(f *testing.F) {
	m := fuzzLog(f)
	for _, n := range []int64{0, 1, 9} {
		text, _, _ := strings.Cut(string(m.checkpoint(n)), "\n\n")
		f.Add(text + "\n")
	}
	f.Add("o\n5\n" + goodRoot + "\next\n")
	f.Add("o\n05\n" + goodRoot + "\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := ParseCheckpoint(text)
		if err != nil {
			return
		}
		if !strings.HasPrefix(text, c.Text()) {
			t.Fatalf("ParseCheckpoint(%q) = %+v, whose text %q does not start the input", text, c, c.Text())
		}
	})
}

// FuzzOpenCheckpoint: no panic; only notes signed by the test key open,
// and what opens parses.
func FuzzOpenCheckpoint(f *testing.F) {
	m := fuzzLog(f)
	for _, n := range []int64{0, 1, 9} {
		f.Add(m.checkpoint(n))
	}
	f.Add([]byte("o\n5\n" + goodRoot + "\n\n\u2014 o AAAAAAA=\n"))
	f.Fuzz(func(t *testing.T, signed []byte) {
		c, err := OpenCheckpoint(signed, m.vkey)
		if err != nil {
			return
		}
		text, _, _ := strings.Cut(string(signed), "\n\n")
		if c2, err := ParseCheckpoint(text + "\n"); err != nil || c2 != c {
			t.Fatalf("opened %+v, but its text parses to %+v, %v", c, c2, err)
		}
		if c.Origin != testOrigin {
			t.Fatalf("opened a checkpoint of origin %q", c.Origin)
		}
	})
}

// FuzzParseInclusionProof: no panic; what parses marshals back to the
// input; whatever verifies proves the leaf that names its index.
func FuzzParseInclusionProof(f *testing.F) {
	m := fuzzLog(f)
	for _, in := range [][2]int64{{0, 1}, {3, 9}, {8, 9}} {
		f.Add(m.inclusion(in[0], in[1]).Marshal())
	}
	addFixtures(f, "inclusion-0.tlog-proof")
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseInclusionProof(data)
		if err != nil {
			return
		}
		if !bytes.Equal(p.Marshal(), data) {
			t.Fatalf("Marshal(Parse(%q)) = %q", data, p.Marshal())
		}
		if v, err := p.Verify(m.vkey, nil); err == nil {
			if v.Leaf.Seq != p.Index || !bytes.Equal(p.Leaf, m.leaves[p.Index]) {
				t.Fatalf("verified index %d with leaf %q", p.Index, p.Leaf)
			}
		}
	})
}

// FuzzParseConsistencyProof: no panic; what parses marshals back to the
// input; whatever verifies has the test log's roots.
func FuzzParseConsistencyProof(f *testing.F) {
	m := fuzzLog(f)
	for _, in := range [][2]int64{{0, 9}, {1, 1}, {5, 9}} {
		f.Add(m.consistency(in[0], in[1], false).Marshal())
		f.Add(m.consistency(in[0], in[1], true).Marshal())
	}
	addFixtures(f, "consistency-4-5.proof", "consistency-2-5.proof")
	var roots []tlog.Hash
	for n := int64(0); n <= int64(len(m.leaves)); n++ {
		roots = append(roots, m.root(n))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseConsistencyProof(data)
		if err != nil {
			return
		}
		if !bytes.Equal(p.Marshal(), data) {
			t.Fatalf("Marshal(Parse(%q)) = %q", data, p.Marshal())
		}
		if v, err := p.Verify(m.vkey); err == nil {
			if v.Old.Root != roots[v.Old.Size] || v.New.Root != roots[v.New.Size] {
				t.Fatalf("verified %d -> %d with roots that are not the log's", v.Old.Size, v.New.Size)
			}
		}
	})
}

// FuzzParseLeaf: no panic; what parses is canonical (encodes back to the
// input), and the string parser agrees with the byte parser.
func FuzzParseLeaf(f *testing.F) {
	m := fuzzLog(f)
	for _, l := range m.leaves {
		f.Add(l)
	}
	f.Add([]byte(goodLeaf))
	for _, tc := range leafRejects() {
		f.Add([]byte(tc.leaf))
	}
	var p LeafParser
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseLeaf(data)
		l2, err2 := p.ParseString(string(data))
		if (err == nil) != (err2 == nil) {
			t.Fatalf("ParseLeaf: %v; LeafParser.ParseString: %v", err, err2)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(l.Encode(), data) || !bytes.Equal(l2.Encode(), data) {
			t.Fatalf("accepted a leaf that does not encode back: %q", data)
		}
	})
}
