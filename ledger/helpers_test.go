package ledger

import (
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/vrf"
)

var testEpoch = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func testKey(b byte) ed25519.PrivateKey {
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = b
	}
	return ed25519.NewKeyFromSeed(seed)
}

// uuid4 returns a deterministic UUID v4 for n.
func uuid4(n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n) }

// receipt builds and signs a receipt. pos < 0 means no chain fields.
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

// dump returns every key and value of the store, for comparing states.
func dump(t testing.TB, l *Ledger) map[string]string {
	t.Helper()
	it, err := l.db.NewIter(&pebble.IterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	return out
}

func sameState(a, b map[string]string) (string, bool) {
	for k, v := range a {
		if w, ok := b[k]; !ok {
			return fmt.Sprintf("key %q removed", k), false
		} else if w != v {
			return fmt.Sprintf("key %q changed", k), false
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			return fmt.Sprintf("key %q added", k), false
		}
	}
	return "", true
}

// tamper closes l, changes its store behind the ledger's back with fn (as
// an attacker with disk access would) and returns the ledger reopened with
// AllowDamaged.
func tamper(t testing.TB, l *Ledger, fn func(db *pebble.DB) error) *Ledger {
	t.Helper()
	dir := l.Dir()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	po := PebbleOptions(nil)
	po.ErrorIfNotExists = true
	db, err := pebble.Open(filepath.Join(dir, storeDir), po)
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(db); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := Open(dir, Options{AllowDamaged: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l2.Close() })
	return l2
}
