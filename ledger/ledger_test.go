package ledger

import (
	"bytes"
	"context"
	"errors"
	"github.com/cockroachdb/pebble/v2"
	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/proof"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec/keys"
)

func newLedger(t testing.TB, opts Options) *Ledger {
	t.Helper()
	dir := t.TempDir()
	seed := bytes.Repeat([]byte{7}, 32)
	priv, err := keys.ParsePrivateKey([]byte(hexString(seed)))
	if err != nil {
		t.Fatal(err)
	}
	if err := Init(dir, InitOptions{Origin: "test.example/ledger", Key: priv}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	})
	return l
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func TestProofs(t *testing.T) {
	l := newLedger(t, Options{})
	ctx := context.Background()
	var subs []*Entry
	for i := range 3 {
		subs = append(subs, rawEntry(i))
		if _, err := l.Append(ctx, []*Entry{rawEntry(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for seq := int64(0); seq < 3; seq++ {
		p, err := l.ProveInclusion(seq, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := proof.ParseInclusionProof(p.Marshal())
		if err != nil {
			t.Fatal(err)
		}
		v, err := parsed.Verify(l.VerifierKey(), subs[seq].Data)
		if err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		if v.Leaf.Seq != seq || v.Checkpoint.Size != 3 {
			t.Errorf("verified %+v", v)
		}
		if _, err := parsed.Verify(l.VerifierKey(), []byte("other")); !errors.Is(err, proof.ErrInvalid) {
			t.Errorf("wrong doc verified: %v", err)
		}
	}
	for old := int64(0); old <= 3; old++ {
		p, err := l.ProveConsistency(old, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := proof.ParseConsistencyProof(p.Marshal())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parsed.Verify(l.VerifierKey()); err != nil {
			t.Errorf("consistency %d→3: %v", old, err)
		}
	}
}

func TestAuditCleanAndCorrupted(t *testing.T) {
	l := newLedger(t, Options{})
	ctx := context.Background()
	if _, err := l.Append(ctx, []*Entry{rawEntry(0), rawEntry(1), rawEntry(2)}); err != nil {
		t.Fatal(err)
	}
	rep, err := l.Audit(ctx, AuditOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("audit of a clean ledger: %v %v", err, rep.Problems)
	}
	// Damage an index entry and a stored hash behind the ledger's back.
	l = tamper(t, l, func(db *pebble.DB) error {
		return errors.Join(
			db.Set(identKey(codec.KindAVIRSpec, rawEntry(0).ID), append(u64(2), make([]byte, 32)...), nil),
			db.Set(hashKey(0), make([]byte, 32), nil))
	})
	rep, err = l.Audit(ctx, AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ident, hash bool
	for _, p := range rep.Problems {
		ident = ident || p.Seq == 0 && strings.Contains(p.What, "identity index entry id/")
		hash = hash || p.Seq == 0 && strings.Contains(p.What, "leaf does not match the tree hash")
	}
	if !ident || !hash {
		t.Errorf("audit found %v, want the identity entry and the stored hash", rep.Problems)
	}
}

func TestNewerFormatRefused(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := pebble.Open(filepath.Join(dir, storeDir), PebbleOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set(keyFormat, []byte{FormatVersion + 1}, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{})
	if !errors.Is(err, ErrNewerFormat) {
		t.Fatalf("Open of a newer store = %v, want ErrNewerFormat", err)
	}
	if !strings.Contains(err.Error(), "use a newer ledger binary") {
		t.Errorf("message %q does not say what to do", err)
	}
	if _, err := Open(t.TempDir(), Options{}); !errors.Is(err, ErrNotLedger) {
		t.Errorf("Open of an empty dir = %v, want ErrNotLedger", err)
	}
}
