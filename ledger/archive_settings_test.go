package ledger

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// settingsLedger returns a closed ledger's directory with three events,
// three settings (one with bytes JSON would escape) and one secret.
func settingsLedger(t testing.TB) string {
	t.Helper()
	l := newLedger(t, Options{})
	appendRaw(t, l, 0, 3)
	for name, v := range map[string][]byte{"policy/0011223344556677": []byte(`{"name":"p"}`), "freshness/max-age": []byte("72h"), "x/bin": {0, '\n', '"', 0xff}} {
		if err := l.SetSetting(name, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.PutSecret("hmac-ci", []byte("s3cr3t-value")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return l.Dir()
}

func fakeSecretID(name string, v []byte) (string, error) {
	return fmt.Sprintf("id:%s:%d", name, len(v)), nil
}

// TestExportCarriesSettings exports a read-only ledger (the log key is
// read to sign the settings) and reads the archive back: every setting
// with its bytes, the secret by name and id only, a settings note that
// verifies, and the events after them.
func TestExportCarriesSettings(t *testing.T) {
	dir := settingsLedger(t)
	l, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	if _, err := l.Export(context.Background(), io.Discard, ExportOptions{}); err == nil || !strings.Contains(err.Error(), `secret "hmac-ci"`) {
		t.Errorf("export without SecretID = %v", err)
	}
	var buf bytes.Buffer
	st, err := l.Export(context.Background(), &buf, ExportOptions{SecretID: fakeSecretID})
	if err != nil || st.Events != 3 || st.Settings != 3 || st.Secrets != 1 {
		t.Fatalf("export: %+v %v", st, err)
	}
	raw := decompress(t, buf.Bytes())
	if bytes.Contains(raw, []byte("s3cr3t")) || bytes.Contains(raw, []byte(base64.StdEncoding.EncodeToString([]byte("s3cr3t-value"))[:12])) {
		t.Fatal("the archive carries the secret")
	}
	ar, err := NewArchiveReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer ar.Close()
	h := ar.Header()
	want := `[{freshness/max-age [55 50 104]} {policy/0011223344556677 [123 34 110 97 109 101 34 58 34 112 34 125]} {x/bin [0 10 34 255]}] [{hmac-ci id:hmac-ci:12}]`
	if got := fmt.Sprint(h.Settings, h.Secrets); h.Version != 3 || got != want {
		t.Errorf("version %d, settings %s", h.Version, got)
	}
	if vk, err := h.VerifyCheckpoint(""); err != nil || vk != l.VerifierKey() {
		t.Errorf("verify: %q %v", vk, err)
	}
	for seq := int64(0); ; seq++ {
		ev, err := ar.Next()
		if errors.Is(err, io.EOF) {
			if seq != 3 {
				t.Errorf("%d events", seq)
			}
			break
		}
		if err != nil || ev.Seq != seq || ev.Line != int(seq)+6 {
			t.Fatalf("event %d: %+v %v", seq, ev, err)
		}
	}
}

func decompress(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := zstd.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestStagingDirCleanup checks that StagingDir removes the staging
// directories of killed imports, even one killed before its store existed,
// and leaves those a running import holds.
func TestStagingDirCleanup(t *testing.T) {
	parent := t.TempDir()
	target := filepath.Join(parent, "t")
	held, err := StagingDir(target)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := LockStaging(held)
	if err != nil {
		t.Fatal(err)
	}
	// A killed import: locked, then a key written, then killed (its lock
	// released by the kill).
	killed, err := StagingDir(target)
	if err != nil {
		t.Fatal(err)
	}
	klock, err := LockStaging(killed)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(killed, logKeyFile), []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := klock.Close(); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if _, err := StagingDir(target); err != nil {
		t.Fatal(err)
	}
	if exists(killed) || !exists(held) {
		t.Errorf("after cleanup: killed import's directory there %v, running import's %v", exists(killed), exists(held))
	}
	// Installed: the lock file goes.
	if err := os.Rename(held, target); err != nil {
		t.Fatal(err)
	}
	if err := UnlockStaging(target, lock); err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(target, stagingLock)) {
		t.Error("the lock file is left in the installed directory")
	}
}
