package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// storeFiles lists a store directory's files with their sizes.
func storeFiles(t testing.TB, fs vfs.FS, dir string) map[string]int64 {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, n := range names {
		st, err := fs.Stat(fs.PathJoin(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = st.Size()
	}
	return out
}

// TestOpenNeverCreates removes Pebble's manifest marker (as the review did
// with rm store/marker.manifest.*): every open, in write mode too, must
// refuse the store as damaged and change no file; before, Pebble created a
// new empty database and deleted the old tables.
func TestOpenNeverCreates(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir, InitOptions{Origin: "never.creates"}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendRaw(t, l, 0, 50)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, storeDir)
	markers, _ := filepath.Glob(filepath.Join(store, "marker.manifest.*"))
	if len(markers) == 0 {
		t.Fatal("no manifest marker to remove")
	}
	for _, m := range markers {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	before := storeFiles(t, vfs.Default, store)
	for _, opts := range []Options{{}, {ReadOnly: true}, {AllowDamaged: true}} {
		_, err := Open(dir, opts)
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "nothing was changed") {
			t.Errorf("Open(%+v) of a store without its marker = %v, want ErrDamaged", opts, err)
		}
	}
	if err := Init(dir, InitOptions{}); !errors.Is(err, ErrExists) {
		t.Errorf("Init over the ledger = %v, want ErrExists", err)
	}
	if after := storeFiles(t, vfs.Default, store); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("store files changed:\nbefore %v\nafter  %v", before, after)
	}
	// And without the LEDGER format file, the directory is no ledger.
	if err := os.Remove(filepath.Join(dir, formatFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrNotLedger) {
		t.Errorf("Open without the format file = %v, want ErrNotLedger", err)
	}
}

// memLedger makes a ledger on a crashable in-memory file system with n
// receipts appended one batch each, and returns a crash image of it taken
// without closing (the last batches are still in the WAL).
func memLedger(t testing.TB, n int) (*vfs.MemFS, string) {
	t.Helper()
	mem := vfs.NewCrashableMem()
	if err := Init(memDir, InitOptions{Origin: "damage.test", Key: testKey(9), FS: mem, Locker: NewMemLocker()}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(memDir, Options{FS: mem, Locker: NewMemLocker()})
	if err != nil {
		t.Fatal(err)
	}
	appendRaw(t, l, 0, n)
	vkey := l.VerifierKey()
	// Published: the checkpoint log holds the last checkpoint, synced
	// (an append is answered before that sync; see sequencer.go).
	if l.Size() != int64(n) {
		t.Fatalf("size %d, want %d", l.Size(), n)
	}
	img := mem.CrashClone(vfs.CrashCloneCfg{})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return img, vkey
}

// walFiles returns the store's WAL files, oldest first.
func walFiles(t testing.TB, fs vfs.FS) []string {
	t.Helper()
	names, err := fs.List(fs.PathJoin(memDir, storeDir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			out = append(out, fs.PathJoin(memDir, storeDir, n))
		}
	}
	sort.Strings(out)
	return out
}

// checkDamaged asserts that the ledger on fs refuses to open for writing
// (ErrDamaged, naming the sizes), refuses appends when opened for
// diagnosis, and audits with problems.
func checkDamaged(t *testing.T, fs vfs.FS, want string) {
	t.Helper()
	_, err := Open(memDir, Options{FS: fs, Locker: NewMemLocker()})
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open = %v, want ErrDamaged saying %q", err, want)
	}
	l, err := Open(memDir, Options{FS: fs, Locker: NewMemLocker(), AllowDamaged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	if _, err := l.Append(context.Background(), []*Entry{rawEntry(999)}); !errors.Is(err, ErrDamaged) {
		t.Errorf("append to a damaged ledger = %v, want ErrDamaged", err)
	}
	rep, err := l.Audit(context.Background(), AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() {
		t.Error("the audit of a damaged ledger found nothing")
	}
}

// TestLostWALIsDamage removes the newest WAL file, as the review did after
// a SIGKILL: the store falls back to an earlier size than the ledger
// signed. Before, the next append reused the lost sequence numbers and the
// log key signed a second root for a signed size; now the ledger refuses.
func TestLostWALIsDamage(t *testing.T) {
	img, _ := memLedger(t, 30)
	wals := walFiles(t, img)
	if len(wals) == 0 {
		t.Fatal("no WAL")
	}
	if err := img.Remove(wals[len(wals)-1]); err != nil {
		t.Fatal(err)
	}
	checkDamaged(t, img, "but the ledger signed a checkpoint of size 30")
}

// TestFlippedWALByteIsDamage flips one byte near the end of the newest WAL:
// Pebble stops its replay there and silently drops the last acknowledged
// batch. The checkpoint log remembers the signed size.
func TestFlippedWALByteIsDamage(t *testing.T) {
	img, _ := memLedger(t, 30)
	wals := walFiles(t, img)
	buf, err := img.UnsafeGetFileDataBuffer(wals[len(wals)-1])
	if err != nil {
		t.Fatal(err)
	}
	if len(buf) < 100 {
		t.Fatalf("WAL of %d bytes", len(buf))
	}
	buf[len(buf)-40] ^= 0xff
	checkDamaged(t, img, "but the ledger signed a checkpoint of size 30")
}

// TestCheckpointLogMustMatchRoot changes a stored tree hash that the root
// of the latest size depends on: open refuses the disagreeing root.
func TestStoredRootMustMatchSigned(t *testing.T) {
	l := newLedger(t, Options{})
	appendRaw(t, l, 0, 7)
	l = tamper(t, l, func(db *pebble.DB) error {
		return db.Set(hashKey(tlog0(6)), make([]byte, 32), nil)
	})
	if !errors.Is(l.Damage(), ErrDamaged) || !strings.Contains(l.Damage().Error(), "its tree hashes give root") {
		t.Fatalf("damage = %v", l.Damage())
	}
}

// TestAlteredDataNeverServed edits a stored document and a stored leaf
// behind the ledger's back: reads that answer with them (get --raw,
// export, prove, rebuild) fail naming the event, and the audit finds both.
func TestAlteredDataNeverServed(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, Options{})
	appendRaw(t, l, 0, 10)
	l = tamper(t, l, func(db *pebble.DB) error {
		doc, err := getCopy(db, dataKey(4))
		if err != nil {
			return err
		}
		doc = bytes.Replace(doc, []byte(`"pass"`), []byte(`"fail"`), 1)
		leaf, err := getCopy(db, eventKey(6))
		if err != nil {
			return err
		}
		leaf = bytes.Replace(leaf, []byte(`"subject":"`), []byte(`"subject":"X`), 1)
		return errors.Join(db.Set(dataKey(4), doc, nil), db.Set(eventKey(6), leaf, nil))
	})
	if l.Damage() != nil {
		t.Fatalf("an edit the open check cannot see opened as damaged: %v", l.Damage())
	}
	named := func(what string, err error, seq int64) {
		t.Helper()
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("event %d", seq)) {
			t.Errorf("%s = %v, want ErrCorrupt naming event %d", what, err, seq)
		}
	}
	_, err := l.VerifiedEvent(4, true)
	named("VerifiedEvent(4) of an edited document", err, 4)
	_, err = l.Event(6, false)
	named("Event(6) of an edited leaf", err, 6)
	_, err = l.ProveInclusion(6, 0)
	named("ProveInclusion(6)", err, 6)
	_, err = l.Export(ctx, io.Discard, ExportOptions{})
	named("Export", err, 4)
	err = l.Rebuild(ctx, nil)
	named("Rebuild", err, 6)
	if !l.Stale() {
		t.Error("a failed rebuild left the projections marked complete")
	}
	rep, err := l.Audit(ctx, AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var doc, leaf bool
	for _, p := range rep.Problems {
		doc = doc || p.Seq == 4 && strings.Contains(p.What, "document does not match")
		leaf = leaf || p.Seq == 6
	}
	if !doc || !leaf {
		t.Errorf("audit found %v, want the document of event 4 and the leaf of event 6", rep.Problems)
	}
}

// tlog0 is the stored-hash index of leaf n's own hash.
func tlog0(n int64) int64 {
	// StoredHashIndex(0, n) = n + n/2 + n/4 + ...
	x := n
	for i := n >> 1; i > 0; i >>= 1 {
		x += i
	}
	return x
}

// TestScanStopsCleanly ends scans early on a ledger of more than one
// decoding chunk and closes the ledger right after: the review saw Pebble
// panic at Close ("element has outstanding references") in 18 of 20 runs of
// `ledger log --limit 1`, because the scan's reader goroutine still held an
// iterator.
func TestScanStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var entries []*Entry
	for i := range 3000 {
		entries = append(entries, rawEntry(i))
	}
	if _, err := l.Append(context.Background(), entries); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		l, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		if err := l.Scan(int64(i), false, func(*Event) (bool, error) { n++; return n < 1+i%3, nil }); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSecretsOutsideStore registers an HMAC key: the ledger directory is
// 0700, the secret's file 0600, and no file of the store holds the secret.
func TestSecretsOutsideStore(t *testing.T) {
	l := newLedger(t, Options{})
	secret := []byte("a-very-recognisable-hmac-secret-0123456789")
	if err := l.PutSecret("hmac-ci-runner", secret); err != nil {
		t.Fatal(err)
	}
	if err := l.PutSecret("../escape", secret); !errors.Is(err, ErrBadName) {
		t.Errorf("a secret named ../escape = %v, want ErrBadName", err)
	}
	appendRaw(t, l, 0, 3)
	dir := l.Dir()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	mode := func(p string) os.FileMode {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode().Perm()
	}
	if m := mode(dir); m != 0o700 {
		t.Errorf("ledger directory mode %o, want 700", m)
	}
	if m := mode(filepath.Join(dir, secretsDir)); m != 0o700 {
		t.Errorf("secrets directory mode %o, want 700", m)
	}
	if m := mode(filepath.Join(dir, secretsDir, "hmac-ci-runner")); m != 0o600 {
		t.Errorf("secret file mode %o, want 600", m)
	}
	if m := mode(filepath.Join(dir, logKeyFile)); m != 0o600 {
		t.Errorf("log key mode %o, want 600", m)
	}
	err := filepath.Walk(filepath.Join(dir, storeDir), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, secret) {
			t.Errorf("store file %s holds the HMAC secret", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	l2, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l2.Close(); err != nil {
			t.Error(err)
		}
	}()
	var got []string
	if err := l2.Secrets("", func(name string, v []byte) error {
		if !bytes.Equal(v, secret) {
			t.Errorf("secret %s changed", name)
		}
		got = append(got, name)
		return nil
	}); err != nil || len(got) != 1 || got[0] != "hmac-ci-runner" {
		t.Errorf("secrets after reopening: %v %v", got, err)
	}
}
