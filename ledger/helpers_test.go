package ledger

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/proof"
)

var testEpoch = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func testKey(b byte) ed25519.PrivateKey {
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = b
	}
	return ed25519.NewKeyFromSeed(seed)
}

// rawEntry returns entry n: a document the store keeps without reading it,
// under a spec kind's identity (no chain position, no signer).
func rawEntry(n int) *Entry {
	return &Entry{Name: fmt.Sprint(n), Kind: codec.KindAVIRSpec, ID: fmt.Sprintf("doc-%06d", n),
		Data:    []byte(fmt.Sprintf(`{"doc":%d,"status":"pass","pad":"%032x"}`, n, n)),
		Arrival: testEpoch.Add(time.Duration(n) * time.Second),
		Leaf:    proof.Leaf{Subject: fmt.Sprintf("subject-%d", n%5), Position: -1}}
}

// appendRaw appends entries from..from+n-1, one call each.
func appendRaw(t testing.TB, l *Ledger, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		out, err := l.Append(context.Background(), []*Entry{rawEntry(i)})
		if err != nil || out[0].Status != StatusAppended {
			t.Fatalf("append %d: %v %+v", i, err, out)
		}
	}
}

// dump returns every key and value of the store, for comparing states.
func dump(t testing.TB, l *Ledger) map[string]string {
	t.Helper()
	it, err := l.db.NewIter(&pebble.IterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		t.Fatal(err)
	}
	return out
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
	t.Cleanup(func() {
		if err := l2.Close(); err != nil {
			t.Error(err)
		}
	})
	return l2
}
