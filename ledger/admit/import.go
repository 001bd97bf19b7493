package admit

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/registry"
)

// ImportStats reports an import.
type ImportStats struct {
	Events int64
	Root   tlog.Hash
	// Signer is the verifier key the archive's checkpoint verified under
	// (empty for a version-1 archive, which carries none).
	Signer string
}

// ImportOptions configure Import.
type ImportOptions struct {
	// Options carry the HMAC keys that signed bundles need (besides the
	// target's registered keys). AllowUnsigned is implied: an archive
	// holds only what a ledger once admitted.
	Options
	// VerifierKey, when set, is the key the archive's checkpoint must
	// verify under; otherwise the key the archive names is used (and
	// reported), which proves integrity, not origin.
	VerifierKey string
	// Origin and Key create the target when dir does not exist yet
	// (defaults: the archive's origin, a new key).
	Origin string
	Key    ed25519.PrivateKey
	// Logger and Projectors configure the ledger built.
	Logger     *slog.Logger
	Projectors []ledger.Projector
	// Wait is how long to wait for the writer lock of an existing target
	// held by another process (ledger.Options.Wait).
	Wait time.Duration
	// Progress, when set, is called after each chunk with events imported.
	Progress func(events int64)
}

// Import re-creates the archive read from r as the ledger in dir, which
// must be an empty ledger or not exist. It is atomic: the events are
// re-verified and appended into a staging directory beside dir, which
// replaces dir only when every event was re-created identically, the tree
// root equals the archive's and the archive's signed checkpoint verifies;
// a failed or interrupted import leaves dir as it was. Memory is bounded:
// lines and documents are capped and events go in chunks.
func Import(ctx context.Context, dir string, r io.Reader, opts ImportOptions) (st ImportStats, err error) {
	dir = filepath.Clean(dir)
	var target *ledger.Ledger
	origin, key := opts.Origin, opts.Key
	switch _, serr := os.Stat(dir); {
	case serr == nil:
		// An existing, empty ledger: keep its identity and settings, and
		// hold its writer lock until it is replaced.
		wl, err := ledger.LockWriter(ctx, dir, ledger.LockOptions{Wait: opts.Wait})
		if err != nil {
			return st, err
		}
		defer func() { _ = wl.Unlock() }() // after the target is closed (below): it only guarded the import
		if target, err = ledger.OpenContext(ctx, dir, ledger.Options{ReadOnly: true, Logger: opts.Logger, Lock: wl}); err != nil {
			return st, err
		}
		defer func() {
			if target != nil {
				_ = target.Close() // read-only: nothing to lose
			}
		}()
		if n := target.Size(); n != 0 {
			return st, fmt.Errorf("%w: %s holds %d events; import only into a new or empty ledger", ledger.ErrImport, dir, n)
		}
		origin = target.Origin()
		if key, err = ledger.LogKey(dir); err != nil {
			return st, fmt.Errorf("%s: log key: %w", dir, err)
		}
	case errors.Is(serr, os.ErrNotExist):
	default:
		return st, serr
	}
	ar, err := ledger.NewArchiveReader(r)
	if err != nil {
		return st, err
	}
	defer ar.Close()
	h := ar.Header()
	if st.Signer, err = h.VerifyCheckpoint(opts.VerifierKey); err != nil {
		return st, err
	}
	if origin == "" {
		origin = h.Origin
	}
	staging, err := ledger.StagingDir(dir)
	if err != nil {
		return st, err
	}
	defer func() {
		if err != nil {
			// Best effort: err is the error to report, and the next
			// import removes a staging directory left behind (StagingDir).
			_ = os.RemoveAll(staging)
		}
	}()
	if err := ledger.Init(staging, ledger.InitOptions{Origin: origin, Key: key, Logger: opts.Logger}); err != nil {
		return st, fmt.Errorf("staging %s: %w", staging, err)
	}
	l, err := Open(staging, ledger.Options{Logger: opts.Logger, Projectors: opts.Projectors})
	if err != nil {
		return st, fmt.Errorf("staging %s: %w", staging, err)
	}
	defer func() {
		if l != nil {
			_ = l.Close() // only on failure (l is closed and checked below), and err says why
		}
	}()
	if target != nil {
		if err := copySettings(target, l); err != nil {
			return st, err
		}
	}
	aopts := opts.Options
	aopts.AllowUnsigned = true
	const chunkEvents, chunkBytes = 4096, 64 << 20
	var subs []Submission
	var evs []*ledger.ArchiveEvent
	pending := 0
	flush := func() error {
		if len(subs) == 0 {
			return nil
		}
		out, err := l.AppendWithRetry(ctx, subs, aopts)
		if err != nil {
			return err
		}
		for i, o := range out {
			want := evs[i]
			if o.Status != ledger.StatusAppended || o.Seq != want.Seq {
				return fmt.Errorf("%w: event %d (%s %s): %s: %s", ledger.ErrImport, want.Seq, want.Kind, want.ID, o.Status, o.Reason)
			}
			if got := o.Event.Encode(); string(got) != string(want.Leaf) {
				return fmt.Errorf("%w: event %d was re-created differently (its leaf differs from the archive's)", ledger.ErrImport, want.Seq)
			}
		}
		st.Events += int64(len(out))
		subs, evs, pending = subs[:0], evs[:0], 0
		if opts.Progress != nil {
			opts.Progress(st.Events)
		}
		return nil
	}
	for {
		ev, err := ar.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, err
		}
		subs = append(subs, Submission{Name: fmt.Sprintf("event %d", ev.Seq), Data: ev.Data, Arrival: ev.AppendedAt})
		evs = append(evs, ev)
		pending += len(ev.Data)
		if len(subs) == chunkEvents || pending >= chunkBytes {
			if err := flush(); err != nil {
				return st, err
			}
		}
		if err := ctx.Err(); err != nil {
			return st, err
		}
	}
	if err := flush(); err != nil {
		return st, err
	}
	if st.Events != h.Size {
		return st, fmt.Errorf("%w: the archive's header says %d events, it holds %d", ledger.ErrImport, h.Size, st.Events)
	}
	root, err := l.TreeHash(l.Size())
	if err != nil {
		return st, err
	}
	if root != h.Root {
		return st, fmt.Errorf("%w: tree root %s differs from the archive's", ledger.ErrImport, base64.StdEncoding.EncodeToString(root[:]))
	}
	st.Root = root
	if err := l.Close(); err != nil {
		return st, err
	}
	l = nil
	// Everything checked: the staging ledger replaces dir, atomically.
	replaced, err := ledger.Install(staging, dir)
	if err != nil {
		return st, err
	}
	if target != nil {
		_ = target.Close() // read-only: nothing to lose
		target = nil
	}
	if replaced {
		// The empty ledger dir was: best effort, as the import is done
		// and the next one removes it (StagingDir).
		_ = os.RemoveAll(staging)
	}
	return st, nil
}

// copySettings registers src's HMAC keys and policies in dst.
func copySettings(src *ledger.Ledger, dst *Ledger) error {
	reg := dst.Registry()
	from := registry.New(src)
	hk, err := from.HMACKeys()
	if err != nil {
		return err
	}
	for _, k := range hk {
		if _, err := reg.AddHMACKey(k); err != nil {
			return err
		}
	}
	ps, err := from.Policies()
	if err != nil {
		return err
	}
	for _, p := range ps {
		if _, err := reg.AddPolicy(p); err != nil {
			return err
		}
	}
	return nil
}
