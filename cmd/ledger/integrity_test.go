package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage"
	"github.com/cockroachdb/pebble/v2/sstable"

	"github.com/proofledger/ledger/ledger"
)

// integrityLedger makes a ledger of 40 chained receipts with the real
// binary and returns its directory and the receipt files.
func integrityLedger(t *testing.T) (string, []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ledger")
	mustRun(t, 0, "init", "--dir", dir, "--origin", "integrity.test")
	files := writeReceiptChains(t, t.TempDir(), 4, 10)
	mustRun(t, 0, append([]string{"append", "--dir", dir}, files...)...)
	return dir, files
}

// checkOneLine asserts a failure exits with code and says want on one
// "ledger:" line, without a Go stack trace.
func checkOneLine(t *testing.T, what string, stderr string, code, wantCode int, want string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("%s: exit %d, want %d (stderr %q)", what, code, wantCode, stderr)
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "ledger: ") || !strings.Contains(lines[0], want) {
		t.Errorf("%s: stderr %q, want one ledger: line saying %q", what, stderr, want)
	}
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic:") {
		t.Errorf("%s: a stack trace: %s", what, stderr)
	}
}

// TestMissingMarkerDeletesNothing is the review's first finding: with
// store/marker.manifest.* removed, write commands created an empty store
// and deleted the tables. Every command must refuse (exit 7) and leave
// every file as it was.
func TestMissingMarkerDeletesNothing(t *testing.T) {
	dir, files := integrityLedger(t)
	store := filepath.Join(dir, "store")
	markers, err := filepath.Glob(filepath.Join(store, "marker.manifest.*"))
	if err != nil || len(markers) == 0 {
		t.Fatalf("marker files: %v %v", markers, err)
	}
	for _, m := range markers {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	list := func() string {
		var b strings.Builder
		err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			// lock.info names the last writer that took the lock: each
			// refused writer records itself before it finds the damage
			// (and so makes readers check the store rather than read the
			// read copy its predecessor left). It is no ledger data.
			if !info.IsDir() && info.Name() != "lock.info" {
				fmt.Fprintf(&b, "%s %d\n", p, info.Size())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	before := list()
	for _, args := range [][]string{
		{"append", files[0]},
		{"prove", "0"},
		{"rebuild"},
		{"log"},
		{"get", "0", "--raw"},
		{"checkpoint"},
		{"scorecard"},
		{"export", filepath.Join(t.TempDir(), "x.zst")},
		{"key", "add-hmac", "k", "testdata/vectors/rvww/hmac_key.txt"},
	} {
		_, stderr, code := runLedger(t, nil, append(args, "--dir", dir)...)
		checkOneLine(t, strings.Join(args, " "), stderr, code, exitDamaged, "ledger damaged")
	}
	_, stderr, code := runLedger(t, nil, "audit", "--dir", dir)
	if code != exitDamaged || !strings.Contains(stderr, "MANIFEST") {
		t.Errorf("audit of a store without its marker: exit %d, %q", code, stderr)
	}
	if after := list(); after != before {
		t.Errorf("files changed:\nbefore\n%s\nafter\n%s", before, after)
	}
}

// storeDirs returns the ledger's Pebble stores: its own and those of its
// read copies (copies/<gen>/store), which readers read.
func storeDirs(t *testing.T, dir string) []string {
	t.Helper()
	copies, err := filepath.Glob(filepath.Join(dir, "copies", "*", "store"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(dir, "store")}, copies...)
}

// editStore changes the store and its read copies behind the ledger's
// back, as an attacker with disk access would.
func editStore(t *testing.T, dir string, fn func(db *pebble.DB) error) {
	t.Helper()
	for _, store := range storeDirs(t, dir) {
		o := ledger.PebbleOptions(nil)
		o.ErrorIfNotExists = true
		db, err := pebble.Open(store, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := fn(db); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func be8(n uint64) []byte {
	var b [8]byte
	for i := 7; i >= 0; i-- {
		b[i] = byte(n)
		n >>= 8
	}
	return b[:]
}

// TestEditedDocumentNotServed edits a stored document ("pass" → "fail",
// as the review did to p/4): get --raw, export and prove used to serve it
// with exit 0. Now each fails naming event 4 (exit 7), export leaves no
// file, and audit exits 4 naming the event.
func TestEditedDocumentNotServed(t *testing.T) {
	dir, _ := integrityLedger(t)
	editStore(t, dir, func(db *pebble.DB) error {
		k := append([]byte("doc/"), be8(4)...)
		v, closer, err := db.Get(k)
		if err != nil {
			return err
		}
		doc := bytes.Replace(v, []byte(`"pass"`), []byte(`"fail"`), 1)
		if err := closer.Close(); err != nil {
			return err
		}
		return db.Set(k, doc, pebble.Sync)
	})
	out, stderr, code := runLedger(t, nil, "get", "4", "--raw", "--dir", dir)
	checkOneLine(t, "get --raw", stderr, code, exitDamaged, "event 4")
	if out != "" {
		t.Errorf("get --raw wrote %d bytes of an altered document", len(out))
	}
	archive := filepath.Join(t.TempDir(), "backup.jsonl.zst")
	_, stderr, code = runLedger(t, nil, "export", archive, "--dir", dir)
	checkOneLine(t, "export", stderr, code, exitDamaged, "event 4")
	if ents, _ := os.ReadDir(filepath.Dir(archive)); len(ents) != 0 {
		t.Errorf("export left %d files behind", len(ents))
	}
	out, _, code = runLedger(t, nil, "audit", "--json", "--dir", dir)
	var rep struct {
		OK       bool
		Problems []ledger.Problem
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitInvalid || rep.OK {
		t.Fatalf("audit: exit %d, %v, %q", code, err, out)
	}
	found := false
	for _, p := range rep.Problems {
		found = found || p.Seq == 4
	}
	if !found {
		t.Errorf("audit problems %v do not name event 4", rep.Problems)
	}
}

// TestEditedLeafNotProven edits a stored leaf: prove used to exit 0 with a
// proof that failed verification, and rebuild projected the edited leaf.
func TestEditedLeafNotProven(t *testing.T) {
	dir, _ := integrityLedger(t)
	editStore(t, dir, func(db *pebble.DB) error {
		k := append([]byte("leaf/"), be8(4)...)
		v, closer, err := db.Get(k)
		if err != nil {
			return err
		}
		leaf := bytes.Replace(v, []byte(`"verdict":"pass"`), []byte(`"verdict":"fail"`), 1)
		if err := closer.Close(); err != nil {
			return err
		}
		return db.Set(k, leaf, pebble.Sync)
	})
	proofFile := filepath.Join(t.TempDir(), "p.proof")
	_, stderr, code := runLedger(t, nil, "prove", "4", "-o", proofFile, "--dir", dir)
	checkOneLine(t, "prove", stderr, code, exitDamaged, "event 4")
	if _, err := os.Stat(proofFile); err == nil {
		t.Error("prove wrote a proof of an altered leaf")
	}
	_, stderr, code = runLedger(t, nil, "rebuild", "--quiet", "--dir", dir)
	checkOneLine(t, "rebuild", stderr, code, exitDamaged, "event 4")
}

// TestProveVerifiesEverySize proves inclusion and consistency, from size 0
// too (the empty tree: its root is the RFC 6962 empty hash, which the
// verifier now insists on), and checks the empty ledger's checkpoint.
func TestProveVerifiesEverySize(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	mustRun(t, 0, "init", "--dir", empty, "--origin", "empty.test")
	ck := mustRun(t, 0, "checkpoint", "--dir", empty)
	if !strings.HasPrefix(ck, "empty.test\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n\n— empty.test ") {
		t.Errorf("the empty ledger's checkpoint:\n%s", ck)
	}
	dir, _ := integrityLedger(t)
	pub := filepath.Join(dir, "log.pub")
	tmp := t.TempDir()
	for _, old := range []string{"0", "1", "17", "40"} {
		p := filepath.Join(tmp, "c"+old)
		mustRun(t, 0, "prove", "--consistency", old, "40", "-o", p, "--dir", dir)
		mustRun(t, 0, "verify-proof", p, "--key", pub)
	}
	// A size-0 proof carrying another old root is refused.
	data, err := os.ReadFile(filepath.Join(tmp, "c0"))
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(tmp, "bad")
	zeroed := bytes.Replace(data, []byte("old 0 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="), []byte("old 0 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="), 1)
	if bytes.Equal(zeroed, data) {
		t.Fatal("the size-0 proof does not carry the empty tree's root")
	}
	if err := os.WriteFile(bad, zeroed, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runLedger(t, nil, "verify-proof", bad, "--key", pub); code != exitInvalid {
		t.Errorf("a size-0 proof with a zero old root: exit %d, %s", code, stderr)
	}
	// A proof file whose first line is 50 MB: a short error.
	huge := filepath.Join(tmp, "huge")
	if err := os.WriteFile(huge, bytes.Repeat([]byte("x"), 50<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runLedger(t, nil, "verify-proof", huge, "--key", pub)
	if code == 0 || len(stderr) > 500 {
		t.Errorf("50 MB proof file: exit %d, %d bytes of error", code, len(stderr))
	}
}

// TestImportKilledLeavesTarget kills `ledger import` midway: the target
// stays empty and a second import succeeds (the review: 14 of 15 killed
// imports left partial ledgers that could not be re-imported).
func TestImportKilledLeavesTarget(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	mustRun(t, 0, "init", "--dir", src)
	files := writeReceiptChains(t, t.TempDir(), 20, 100)
	mustRun(t, 0, append([]string{"append", "--dir", src}, files...)...)
	archive := filepath.Join(t.TempDir(), "a.zst")
	mustRun(t, 0, "export", archive, "--dir", src)
	for i := range 3 {
		dst := filepath.Join(t.TempDir(), fmt.Sprint("dst", i))
		mustRun(t, 0, "init", "--dir", dst)
		cmd := exec.Command(ledgerBin, "import", archive, "--dir", dst)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+100*i) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		// Killed, or finished just before the kill (which the checks
		// below catch): an exit status either way.
		if err := cmd.Wait(); err != nil && !errors.As(err, new(*exec.ExitError)) {
			t.Fatalf("kill %d: wait: %v", i, err)
		}
		out := mustRun(t, 0, "log", "--dir", dst)
		if out != "" {
			t.Errorf("kill %d: the target holds events:\n%.300s", i, out)
		}
		out = mustRun(t, 0, "import", archive, "--dir", dst)
		if !strings.Contains(out, "imported 2000 events") {
			t.Errorf("re-import after kill %d: %s", i, out)
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".*.import-*")); len(left) != 0 {
			t.Errorf("staging directories left after kill %d and a re-import: %v", i, left)
		}
	}
}

// TestInputsBounded: a FIFO is refused at once (it used to hang), a
// symlinked document in a directory is appended (it used to be skipped
// with exit 0), a symlink loop is reported, and a time the ledger cannot
// represent is a usage error (it used to return everything).
func TestInputsBounded(t *testing.T) {
	dir, _ := integrityLedger(t)
	in := t.TempDir()
	fifo := filepath.Join(in, "pipe.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ledgerBin, "append", fifo, "--dir", dir)
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatal("append of a FIFO hangs")
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitMalformed || !strings.Contains(string(out), "FIFO") {
		t.Errorf("append of a FIFO: %v, %s", err, out)
	}
	docs := t.TempDir()
	real := writeReceiptChains(t, t.TempDir(), 1, 1)[0]
	// A receipt of another key, so that it is new to the ledger.
	if err := os.Symlink(real, filepath.Join(docs, "linked.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(docs, filepath.Join(docs, "loop")); err != nil {
		t.Fatal(err)
	}
	stdout, _, code := runLedger(t, nil, "append", docs, "--dir", dir)
	if !strings.Contains(stdout, "linked.json: replay refused") || !strings.Contains(stdout, "symbolic link loop") || code != exitMalformed {
		t.Errorf("append of a directory with a symlink and a loop: exit %d\n%s", code, stdout)
	}
	for _, arg := range []string{"2262-04-12", "9999-12-31", "Infd", "NaNw", "1e300d", "1677-01-01"} {
		_, stderr, code := runLedger(t, nil, "log", "--since", arg, "--dir", dir)
		checkOneLine(t, "log --since "+arg, stderr, code, exitUsage, "--since")
	}
	_, stderr, code := runLedger(t, nil, "log", "--since", "2026-11-02", "--until", "2026-11-01", "--dir", dir)
	checkOneLine(t, "log with an inverted window", stderr, code, exitUsage, "the window is empty")
}

// TestLogLimitNoPanic runs `log --limit` on a ledger of more than one
// decoding chunk, repeatedly (the review: a Pebble panic at Close in 18 of
// 20 runs).
func TestLogLimitNoPanic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledger")
	mustRun(t, 0, "init", "--dir", dir)
	files := writeReceiptChains(t, t.TempDir(), 30, 40)
	mustRun(t, 0, append([]string{"append", "--dir", dir}, files...)...)
	for i := range 20 {
		args := []string{"log", "--limit", fmt.Sprint(1 + i%3), "--dir", dir}
		if i%2 == 1 {
			args = append(args, "--json")
		}
		out, stderr, code := runLedger(t, nil, args...)
		if code != 0 || stderr != "" || strings.Count(out, "\n") != 1+i%3 {
			t.Fatalf("%v: exit %d, stderr %q, %d lines", args, code, stderr, strings.Count(out, "\n"))
		}
	}
}

// TestKeyFilesPrivate registers an HMAC key with the CLI: the secret is
// in a 0600 file and in no store file.
func TestKeyFilesPrivate(t *testing.T) {
	dir, _ := integrityLedger(t)
	secret := []byte("cli-registered-hmac-secret-for-grep-4242")
	keyFile := filepath.Join(t.TempDir(), "k.bin")
	if err := os.WriteFile(keyFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, 0, "key", "add-hmac", "ci", keyFile, "--dir", dir)
	out := mustRun(t, 0, "key", "add-hmac", "ci", keyFile, "--dir", dir)
	if !strings.Contains(out, "already registered") {
		t.Errorf("second add-hmac: %s", out)
	}
	err := filepath.Walk(filepath.Join(dir, "store"), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if bytes.Contains(b, secret) {
			t.Errorf("%s holds the secret", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "secrets", "hmac-ci"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("secret file: %v %v", st, err)
	}
}

// TestChecksumFailureIsOneLine flips a byte in the middle of a table's
// block of leaves, which every command below reads in full: Pebble's
// checksum catches it. Before, Pebble's Fatalf ended the process with a
// stack trace and left a truncated export behind; now each command fails
// with one ledger: line (exit 7) and leaves no file. rebuild opens the
// store for writing, so a background compaction may meet the damaged
// table too: Pebble's messages about it are below warning level, shown
// with --verbose only.
func TestChecksumFailureIsOneLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledger")
	mustRun(t, 0, "init", "--dir", dir)
	files := writeReceiptChains(t, t.TempDir(), 10, 100)
	mustRun(t, 0, append([]string{"append", "--dir", dir}, files...)...)
	// Every command reads the store itself (as in a ledger made before
	// read copies): which table of a read copy holds which keys depends on
	// when its flush and compactions ran.
	if err := os.RemoveAll(filepath.Join(dir, "copies")); err != nil {
		t.Fatal(err)
	}
	tables, err := filepath.Glob(filepath.Join(dir, "store", "*.sst"))
	if err != nil {
		t.Fatal(err)
	}
	var table string
	var blocks []tableBlock
	for _, p := range tables {
		if bs := leafBlocks(t, p); len(bs) > len(blocks) {
			table, blocks = p, bs
		}
	}
	if len(blocks) < 3 {
		t.Fatalf("the leaves are in %d blocks of a table: too few to damage one in the middle", len(blocks))
	}
	// A block in the middle of the leaves: each command below opens the
	// store and reads leaves before it meets the damage.
	b := blocks[len(blocks)/2]
	f, err := os.OpenFile(table, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	off := b.offset + b.length/2
	if _, err := f.ReadAt(one, off); err != nil {
		t.Fatal(err)
	}
	one[0] ^= 0x5a
	if _, err := f.WriteAt(one, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "a.zst")
	for _, args := range [][]string{{"export", archive}, {"audit"}, {"log"}, {"rebuild"}} {
		_, stderr, code := runLedger(t, nil, append(args, "--dir", dir)...)
		if args[0] == "audit" {
			if code != exitInvalid || strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
				t.Errorf("audit on a corrupted table: exit %d, want %d; stderr %q", code, exitInvalid, stderr)
			}
			continue
		}
		checkOneLine(t, fmt.Sprint(args), stderr, code, exitDamaged, "corrupt store")
	}
	if _, err := os.Stat(archive); err == nil {
		t.Error("a failed export left its archive")
	}
	if ents, err := os.ReadDir(filepath.Dir(archive)); err != nil || len(ents) != 0 {
		t.Errorf("a failed export left %d files (%v)", len(ents), err)
	}
	// --verbose shows Pebble's own report of the corruption, below the
	// warning level that the lines above are held to.
	_, stderr, code := runLedger(t, nil, "--verbose", "rebuild", "--dir", dir)
	if code != exitDamaged || !strings.Contains(stderr, "level=INFO msg=\"store corruption\" component=pebble") {
		t.Errorf("rebuild --verbose: exit %d, stderr without Pebble's corruption report:\n%s", code, stderr)
	}
}

// storeReport is an opened ledger's corruption report, for
// reportCorruption.
type storeReport struct{ err error }

func (storeReport) Dir() string         { return "/tmp/l" }
func (r storeReport) Corruption() error { return r.err }

// TestReportCorruption checks that a corruption only a background job met
// is said once, on one warning line, and that one the command's error
// reports is not said twice.
func TestReportCorruption(t *testing.T) {
	corrupt := fmt.Errorf("%w: pebble: file 000011: block 757905/1309: crc32c checksum mismatch 1 != 2", ledger.ErrCorrupt)
	tests := []struct {
		name   string
		err    error // the command's
		report error // the store's
		warn   bool
	}{
		{"success, nothing reported", nil, nil, false},
		{"success, a background job met a corruption", nil, corrupt, true},
		{"failed on the corruption", exitf(exitInternal, "log: %w", corrupt), corrupt, false},
		{"failed on damage", &ledger.DamageError{Dir: "/tmp/l", Reason: "x"}, corrupt, false},
		{"failed otherwise", usageErrorf("--since: bad"), corrupt, true},
		{"failed otherwise, nothing reported", usageErrorf("--since: bad"), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			e := &env{stderr: &stderr, log: slog.New(slog.NewTextHandler(&stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
				opened: []corruptionReporter{storeReport{}, storeReport{tt.report}}}
			e.reportCorruption(tt.err)
			out := stderr.String()
			if !tt.warn {
				if out != "" {
					t.Errorf("said %q", out)
				}
				return
			}
			if strings.Count(out, "\n") != 1 || !strings.Contains(out, "level=WARN") || !strings.Contains(out, "crc32c checksum mismatch 1 != 2") || !strings.Contains(out, "ledger audit") {
				t.Errorf("said %q, want one warning line with the corruption", out)
			}
		})
	}
}

// tableBlock is a block's place in a table file.
type tableBlock struct{ offset, length int64 }

// leafBlocks returns the data blocks of the table at path that hold
// leaves (the keys leaf/...), in file order: the blocks its own reader
// loads to read those keys.
func leafBlocks(t *testing.T, path string) []tableBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read-only: nothing to lose
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	rf := &recordingFile{f: f, size: st.Size()}
	r, err := sstable.NewReader(context.Background(), rf, ledger.PebbleOptions(nil).MakeReaderOptions())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}()
	layout, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	data := map[int64]int64{}
	for _, h := range layout.Data {
		data[int64(h.Offset)] = int64(h.Length)
	}
	rf.reads = nil
	it, err := r.NewIter(sstable.NoTransforms, []byte("leaf/"), []byte("leaf0"), sstable.AssertNoBlobHandles)
	if err != nil {
		t.Fatal(err)
	}
	for kv := it.First(); kv != nil; kv = it.Next() {
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	var out []tableBlock
	for _, off := range rf.reads {
		if n, ok := data[off]; ok {
			out = append(out, tableBlock{off, n})
		}
	}
	return out
}

// recordingFile is a table file for sstable.NewReader that records the
// offset of every read (a block, read whole: it reads nothing ahead).
type recordingFile struct {
	f     *os.File
	size  int64
	reads []int64
}

func (r *recordingFile) ReadAt(_ context.Context, p []byte, off int64) error {
	r.reads = append(r.reads, off)
	_, err := r.f.ReadAt(p, off)
	return err
}

func (r *recordingFile) Close() error { return nil } // leafBlocks closes f
func (r *recordingFile) Size() int64  { return r.size }

func (r *recordingFile) NewReadHandle(objstorage.ReadBeforeSize) objstorage.ReadHandle {
	return recordingHandle{r}
}

// recordingHandle reads through its recordingFile.
type recordingHandle struct{ *recordingFile }

func (recordingHandle) SetupForCompaction()                          {}
func (recordingHandle) RecordCacheHit(context.Context, int64, int64) {}
