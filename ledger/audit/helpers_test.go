package audit_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/rollback"
	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/audit"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

func testKey(b byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32))
}

const origin = "audit.test/log"

// fixture is a closed ledger built from a generated corpus: receipts in
// chains signed by several keys, bundles of repeated tasks under HMAC,
// attestations with their specifications and rollback records, appended
// in batches (so there are many signed checkpoints).
type fixture struct {
	dir     string
	corpus  *ledgertest.Corpus
	size    int64
	events  []*ledger.Event // every event's leaf, in order
	saved   []byte          // the checkpoint of the final tree, as `ledger checkpoint` prints it
	mid     string          // a copy of the ledger directory when it held midSize events
	midSize int64
}

type fixtureOptions struct {
	// unregistered appends the bundles with their HMAC key given per call
	// instead of registered in the ledger.
	unregistered bool
	receipts     int
	compact      bool // flush and compact the store at the end: the data is in SSTs
}

// build makes a fixture in a new temporary directory.
func build(t testing.TB, fo fixtureOptions) *fixture {
	t.Helper()
	ctx := context.Background()
	if fo.receipts == 0 {
		fo.receipts = 120
	}
	cfg := ledgertest.Config{Seed: 11, Receipts: fo.receipts, Bundles: 48, Attestations: 10, Specs: true,
		Agents: 6, TextScale: 0.05, Span: 6 * 24 * time.Hour, TaskRepeat: 0.5}
	c, err := ledgertest.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	f := &fixture{dir: filepath.Join(root, "ledger"), corpus: c, mid: filepath.Join(root, "mid")}
	if err := ledger.Init(f.dir, ledger.InitOptions{Origin: origin, Key: testKey(1)}); err != nil {
		t.Fatal(err)
	}
	open := func() *admit.Ledger {
		l, err := admit.Open(f.dir, ledger.Options{Projectors: []ledger.Projector{index.New()}})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := open()
	opts := admit.Options{TrustedSigners: c.Keys.TrustedSigners(), AllowUnsigned: true}
	if fo.unregistered {
		opts.HMACKeys = c.Keys.HMACKeys()
	} else if _, err := l.Registry().AddHMACKey(c.Keys.HMAC); err != nil {
		t.Fatal(err)
	}
	appendAll := func(subs []admit.Submission) {
		t.Helper()
		out, err := l.Append(ctx, subs, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			if o.Status != ledger.StatusAppended {
				t.Fatalf("%s: %s (%s): %s", o.Name, o.Status, o.Class, o.Reason)
			}
		}
	}
	const batch = 16
	var tasks []string
	var last time.Time
	for i := 0; i < len(c.Docs); i += batch {
		var subs []admit.Submission
		for _, d := range c.Docs[i:min(i+batch, len(c.Docs))] {
			subs = append(subs, admit.Submission{Name: d.Name, Data: d.Data, Arrival: d.Arrival})
			if d.Kind == codec.KindRVWW && len(tasks) < 3 && !contains(tasks, d.Subject) {
				tasks = append(tasks, d.Subject)
			}
			last = d.Arrival
		}
		appendAll(subs)
		if f.midSize == 0 && l.Size() >= int64(len(c.Docs)/2) {
			f.midSize = l.Size()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.CopyFS(f.mid, os.DirFS(f.dir)); err != nil {
				t.Fatal(err)
			}
			l = open()
		}
	}
	// Rollback records, signed, each following its task's bundles.
	var subs []admit.Submission
	for i, task := range tasks {
		at := last.Add(time.Duration(i+1) * time.Minute)
		doc, err := rollback.Sign(task, i%2 == 0, at, "restored", c.Keys.Verifiers[0])
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, admit.Submission{Name: "rollback " + task, Data: doc, Arrival: at})
	}
	appendAll(subs)
	if fo.compact {
		if err := l.Compact(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if f.saved, err = l.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	f.size = l.Size()
	if err := l.Scan(0, false, func(ev *ledger.Event) (bool, error) {
		f.events = append(f.events, ev)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return f
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// copyDir copies the fixture's ledger to a new directory, to damage it.
func (f *fixture) copyDir(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "ledger")
	if err := os.CopyFS(dst, os.DirFS(f.dir)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// seqOf returns the sequence numbers of the events of a kind.
func (f *fixture) seqOf(kind codec.Kind) []int64 {
	var out []int64
	for _, ev := range f.events {
		if ev.Kind == kind {
			out = append(out, ev.Seq)
		}
	}
	return out
}

// edit changes the closed ledger's store behind its back, as an attacker
// with disk access would, through the store's own keys.
func edit(t testing.TB, dir string, fn func(db *pebble.DB) error) {
	t.Helper()
	o := ledger.PebbleOptions(nil)
	o.ErrorIfNotExists = true
	db, err := pebble.Open(filepath.Join(dir, "store"), o)
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

// get reads a value of the store.
func get(db *pebble.DB, key []byte) ([]byte, error) {
	v, closer, err := db.Get(key)
	if err != nil {
		return nil, err
	}
	out := bytes.Clone(v)
	return out, closer.Close()
}

// runAudit audits the ledger in dir with the full audit.
func runAudit(t testing.TB, dir string, opts ledger.AuditOptions) *ledger.AuditReport {
	t.Helper()
	rep, err := audit.Dir(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	return rep
}

// names reports whether a problem names event seq (and says want, when
// not empty).
func names(rep *ledger.AuditReport, seq int64, want string) bool {
	for _, p := range rep.Problems {
		if p.Seq == seq && strings.Contains(p.What, want) {
			return true
		}
	}
	return false
}

// oneLine checks that an error is one line that says what went wrong.
func oneLine(t testing.TB, err error) {
	t.Helper()
	if msg := err.Error(); strings.Contains(msg, "\n") || strings.Contains(msg, "goroutine ") {
		t.Errorf("error is not one line: %q", msg)
	}
	var fe *ledger.FatalError
	if errors.As(err, &fe) {
		t.Errorf("a Pebble fatal error reached the caller: %v", err)
	}
}

func auditDir(ctx context.Context, dir string, opts ledger.AuditOptions) (*ledger.AuditReport, error) {
	return audit.Dir(ctx, dir, opts)
}
