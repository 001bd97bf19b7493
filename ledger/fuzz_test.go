package ledger

import (
	"context"
	"testing"
)

// FuzzProofs feeds arbitrary text to the proof and leaf parsers and to
// offline verification: none may panic, and nothing but the real proofs
// may verify.
func FuzzProofs(f *testing.F) {
	l := newLedger(f, Options{})
	if _, err := l.Append(context.Background(), vectorSubs(f), hmacOpts(f)); err != nil {
		f.Fatal(err)
	}
	vkey := l.VerifierKey()
	for seq := int64(0); seq < 3; seq++ {
		p, err := l.ProveInclusion(seq, 0)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p.Marshal())
		f.Add(p.Leaf)
	}
	for old := int64(0); old < 3; old++ {
		p, err := l.ProveConsistency(old, 0)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p.Marshal())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ParseLeaf(data)
		if p, err := ParseInclusionProof(data); err == nil {
			if v, err := p.Verify(vkey, nil); err == nil && v.Event.Seq != p.Index {
				t.Fatalf("verified proof of index %d for event %d", p.Index, v.Event.Seq)
			}
		}
		if p, err := ParseConsistencyProof(data); err == nil {
			p.Verify(vkey)
		}
		OpenCheckpoint(data, vkey)
	})
}
