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
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/ledger"
)

// ImportStats reports an import.
type ImportStats struct {
	Events int64
	Root   tlog.Hash
	// Signer is the verifier key the archive's checkpoint verified under
	// (empty for a version-1 archive, which carries none).
	Signer string
	// Settings and HMACKeys count the archive's settings and registered
	// HMAC keys the imported ledger has (restored, or the target's own
	// identical ones).
	Settings, HMACKeys int
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
	// HMACSecrets are the secrets of HMAC keys the archive's ledger had
	// registered, by key name. Each must have the archive's key id for
	// its name (ErrWrongSecret), and each name must be one of the
	// archive's.
	HMACSecrets map[string][]byte
	// SecretFor, when set, supplies an HMAC key the archive's ledger had
	// registered that neither the target ledger, HMACSecrets nor
	// Options.HMACKeys (matched by key id) has: its secret, or an error
	// wrapping ErrMissingSecret when it has none. It is called before
	// anything is written (it may read a directory of key files, or
	// prompt).
	SecretFor func(name, id string) ([]byte, error)
	// Logger and Projectors configure the ledger built.
	Logger     *slog.Logger
	Projectors []ledger.Projector
	// Wait is how long to wait for the writer lock of an existing target
	// held by another process (ledger.Options.Wait).
	Wait time.Duration
	// Progress, when set, is called after each chunk with events imported.
	Progress func(events int64)
}

// Sentinel errors of Import that callers branch on.
var (
	// ErrMissingSecret: the archive's ledger had HMAC keys registered
	// that the import was not given; a *MissingSecretsError lists them.
	ErrMissingSecret = errors.New("HMAC key needed")
	// ErrWrongSecret: a secret given for one of the archive's HMAC keys
	// has another key id, or names no key of the archive.
	ErrWrongSecret = errors.New("wrong HMAC key")
	// ErrSettingConflict: the target ledger has a setting or an HMAC key
	// of the same name with other bytes or another key id. It comes
	// wrapped with ledger.ErrImport.
	ErrSettingConflict = errors.New("conflicting setting")
)

// SecretRef names one of an archive's HMAC keys: its registered name and
// its key id (registry.KeyID).
type SecretRef struct {
	Name, ID string
}

// MissingSecretsError lists the HMAC keys an import needs and was not
// given, in name order. It wraps ErrMissingSecret.
type MissingSecretsError struct {
	Keys []SecretRef
}

func (e *MissingSecretsError) Error() string {
	parts := make([]string, len(e.Keys))
	for i, k := range e.Keys {
		parts[i] = fmt.Sprintf("%q (%s)", k.Name, k.ID)
	}
	return fmt.Sprintf("%v: the archive's ledger had %d HMAC %s registered that this import was not given: %s",
		ErrMissingSecret, len(e.Keys), plural(len(e.Keys), "key", "keys"), strings.Join(parts, ", "))
}

// Unwrap returns ErrMissingSecret.
func (e *MissingSecretsError) Unwrap() error { return ErrMissingSecret }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Import re-creates the archive read from r as the ledger in dir, which
// must be an empty ledger or not exist. It is atomic: the events are
// re-verified and appended into a staging directory beside dir, which
// replaces dir only when every event was re-created identically, the tree
// root equals the archive's and the archive's signatures verify; a failed
// or interrupted import leaves dir as it was. Memory is bounded: lines and
// documents are capped and events go in chunks.
//
// The imported ledger has the target's settings and secrets and the
// archive's settings (version 3): every setting, and the registered HMAC
// keys, whose secrets the archive names by key id and the caller supplies
// (HMACSecrets, Options.HMACKeys, SecretFor). A needed key missing
// (*MissingSecretsError), a secret with another id (ErrWrongSecret) or a
// target setting that conflicts with the archive's (ErrSettingConflict)
// fails the import before anything is written. Each witness bundle is
// re-evaluated knowing exactly the policies its archived leaf says were
// known when it was appended, so that a policy registered after some of
// its bundles does not change them.
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
	plan, err := planSettings(target, h, opts)
	if err != nil {
		return st, err
	}
	if origin == "" {
		origin = h.Origin
	}
	staging, err := ledger.StagingDir(dir)
	if err != nil {
		return st, err
	}
	lock, err := ledger.LockStaging(staging)
	if err != nil {
		return st, fmt.Errorf("staging %s: %w", staging, err)
	}
	installed := false
	defer func() {
		if installed {
			// Best effort: the import is done; a lock file left in the
			// ledger directory is harmless.
			_ = ledger.UnlockStaging(dir, lock)
			return
		}
		// Best effort: err is the error to report, and the next import
		// removes a staging directory left behind (StagingDir).
		_ = lock.Close()
		_ = os.RemoveAll(staging)
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
	if err := plan.apply(target, l.Ledger); err != nil {
		return st, fmt.Errorf("staging %s: %w", staging, err)
	}
	st.Settings, st.HMACKeys = len(h.Settings), len(h.Secrets)
	pols, err := newPolicyTracker(l.Registry())
	if err != nil {
		return st, err
	}
	aopts := opts.Options
	aopts.AllowUnsigned, aopts.AnySigner, aopts.TrustedSigners = true, true, nil
	const chunkEvents, chunkBytes = 4096, 64 << 20
	var subs []Submission
	var evs []*ledger.ArchiveEvent
	pending := 0
	flush := func() error {
		if len(subs) == 0 {
			return nil
		}
		out, err := l.appendWithRetry(ctx, subs, aopts, pols.known())
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
		if change, err := pols.needs(ev); err != nil {
			return st, err
		} else if change != nil {
			// The bundle was evaluated knowing another set of policies:
			// append what came before under the old set first.
			if err := flush(); err != nil {
				return st, err
			}
			change()
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
	installed = true
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
