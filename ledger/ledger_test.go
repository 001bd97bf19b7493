package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/cockroachdb/pebble/v2"
	"github.com/proofledger/ledger/proof"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/keys"
)

const vectors = "../testdata/vectors"

func readFile(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

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
	t.Cleanup(func() { l.Close() })
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

func vectorSubs(t testing.TB) []Submission {
	return []Submission{
		{Name: "vrf", Data: readFile(t, filepath.Join(vectors, "vrf/01_tier0_pass.json"))},
		{Name: "avir", Data: readFile(t, filepath.Join(vectors, "avir/01_verified_L2.attestation.json"))},
		{Name: "rvww", Data: readFile(t, filepath.Join(vectors, "rvww/01_solved_autonomous_signed.rvww"))},
	}
}

func hmacOpts(t testing.TB) AppendOptions {
	k, err := keys.LoadHMACKey(filepath.Join(vectors, "rvww/hmac_key.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return AppendOptions{HMACKeys: []keys.HMACKey{k}}
}

func TestAppendVectorsAndReplay(t *testing.T) {
	l := newLedger(t, Options{})
	ctx := context.Background()
	at := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	subs := vectorSubs(t)
	for i := range subs {
		subs[i].Arrival = at
	}
	out, err := l.Append(ctx, subs, hmacOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out {
		if o.Status != StatusAppended || o.Seq != int64(i) {
			t.Fatalf("outcome %d = %+v", i, o)
		}
	}
	if l.Size() != 3 {
		t.Fatalf("size %d", l.Size())
	}
	// Replays: identical bytes.
	again, err := l.Append(ctx, subs, hmacOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range again {
		if o.Status != StatusReplay || o.Seq != int64(i) {
			t.Errorf("replay %d = %+v", i, o)
		}
	}
	// Conflict: same receipt_id, different bytes (re-indented JSON, still
	// valid and signed).
	vrf := subs[0].Data
	conflicting := bytes.Replace(vrf, []byte("\n  "), []byte("\n    "), 1)
	c, err := l.Append(ctx, []Submission{{Name: "c", Data: conflicting}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c[0].Status != StatusConflict || c[0].Seq != 0 {
		t.Errorf("conflict = %+v", c[0])
	}
	// Unsigned bundle without key: signature not checked → rejected.
	r, err := l.Append(ctx, []Submission{{Name: "b", Data: subs[2].Data}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r[0].Status != StatusReplay {
		// identity is checked after verification; without the key the
		// bundle does not verify, so it is rejected.
		if r[0].Status != StatusRejected {
			t.Errorf("bundle without key = %+v", r[0])
		}
	}
	ev, err := l.Event(2, true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ev.Data, subs[2].Data) {
		t.Error("bundle bytes changed")
	}
	if ev.AppendedAt != at {
		t.Errorf("appended at %v", ev.AppendedAt)
	}
}

func TestProofs(t *testing.T) {
	l := newLedger(t, Options{})
	ctx := context.Background()
	subs := vectorSubs(t)
	for _, s := range subs {
		if _, err := l.Append(ctx, []Submission{s}, hmacOpts(t)); err != nil {
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
	if _, err := l.Append(ctx, vectorSubs(t), hmacOpts(t)); err != nil {
		t.Fatal(err)
	}
	rep, err := l.Audit(ctx, AuditOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("audit of a clean ledger: %v %v", err, rep.Problems)
	}
	// Damage an index entry and a stored hash behind the ledger's back.
	l = tamper(t, l, func(db *pebble.DB) error {
		return errors.Join(
			db.Set(identKey("vrf", "4317e99d-6ddf-45f5-8d9e-f7d2ec99d867"), append(u64(2), make([]byte, 32)...), nil),
			db.Set(hashKey(0), make([]byte, 32), nil))
	})
	rep, err = l.Audit(ctx, AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ident, hash bool
	for _, p := range rep.Problems {
		ident = ident || strings.Contains(p.What, "index entry key i/")
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
	l.Close()
	db, err := pebble.Open(filepath.Join(dir, storeDir), PebbleOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set(keyFormat, []byte{FormatVersion + 1}, nil); err != nil {
		t.Fatal(err)
	}
	db.Close()
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

func TestExportImportReproducesRoot(t *testing.T) {
	ctx := context.Background()
	src := newLedger(t, Options{})
	signer := testKey(5)
	prev := ""
	var subs []Submission
	for i := 0; i < 40; i++ {
		subs = append(subs, Submission{Name: fmt.Sprint(i), Data: receipt(t, signer, i, "agent", prev, int64(i)), Arrival: testEpoch.Add(time.Duration(i) * time.Second)})
		prev = uuid4(i)
	}
	subs = append(subs, vectorSubs(t)...)
	if _, err := src.Append(ctx, subs, hmacOpts(t)); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	est, err := src.Export(ctx, &archive)
	if err != nil || est.Events != 43 {
		t.Fatalf("export: %d events, %v", est.Events, err)
	}
	dstDir := filepath.Join(t.TempDir(), "dst")
	if err := Init(dstDir, InitOptions{Origin: "test.example/restored"}); err != nil {
		t.Fatal(err)
	}
	st, err := Import(ctx, dstDir, bytes.NewReader(archive.Bytes()), ImportOptions{AppendOptions: hmacOpts(t)})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := src.TreeHash(src.Size())
	if st.Root != want || st.Events != 43 || st.Signer != src.VerifierKey() {
		t.Errorf("import: %+v, want root %v", st, want)
	}
	dst, err := Open(dstDir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if dst.Size() != 43 || dst.Origin() != "test.example/restored" {
		t.Errorf("imported ledger: %d events, origin %q", dst.Size(), dst.Origin())
	}
	dst.Close()
	// Without the bundle's key the import stops at the bundle, and the
	// target is left as it was: empty, and importable again.
	againDir := filepath.Join(t.TempDir(), "again")
	if err := Init(againDir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(ctx, againDir, bytes.NewReader(archive.Bytes()), ImportOptions{}); !errors.Is(err, ErrImport) {
		t.Errorf("import without the HMAC key = %v, want ErrImport", err)
	}
	if again, err := Open(againDir, Options{ReadOnly: true}); err != nil || again.Size() != 0 {
		t.Errorf("failed import left %v events (%v)", again.Size(), err)
	} else {
		again.Close()
	}
	if _, err := Import(ctx, againDir, bytes.NewReader(archive.Bytes()), ImportOptions{AppendOptions: hmacOpts(t)}); err != nil {
		t.Errorf("import after a failed one: %v", err)
	}
	// Import refuses a non-empty ledger.
	if _, err := Import(ctx, dstDir, bytes.NewReader(archive.Bytes()), ImportOptions{AppendOptions: hmacOpts(t)}); !errors.Is(err, ErrImport) {
		t.Errorf("import into a non-empty ledger = %v", err)
	}
}
