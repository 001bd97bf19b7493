package admit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/vrf"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

const vectors = "../../testdata/vectors"

var testEpoch = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func readFile(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testKey(b byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32))
}

// uuid4 returns a deterministic UUID v4 for n.
func uuid4(n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n) }

// newLedger makes a ledger (with a fixed log key) in a new directory.
func newLedger(t testing.TB, opts ledger.Options) *Ledger {
	t.Helper()
	dir := t.TempDir()
	if err := ledger.Init(dir, ledger.InitOptions{Origin: "test.example/ledger", Key: testKey(7)}); err != nil {
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

// dump closes *l, returns every key and value of its store, and reopens
// it into *l.
func dump(t testing.TB, l **Ledger) map[string]string {
	t.Helper()
	dir := (*l).Dir()
	if err := (*l).Close(); err != nil {
		t.Fatal(err)
	}
	d, err := ledgertest.Dump(dir)
	if err != nil {
		t.Fatal(err)
	}
	nl, err := Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := nl.Close(); err != nil {
			t.Error(err)
		}
	})
	*l = nl
	return d
}

// receipt builds and signs a receipt. pos < 0 means no chain fields; a nil
// key leaves it unsigned.
func receipt(t testing.TB, priv ed25519.PrivateKey, n int, agent, prev string, pos int64) []byte {
	t.Helper()
	d := vrf.Draft{
		ReceiptID:  uuid4(n),
		VerifiedAt: testEpoch.Add(time.Duration(n) * time.Minute),
		Details:    []vrf.Detail{{Name: "t1", Status: "pass", DurationMS: 1.5}, {Name: "t2", Status: "pass", DurationMS: 2}},
		Hashes:     vrf.Hashes{Input: vrf.ShortHash([]byte("in")), Output: vrf.ShortHash([]byte(fmt.Sprint(n))), Suite: vrf.ShortHash([]byte("suite"))},
		Metadata:   vrf.Metadata{ExecutionMS: 3.5, Sandboxed: true},
		TaskType:   "code_generation",
		AgentID:    agent,
	}
	if pos >= 0 {
		d.Chain = &vrf.ChainLink{PreviousReceipt: prev, Position: pos}
	}
	v, err := d.Build()
	if err != nil {
		t.Fatal(err)
	}
	if priv == nil {
		return append(canonjson.Indent(v), '\n')
	}
	b, err := vrf.Sign(v, priv)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// appendReceipts appends n unchained signed receipts, one call each.
func appendReceipts(t testing.TB, l *Ledger, from, n int) {
	t.Helper()
	signer := testKey(3)
	for i := from; i < from+n; i++ {
		out, err := l.Append(context.Background(), []Submission{{Name: fmt.Sprint(i), Data: receipt(t, signer, i, "", "", -1)}}, Options{})
		if err != nil || out[0].Status != ledger.StatusAppended {
			t.Fatalf("append %d: %v %+v", i, err, out)
		}
	}
}
