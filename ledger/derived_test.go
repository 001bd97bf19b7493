package ledger

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/proofledger/ledger/proof"
)

// versionRules derive r/<id> = <version>:<id> for every event, under
// their Version; entries counts the calls of Entries.
type versionRules struct {
	v       string
	entries *int
}

func (r versionRules) Version() string   { return r.v }
func (versionRules) Begin() RuleBatch    { return passBatch{} }
func (versionRules) Keyspaces() [][]byte { return [][]byte{[]byte("r/")} }
func (r versionRules) Entries(ev *proof.Leaf) []KV {
	*r.entries++
	return []KV{{Key: []byte("r/" + ev.ID), Value: []byte(r.v + ":" + ev.ID)}}
}

// TestDerivedVersion checks that derived entries written under another
// Version of the rules are stale: a read-only open reports them stale
// (queries refuse them), a write open rebuilds them under the new
// version and records it, and the next open with the same version
// rebuilds nothing. Rules without a version never cause a rebuild.
func TestDerivedVersion(t *testing.T) {
	calls := 0
	v1 := versionRules{v: "test/1", entries: &calls}
	l := newLedger(t, Options{Rules: v1})
	appendRaw(t, l, 0, 3)
	dir := l.Dir()
	d := dump(t, l)
	if d["r/doc-000002"] != "test/1:doc-000002" || d[string(keyDerived)] != "test/1" {
		t.Fatalf("under version 1: r/doc-000002 = %q, %s = %q", d["r/doc-000002"], keyDerived, d[string(keyDerived)])
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	open := func(opts Options) *Ledger {
		t.Helper()
		l, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	v2 := versionRules{v: "test/2", entries: &calls}
	ro := open(Options{Rules: v2, ReadOnly: true})
	if !ro.Stale() {
		t.Error("read-only open under another version: derived entries not stale")
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}

	calls = 0
	w := open(Options{Rules: v2})
	if w.Stale() || calls != 3 {
		t.Errorf("write open under version 2: stale %v, Entries called %d times, want a rebuild of 3 events", w.Stale(), calls)
	}
	d = dump(t, w)
	if d["r/doc-000002"] != "test/2:doc-000002" || d[string(keyDerived)] != "test/2" {
		t.Errorf("after the rebuild: r/doc-000002 = %q, %s = %q", d["r/doc-000002"], keyDerived, d[string(keyDerived)])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	calls = 0
	w = open(Options{Rules: v2})
	if w.Stale() || calls != 0 {
		t.Errorf("reopen under the same version: stale %v, Entries called %d times, want no rebuild", w.Stale(), calls)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// Rules that declare no version are not compared with the store's.
	w = open(Options{Rules: passRules{}})
	if w.Stale() {
		t.Error("rules without a version: derived entries stale")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// A store without the key (every ledger written before versions
	// existed) rebuilds once.
	l = tamper(t, open(Options{Rules: v2}), func(db *pebble.DB) error { return db.Delete(keyDerived, pebble.Sync) })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	calls = 0
	w = open(Options{Rules: v2})
	if w.Stale() || calls != 3 {
		t.Errorf("write open of a store without %s: stale %v, Entries called %d times, want a rebuild of 3 events", keyDerived, w.Stale(), calls)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
