package admit

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

// untar extracts a .tar.gz into dir.
func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read-only: nothing to lose
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, os.FileMode(h.Mode)&0o777); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestUpgradeLegacyFormats opens ledgers written by the binaries of
// formats 1 and 2 (testdata/legacy, made by testdata/legacy/make.sh): the
// first open, even a read-only one, upgrades the store to format 3, every
// event and the signed root survive, the derived entries (chains, tasks,
// projections) are rebuilt, the registered key and policy are kept (a
// format-1 HMAC secret leaves the store), the ledger audits clean and
// appends again.
func TestUpgradeLegacyFormats(t *testing.T) {
	secret := readFile(t, filepath.Join(vectors, "rvww/hmac_key.txt"))
	for _, format := range []int{1, 2} {
		t.Run(fmt.Sprint("format ", format), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ledger")
			untar(t, fmt.Sprintf("../../testdata/legacy/format%d.tar.gz", format), dir)
			want := readFile(t, fmt.Sprintf("../../testdata/legacy/format%d.checkpoint", format))
			wantBody, _, _ := bytes.Cut(want, []byte("\n\n"))
			opts := ledger.Options{ReadOnly: true, Projectors: []ledger.Projector{index.New()}}
			l, err := Open(dir, opts)
			if err != nil {
				t.Fatalf("read-only open of format %d: %v", format, err)
			}
			if l.Size() != 8 {
				t.Errorf("%d events after the upgrade, want 8", l.Size())
			}
			note, err := l.Checkpoint()
			if body, _, _ := bytes.Cut(note, []byte("\n\n")); err != nil || !bytes.Equal(body, wantBody) {
				t.Errorf("checkpoint after the upgrade:\n%s\nwant\n%s", note, want)
			}
			chain, err := l.Chain("826bbb67-5cdb-4512-8c27-a66b63fee2c0")
			if err != nil || len(chain) != 3 {
				t.Errorf("chain after the upgrade: %d events, %v", len(chain), err)
			}
			if hist, err := l.TaskHistory("73656564-7265-662d-7461-736b2d303031"); err != nil || len(hist) != 1 {
				t.Errorf("task history after the upgrade: %d events, %v", len(hist), err)
			}
			ks, err := l.Registry().HMACKeys()
			if err != nil || len(ks) != 1 || ks[0].Name != "ci" || !bytes.Equal(ks[0].Secret, secret) {
				t.Errorf("registered keys after the upgrade: %v %v", ks, err)
			}
			if ps, err := l.Registry().Policies(); err != nil || len(ps) != 1 || ps[0].Name != "read-grep-small" {
				t.Errorf("registered policies after the upgrade: %v %v", ps, err)
			}
			rep, err := l.Audit(context.Background(), ledger.AuditOptions{})
			if err != nil || !rep.OK() {
				t.Errorf("audit after the upgrade: %v %v", err, rep.Problems)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			dump, err := ledgertest.Dump(dir)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range dump {
				space := k
				if rest, ok := strings.CutPrefix(k, "x/"); ok {
					space = rest // the projections' keyspace, and its own inside
				}
				if i := strings.IndexByte(space, '/'); i <= 1 {
					t.Errorf("a one-letter keyspace is left: %q", k)
				}
				if bytes.Contains([]byte(v), secret) {
					t.Errorf("%q holds the HMAC secret", k)
				}
			}
			if b, err := os.ReadFile(filepath.Join(dir, "LEDGER")); err != nil || !strings.Contains(string(b), "format 3") {
				t.Errorf("LEDGER after the upgrade: %q %v", b, err)
			}
			opts.ReadOnly = false
			l, err = Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := l.Close(); err != nil {
					t.Error(err)
				}
			}()
			out, err := l.Append(context.Background(), []Submission{{Name: "new", Data: receipt(t, testKey(3), 77, "", "", -1)}}, Options{})
			if err != nil || out[0].Status != ledger.StatusAppended || out[0].Seq != 8 {
				t.Fatalf("append after the upgrade: %v %+v", err, out)
			}
			if rep, err := l.Audit(context.Background(), ledger.AuditOptions{}); err != nil || !rep.OK() {
				t.Errorf("audit after appending: %v %v", err, rep.Problems)
			}
		})
	}
}
