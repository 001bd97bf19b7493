package proof

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/canonjson"
)

// TestFormatExamples keeps the worked examples of docs/FORMAT.md ("Merkle
// leaf") true: each documented leaf parses strictly (so it is canonical and
// re-encodes to itself) and has the documented leaf hash; the rollback
// example is also rebuilt from its facts.
func TestFormatExamples(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	leaves := regexp.MustCompile("<!-- leaf-example -->\n```json\n([^\n]*)\n```").FindAllSubmatch(page, -1)
	hashes := regexp.MustCompile("<!-- leaf-hash -->`([0-9a-f]{64})`").FindAllSubmatch(page, -1)
	if len(leaves) != 2 || len(hashes) != len(leaves) {
		t.Fatalf("FORMAT.md has %d leaf examples and %d leaf hashes, want 2 of each", len(leaves), len(hashes))
	}
	var rollbackExample []byte
	for i, m := range leaves {
		leaf := m[1]
		l, err := ParseLeaf(leaf)
		if err != nil {
			t.Fatalf("example %d: %v", i+1, err)
		}
		if !bytes.Equal(l.Encode(), leaf) {
			t.Fatalf("example %d does not re-encode to itself:\n%s\n%s", i+1, leaf, l.Encode())
		}
		h := LeafHash(leaf)
		if got, want := hex.EncodeToString(h[:]), string(hashes[i][1]); got != want {
			t.Errorf("example %d: leaf hash %s, FORMAT.md says %s", i+1, got, want)
		}
		if l.Kind == KindRollback {
			rollbackExample = leaf
		}
	}
	built := &Leaf{
		Seq:        4,
		AppendedAt: time.Date(2026, 11, 23, 2, 50, 15, 35718123, time.UTC),
		Kind:       KindRollback,
		ID:         "73656564-7265-662d-7461-736b2d303031@rollback@2026-11-21T10:00:00.5Z",
		Subject:    "73656564-7265-662d-7461-736b2d303031",
		Time:       time.Date(2026, 11, 21, 10, 0, 0, 500000000, time.UTC),
		Links:      []Link{{Rel: RelTaskPrevious, ID: "73656564-7265-662d-7461-736b2d303031@1795322099824745397", Seq: 3}},
		Position:   -1,
		Size:       171,
		Attrs:      canonjson.MakeObject(canonjson.Member{Key: "restored_clean", Value: canonjson.MakeBool(true)}),
	}
	if _, err := hex.Decode(built.Digest[:], []byte("974ea1905096bfd49f8e10a78879513ba348b54cbe8865ce2e95e5da707c1eb5")); err != nil {
		t.Fatal(err)
	}
	if got := built.Encode(); !bytes.Equal(got, rollbackExample) {
		t.Fatalf("the rollback example rebuilt from its facts:\n%s\nFORMAT.md:\n%s", got, rollbackExample)
	}
}
