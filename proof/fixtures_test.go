package proof

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec"
)

// The fixtures under testdata/fixtures were written by the real ledger
// binary (testdata/make-fixtures.sh): the package must accept them, byte
// for byte, and refuse tampered copies.

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "fixtures", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestFixtureInclusion(t *testing.T) {
	vkey := strings.TrimSpace(string(readFixture(t, "log.pub")))
	doc := readFixture(t, "document.json")
	text := readFixture(t, "inclusion-0.tlog-proof")
	p, err := ParseInclusionProof(text)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p.Marshal(), text) {
		t.Fatal("Marshal does not give back the ledger's bytes")
	}
	v, err := p.Verify(vkey, doc)
	if err != nil {
		t.Fatal(err)
	}
	if v.Leaf.Seq != 0 || v.Leaf.Kind != codec.KindVRF || v.Leaf.Position != 0 || v.Checkpoint.Size != 5 || v.Checkpoint.Origin != "example.org/ledger" {
		t.Fatalf("verified %+v, leaf %+v", v.Checkpoint, v.Leaf)
	}
	if !bytes.Equal(v.Leaf.Encode(), p.Leaf) {
		t.Fatal("the ledger's leaf does not re-encode to itself")
	}

	tamper := map[string]func() ([]byte, []byte){
		"document byte": func() ([]byte, []byte) {
			d := bytes.Clone(doc)
			d[len(d)/2] ^= 1
			return text, d
		},
		"document truncated": func() ([]byte, []byte) { return text, doc[:len(doc)-1] },
		"index": func() ([]byte, []byte) {
			return bytes.Replace(text, []byte("\nindex 0\n"), []byte("\nindex 1\n"), 1), doc
		},
		"leaf": func() ([]byte, []byte) {
			leaf := bytes.Replace(p.Leaf, []byte(`"tier":0`), []byte(`"tier":1`), 1)
			q := *p
			q.Leaf = leaf
			return q.Marshal(), doc
		},
		"hash": func() ([]byte, []byte) {
			q := *p
			q.Hashes = append(q.Hashes[:0:0], q.Hashes...)
			q.Hashes[0][0] ^= 1
			return q.Marshal(), doc
		},
		"checkpoint size": func() ([]byte, []byte) {
			return bytes.Replace(text, []byte("\n\nexample.org/ledger\n5\n"), []byte("\n\nexample.org/ledger\n6\n"), 1), doc
		},
	}
	for name, f := range tamper {
		t.Run(name, func(t *testing.T) {
			data, d := f()
			if bytes.Equal(data, text) && bytes.Equal(d, doc) {
				t.Fatal("tampering changed nothing")
			}
			q, err := ParseInclusionProof(data)
			if err == nil {
				_, err = q.Verify(vkey, d)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("tampered proof: %v, want ErrInvalid", err)
			}
		})
	}
}

func TestFixtureConsistency(t *testing.T) {
	vkey := strings.TrimSpace(string(readFixture(t, "log.pub")))
	for _, tc := range []struct {
		name     string
		old      int64
		withOld  bool
		tampered string
	}{
		{"consistency-4-5.proof", 4, true, "\nold 4 "},
		{"consistency-2-5.proof", 2, false, "\nold 2 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := readFixture(t, tc.name)
			p, err := ParseConsistencyProof(text)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(p.Marshal(), text) {
				t.Fatal("Marshal does not give back the ledger's bytes")
			}
			v, err := p.Verify(vkey)
			if err != nil {
				t.Fatal(err)
			}
			if v.Old.Size != tc.old || v.New.Size != 5 || (p.OldCheckpoint != nil) != tc.withOld {
				t.Fatalf("verified %+v", v)
			}
			q := *p
			q.Hashes = append(q.Hashes[:0:0], q.Hashes...)
			q.Hashes[len(q.Hashes)-1][5] ^= 4
			if _, err := q.Verify(vkey); !errors.Is(err, ErrInvalid) {
				t.Fatalf("tampered hash: %v", err)
			}
			q = *p
			q.OldRoot[0] ^= 1
			if _, err := q.Verify(vkey); !errors.Is(err, ErrInvalid) {
				t.Fatalf("tampered old root: %v", err)
			}
		})
	}
}
