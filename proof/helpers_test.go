package proof

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

const testOrigin = "example.org/test-log"

// testKey is a fixed Ed25519 key for test logs.
func testKey(seedByte byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seedByte}, ed25519.SeedSize))
}

// hashMap is an in-memory tlog.HashReader.
type hashMap map[int64]tlog.Hash

func (m hashMap) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, idx := range indexes {
		h, ok := m[idx]
		if !ok {
			return nil, fmt.Errorf("no stored hash %d", idx)
		}
		out[i] = h
	}
	return out, nil
}

// memLog is a small log kept in memory: leaves, their documents, the tlog
// stored hashes, and a signer for checkpoints.
type memLog struct {
	t      testing.TB
	leaves [][]byte
	docs   [][]byte
	hashes hashMap
	signer note.Signer
	vkey   string
}

func newMemLog(t testing.TB, origin string, key ed25519.PrivateKey) *memLog {
	t.Helper()
	s, vkey, err := NewSigner(origin, key)
	if err != nil {
		t.Fatal(err)
	}
	return &memLog{t: t, hashes: hashMap{}, signer: s, vkey: vkey}
}

// testLeaf returns a valid leaf for event seq of a document.
func testLeaf(seq int64, doc []byte) *Leaf {
	kinds := []codec.Kind{codec.KindVRF, codec.KindAVIRSpec, codec.KindAVIRAttestation, codec.KindRVWW, KindRollback}
	l := &Leaf{
		Seq:        seq,
		AppendedAt: time.Date(2026, 11, 23, 2, 50, 10, int(seq)*1000+7, time.UTC),
		Kind:       kinds[seq%int64(len(kinds))],
		ID:         fmt.Sprintf("doc-%d", seq),
		Subject:    "agent \"x\" \u00e9",
		Position:   -1,
		Digest:     sha256.Sum256(doc),
		Size:       int64(len(doc)),
	}
	if l.Kind == codec.KindVRF {
		l.Position = seq / 5
		l.Signer = "ed25519:" + fmt.Sprintf("%064x", seq)
		l.Attrs = canonjson.MakeObject(canonjson.Member{Key: "verdict", Value: canonjson.MakeString("pass")},
			canonjson.Member{Key: "tier", Value: canonjson.MakeInt(0)})
		if seq >= 5 {
			l.Links = []Link{{Rel: RelPreviousReceipt, ID: fmt.Sprintf("doc-%d", seq-5), Seq: seq - 5}}
		}
	}
	if l.Kind == KindRollback {
		l.Time = time.Date(2026, 11, 21, 10, 0, 0, 500000000, time.UTC)
		l.Links = []Link{{Rel: RelTaskPrevious, ID: fmt.Sprintf("doc-%d", seq-1), Seq: seq - 1}}
		l.Attrs = canonjson.MakeObject(canonjson.Member{Key: "restored_clean", Value: canonjson.MakeBool(true)})
	}
	return l
}

// appendLeaf adds a leaf given as bytes (it need not be valid).
func (m *memLog) appendLeaf(leaf, doc []byte) {
	m.t.Helper()
	n := int64(len(m.leaves))
	hs, err := tlog.StoredHashes(n, leaf, m.hashes)
	if err != nil {
		m.t.Fatal(err)
	}
	base := tlog.StoredHashIndex(0, n)
	for i, h := range hs {
		m.hashes[base+int64(i)] = h
	}
	m.leaves = append(m.leaves, leaf)
	m.docs = append(m.docs, doc)
}

// grow appends valid events until the log has n of them.
func (m *memLog) grow(n int) *memLog {
	for int64(len(m.leaves)) < int64(n) {
		seq := int64(len(m.leaves))
		doc := []byte(fmt.Sprintf("document %d", seq))
		m.appendLeaf(testLeaf(seq, doc).Encode(), doc)
	}
	return m
}

func (m *memLog) root(n int64) tlog.Hash {
	m.t.Helper()
	h, err := tlog.TreeHash(n, m.hashes)
	if err != nil {
		m.t.Fatal(err)
	}
	return h
}

// checkpoint signs the tree of size n.
func (m *memLog) checkpoint(n int64) []byte {
	m.t.Helper()
	origin := m.signer.Name()
	signed, err := Sign(Checkpoint{Origin: origin, Size: n, Root: m.root(n)}, m.signer)
	if err != nil {
		m.t.Fatal(err)
	}
	return signed
}

// inclusion proves event i in the tree of size n.
func (m *memLog) inclusion(i, n int64) *InclusionProof {
	m.t.Helper()
	p, err := tlog.ProveRecord(n, i, m.hashes)
	if err != nil {
		m.t.Fatal(err)
	}
	return &InclusionProof{Index: i, Leaf: m.leaves[i], Hashes: p, Checkpoint: m.checkpoint(n)}
}

// consistency proves that the tree of size n extends that of size old,
// with the old checkpoint when withOld is set.
func (m *memLog) consistency(old, n int64, withOld bool) *ConsistencyProof {
	m.t.Helper()
	p := &ConsistencyProof{OldSize: old, OldRoot: m.root(old), Checkpoint: m.checkpoint(n)}
	if old > 0 {
		h, err := tlog.ProveTree(n, old, m.hashes)
		if err != nil {
			m.t.Fatal(err)
		}
		p.Hashes = h
	}
	if withOld {
		p.OldCheckpoint = m.checkpoint(old)
	}
	return p
}

// shortError fails the test when err's message is long: errors quote at
// most a few dozen bytes of their input.
func shortError(t *testing.T, err error) {
	t.Helper()
	if err != nil && len(err.Error()) > 300 {
		t.Errorf("error message is %d bytes long: %.300s...", len(err.Error()), err.Error())
	}
}
