package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/klauspost/compress/zstd"

	"github.com/proofledger/ledger/codec/keys"
)

// appendReceipts appends n receipts one call at a time (one batch each).
func appendReceipts(t testing.TB, l *Ledger, from, n int) {
	t.Helper()
	signer := testKey(3)
	for i := from; i < from+n; i++ {
		out, err := l.Append(context.Background(), []Submission{{Name: fmt.Sprint(i), Data: receipt(t, signer, i, "", "", -1)}}, AppendOptions{})
		if err != nil || out[0].Status != StatusAppended {
			t.Fatalf("append %d: %v %+v", i, err, out)
		}
	}
}

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
	appendReceipts(t, l, 0, 50)
	l.Close()
	store := filepath.Join(dir, storeDir)
	markers, _ := filepath.Glob(filepath.Join(store, "marker.manifest.*"))
	if len(markers) == 0 {
		t.Fatal("no manifest marker to remove")
	}
	for _, m := range markers {
		os.Remove(m)
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
	os.Remove(filepath.Join(dir, formatFile))
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
	if err := Init(memDir, InitOptions{Origin: "damage.test", Key: testKey(9), FS: mem}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(memDir, Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	appendReceipts(t, l, 0, n)
	vkey := l.VerifierKey()
	img := mem.CrashClone(vfs.CrashCloneCfg{})
	l.Close()
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
	_, err := Open(memDir, Options{FS: fs})
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open = %v, want ErrDamaged saying %q", err, want)
	}
	l, err := Open(memDir, Options{FS: fs, AllowDamaged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(context.Background(), []Submission{{Name: "x", Data: receipt(t, testKey(3), 999, "", "", -1)}}, AppendOptions{}); !errors.Is(err, ErrDamaged) {
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
	appendReceipts(t, l, 0, 7)
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
	appendReceipts(t, l, 0, 10)
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
	_, err = l.Export(ctx, io.Discard)
	named("Export", err, 4)
	err = l.Rebuild(ctx, nil)
	named("Rebuild", err, 6)
	if !l.ProjectionsStale() {
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
	var subs []Submission
	for i := range 3000 {
		subs = append(subs, Submission{Name: fmt.Sprint(i), Data: receipt(t, testKey(3), i, "", "", -1)})
	}
	if _, err := l.Append(context.Background(), subs, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	l.Close()
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
	added, err := l.AddHMACKey(keys.HMACKey{Name: "ci-runner", Secret: secret})
	if err != nil || !added {
		t.Fatal(added, err)
	}
	if added, err := l.AddHMACKey(keys.HMACKey{Name: "ci-runner", Secret: secret}); err != nil || added {
		t.Errorf("registering the same key again = %v %v, want no-op", added, err)
	}
	if _, err := l.AddHMACKey(keys.HMACKey{Name: "ci-runner", Secret: []byte("other")}); !errors.Is(err, ErrExists) {
		t.Errorf("registering another secret under the name = %v, want ErrExists", err)
	}
	appendReceipts(t, l, 0, 3)
	dir := l.Dir()
	l.Close()
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
	if m := mode(filepath.Join(dir, secretsDir, secretPrefix+"ci-runner")); m != 0o600 {
		t.Errorf("secret file mode %o, want 600", m)
	}
	if m := mode(filepath.Join(dir, logKeyFile)); m != 0o600 {
		t.Errorf("log key mode %o, want 600", m)
	}
	err = filepath.Walk(filepath.Join(dir, storeDir), func(p string, info os.FileInfo, err error) error {
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
	defer l2.Close()
	if ks, err := l2.HMACKeys(); err != nil || len(ks) != 1 || !bytes.Equal(ks[0].Secret, secret) {
		t.Errorf("registered keys after reopening: %v %v", ks, err)
	}
}

// TestUpgradeFormat1 turns a new ledger into the shape format 1 had (no
// LEDGER file, no checkpoint log, no size-0 checkpoint, its HMAC secret in
// the store) and opens it for writing: it is upgraded, the secret leaves
// the store, and it audits clean.
func TestUpgradeFormat1(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir, InitOptions{Origin: "old.format"}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendReceipts(t, l, 0, 5)
	l.Close()
	secret := []byte("legacy-secret-kept-in-the-store-987654321")
	db, err := pebble.Open(filepath.Join(dir, storeDir), PebbleOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = errors.Join(
		db.Set(keyFormat, binary.AppendUvarint(nil, 1), pebble.Sync),
		db.Set(append(bytes.Clone(legacySecretPrefix), "ci"...), secret, pebble.Sync),
		db.Delete(checkpointKey(0), pebble.Sync),
		db.Close())
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, formatFile))
	os.Remove(filepath.Join(dir, ckptLogFile))
	// Read-only, a format-1 ledger reads as it is.
	ro, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of format 1: %v", err)
	}
	if ro.Size() != 5 {
		t.Errorf("format 1 read-only: %d events", ro.Size())
	}
	ro.Close()
	l, err = Open(dir, Options{})
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if ks, err := l.HMACKeys(); err != nil || len(ks) != 1 || ks[0].Name != "ci" {
		t.Errorf("moved keys: %v %v", ks, err)
	}
	appendReceipts(t, l, 5, 2)
	rep, err := l.Audit(context.Background(), AuditOptions{})
	if err != nil || !rep.OK() {
		t.Errorf("audit after the upgrade: %v %v", err, rep.Problems)
	}
	l.Close()
	if _, err := os.Stat(filepath.Join(dir, formatFile)); err != nil {
		t.Error("no LEDGER file after the upgrade")
	}
	l, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.format != FormatVersion {
		t.Errorf("format %d after the upgrade", l.format)
	}
	if _, err := getCopy(l.db, append(bytes.Clone(legacySecretPrefix), "ci"...)); !errors.Is(err, ErrNotFound) {
		t.Errorf("the legacy secret is still in the store: %v", err)
	}
}

// archive exports l and returns the decompressed JSON lines.
func archiveLines(t testing.TB, l *Ledger) [][]byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := l.Export(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	zr, err := zstd.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
}

func compress(t testing.TB, lines [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		zw.Write(l)
	}
	zw.Write([]byte("\n"))
	zw.Close()
	return buf.Bytes()
}

// TestImportAtomic tampers with an archive in the ways the review did: a
// changed document, a changed header root, a changed checkpoint, a
// truncated archive. Each import fails and leaves the target empty and
// importable; the intact archive then imports.
func TestImportAtomic(t *testing.T) {
	ctx := context.Background()
	src := newLedger(t, Options{})
	appendReceipts(t, src, 0, 300)
	lines := archiveLines(t, src)
	lines[len(lines)-1] = bytes.TrimSuffix(lines[len(lines)-1], []byte("\n"))
	edit := func(i int, old, new string) [][]byte {
		out := append([][]byte(nil), lines...)
		out[i] = bytes.Replace(lines[i], []byte(old), []byte(new), 1)
		if bytes.Equal(out[i], lines[i]) {
			t.Fatalf("edit of line %d found no %q", i, old)
		}
		return out
	}
	hdr := string(lines[0])
	rootAt := strings.Index(hdr, `"root":"`) + len(`"root":"`)
	cases := map[string][]byte{
		"document":   compress(t, edit(300, `"data":"`, `"data":"AAAA`)),
		"root":       compress(t, edit(0, hdr[rootAt:rootAt+4], "AAAA")),
		"checkpoint": compress(t, edit(0, `"checkpoint":"test.example`, `"checkpoint":"Test.example`)),
		"truncated":  compress(t, lines[:200]),
	}
	dir := filepath.Join(t.TempDir(), "target")
	if err := Init(dir, InitOptions{Origin: "target"}); err != nil {
		t.Fatal(err)
	}
	for name, arch := range cases {
		if _, err := Import(ctx, dir, bytes.NewReader(arch), ImportOptions{}); err == nil {
			t.Errorf("%s: tampered archive imported", name)
		}
		l, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("%s: target after the failed import: %v", name, err)
		}
		if l.Size() != 0 || l.Origin() != "target" {
			t.Errorf("%s: target holds %d events, origin %q", name, l.Size(), l.Origin())
		}
		l.Close()
	}
	st, err := Import(ctx, dir, bytes.NewReader(compress(t, lines)), ImportOptions{})
	if err != nil || st.Events != 300 {
		t.Fatalf("import of the intact archive: %+v %v", st, err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".target.import-*")); len(leftovers) != 0 {
		t.Errorf("staging directories left behind: %v", leftovers)
	}
}

// TestImportBomb imports a small archive whose one line decompresses to
// hundreds of megabytes (the review's 72 KB archive drove import past 6 GB):
// the line is refused at its cap, and memory stays bounded.
func TestImportBomb(t *testing.T) {
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	zw.Write([]byte(`{"format":"ledger-export","version":1,"origin":"x","size":1,"root":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="}` + "\n"))
	chunk := bytes.Repeat([]byte("A"), 1<<20)
	for range 300 {
		zw.Write(chunk)
	}
	zw.Close()
	if buf.Len() > 200<<10 {
		t.Fatalf("bomb of %d bytes", buf.Len())
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	dir := filepath.Join(t.TempDir(), "bombed")
	_, err = Import(context.Background(), dir, &buf, ImportOptions{})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrImport) || !strings.Contains(err.Error(), "line 2: line longer than") {
		t.Fatalf("import of the bomb = %v", err)
	}
	// HeapSys only grows while the process holds more heap: its growth
	// bounds the import's peak.
	if grew := int64(after.HeapSys) - int64(before.HeapSys); grew > 512<<20 {
		t.Errorf("the bomb grew the heap by %d MB", grew>>20)
	}
	t.Logf("heap grew by %d MB (allocated %d MB in all)", (int64(after.HeapSys)-int64(before.HeapSys))>>20, (after.TotalAlloc-before.TotalAlloc)>>20)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a failed import created the target: %v", err)
	}
}
