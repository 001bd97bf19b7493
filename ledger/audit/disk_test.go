package audit_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

var flips = flag.Int("audit.flips", 40, "random single-byte flips in TestRandomSSTFlips")

// ssts lists the table files of a ledger's store, largest first.
func ssts(t testing.TB, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "store", "*.sst"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no tables in %s: %v", dir, err)
	}
	size := func(p string) int64 {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	sort.Slice(names, func(i, j int) bool { return size(names[i]) > size(names[j]) })
	return names
}

// flipFile flips one byte of a file.
func flipFile(t testing.TB, path string, off int64, mask byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= mask
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// evidence is the part of a dump that is the log: leaves, documents, tree
// hashes and checkpoints.
func evidence(d map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range d {
		for _, p := range []string{"leaf/", "doc/", "hash/", "checkpoint/"} {
			if strings.HasPrefix(k, p) {
				out[k] = v
			}
		}
	}
	return out
}

// checkFlip audits a ledger whose files were damaged: the audit must fail
// with one clear line, or report problems; when it reports none, the log
// must read back unchanged (the damaged bytes held nothing the audit
// vouches for, such as a Bloom filter no read consulted), never changed
// or unreadable.
func checkFlip(t *testing.T, dir string, want map[string]string, what string) {
	t.Helper()
	var rep *ledger.AuditReport
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%s: the audit panicked: %v", what, r)
			}
		}()
		rep, err = auditDir(context.Background(), dir, ledger.AuditOptions{})
	}()
	if testing.Verbose() {
		switch {
		case err != nil:
			t.Logf("%s: error: %v", what, err)
		case !rep.OK():
			t.Logf("%s: %d problems, the first: %s", what, len(rep.Problems), rep.Problems[0].What)
		default:
			t.Logf("%s: sound", what)
		}
	}
	switch {
	case err != nil:
		oneLine(t, err)
	case !rep.OK():
		for _, p := range rep.Problems {
			if strings.Contains(p.What, "\n") {
				t.Errorf("%s: a problem of more than one line: %q", what, p.What)
			}
		}
	default:
		got, derr := ledgertest.Dump(dir)
		if derr != nil {
			t.Fatalf("%s: the audit passed, but the store does not read back: %v", what, derr)
		}
		if d := ledgertest.Diff(want, evidence(got)); d != "" {
			t.Fatalf("%s: the audit passed a changed log: %s", what, d)
		}
	}
}

// TestFlippedSSTBytes flips bytes at spread offsets of every table of a
// compacted ledger, as a failing disk would: Pebble's block checksums
// catch most of it first, and the audit must end in a problem or a clear
// one-line error, never a panic or a pass over changed data.
func TestFlippedSSTBytes(t *testing.T) {
	f := build(t, fixtureOptions{compact: true})
	d, err := ledgertest.Dump(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	want := evidence(d)
	for ti, table := range ssts(t, f.dir) {
		st, err := os.Stat(table)
		if err != nil {
			t.Fatal(err)
		}
		size := st.Size()
		for _, frac := range []int64{1, 5, 9, 13, 17, 19} { // twentieths of the file, and its footer
			off := size * frac / 20
			if frac == 19 {
				off = size - 20
			}
			name := fmt.Sprintf("table %d, byte %d of %d", ti, off, size)
			t.Run(name, func(t *testing.T) {
				dir := f.copyDir(t)
				flipFile(t, filepath.Join(dir, "store", filepath.Base(table)), off, 0x10)
				checkFlip(t, dir, want, name)
			})
		}
	}
}

// TestRandomSSTFlips flips one random byte of a random table, -audit.flips
// times, each on a fresh copy: the audit never passes silently over a
// changed document, leaf, tree hash or checkpoint.
func TestRandomSSTFlips(t *testing.T) {
	f := build(t, fixtureOptions{compact: true})
	d, err := ledgertest.Dump(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	want := evidence(d)
	tables := ssts(t, f.dir)
	rng := rand.New(rand.NewPCG(2026, 11))
	for i := range *flips {
		table := tables[rng.IntN(len(tables))]
		st, err := os.Stat(table)
		if err != nil {
			t.Fatal(err)
		}
		off := rng.Int64N(st.Size())
		mask := byte(1 << rng.IntN(8))
		name := fmt.Sprintf("flip %d: %s byte %d mask %#02x", i, filepath.Base(table), off, mask)
		dir := f.copyDir(t)
		flipFile(t, filepath.Join(dir, "store", filepath.Base(table)), off, mask)
		checkFlip(t, dir, want, name)
	}
}
