package ledger

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/proofledger/ledger/proof"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/codec/keys"
)

// DamageError says how a ledger's durable state disagrees with what it
// signed. It wraps ErrDamaged.
type DamageError struct {
	Dir    string
	Reason string
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("%s: %v: %s; it opens read-only, for diagnosis only, and appends nothing", e.Dir, ErrDamaged, e.Reason)
}

// Unwrap returns ErrDamaged.
func (e *DamageError) Unwrap() error { return ErrDamaged }

// Init creates a ledger in dir (InitContext without a context).
func Init(dir string, opts InitOptions) error {
	return InitContext(context.Background(), dir, opts)
}

// InitContext creates a ledger in dir: the directory (mode 0700), the log
// key (0600) and its verifier key, the Pebble store with its format
// version, origin and the signed checkpoint of the empty tree, the
// checkpoint log, and, last, the LEDGER format file that marks the
// directory complete. It holds the ledger's writer lock while it does
// (waiting up to opts.Wait or ctx's deadline for another holder).
func InitContext(ctx context.Context, dir string, opts InitOptions) (err error) {
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	if opts.Origin == "" {
		opts.Origin = defaultOrigin
	}
	if !validOrigin(opts.Origin) {
		return fmt.Errorf("origin %q: must be non-empty printable text without spaces or '+'", opts.Origin)
	}
	if ok, err := exists(fs, fs.PathJoin(dir, formatFile)); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%s: %w", dir, ErrExists)
	}
	if err := mkdirPrivate(fs, dir); err != nil {
		return err
	}
	wl, err := lockWriter(ctx, dir, LockOptions{FS: fs, Locker: opts.Locker, Wait: opts.Wait, Command: opts.Command})
	if err != nil {
		return err
	}
	defer func() {
		if uerr := wl.Unlock(); err == nil && uerr != nil {
			err = uerr
		}
	}()
	// Again, now that no other writer runs.
	if ok, err := exists(fs, fs.PathJoin(dir, formatFile)); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%s: %w", dir, ErrExists)
	}
	store := fs.PathJoin(dir, storeDir)
	if ok, err := exists(fs, store); err != nil {
		return err
	} else if ok {
		// A store without a format file: a format-1 ledger, or an Init
		// that crashed before it finished. Only the latter, still empty,
		// may be created again.
		if err := removeUnfinishedInit(fs, dir, opts.Logger); err != nil {
			return err
		}
	}
	key := opts.Key
	if key == nil {
		if key, err = keys.GenerateEd25519(); err != nil {
			return err
		}
	}
	pem, err := keys.MarshalPrivateKeyPEM(key)
	if err != nil {
		return err
	}
	if err := writeFileDurable(fs, fs.PathJoin(dir, logKeyFile), pem, 0o600); err != nil {
		return fmt.Errorf("write log key: %w", err)
	}
	signer, err := newNoteSigner(opts.Origin, key)
	if err != nil {
		return err
	}
	if err := writeFileDurable(fs, fs.PathJoin(dir, logPubFile), []byte(signer.vkey+"\n"), 0o644); err != nil {
		return err
	}
	ckpt, err := signer.sign(proof.Checkpoint{Origin: opts.Origin, Size: 0, Root: proof.EmptyRoot()})
	if err != nil {
		return err
	}
	po := pebbleOptions(pebbleLogger{l: opts.Logger})
	po.FS = fs
	po.ErrorIfExists = true
	defer recoverFatal(&err)
	db, err := pebble.Open(store, po)
	if err != nil {
		return fmt.Errorf("create store: %w", err)
	}
	b := db.NewBatch()
	err = errors.Join(
		b.Set(keyFormat, binary.AppendUvarint(nil, FormatVersion), nil),
		b.Set(keyOrigin, []byte(opts.Origin), nil),
		b.Set(keySize, u64(0), nil),
		b.Set(checkpointKey(0), ckpt, nil),
	)
	if err == nil {
		err = b.Commit(pebble.Sync)
	}
	_ = b.Close() // releases memory; fails only for a batch closed twice
	if err != nil {
		_ = db.Close() // the failed write is the error to report
		return fmt.Errorf("initialize store: %w", err)
	}
	if err := db.Close(); err != nil {
		return err
	}
	if err := createCkptLog(fs, fs.PathJoin(dir, ckptLogFile), ckpt); err != nil {
		return fmt.Errorf("write checkpoint log: %w", err)
	}
	return writeFileDurable(fs, fs.PathJoin(dir, formatFile), encodeFormatFile(FormatVersion), 0o644)
}

// removeUnfinishedInit removes the store of an Init that crashed before
// writing the format file. It refuses a store that holds a ledger.
func removeUnfinishedInit(fs vfs.FS, dir string, logger *slog.Logger) (err error) {
	po := pebbleOptions(pebbleLogger{l: logger})
	po.FS, po.ReadOnly = fs, true
	defer recoverFatal(&err)
	db, err := pebble.Open(fs.PathJoin(dir, storeDir), po)
	if err == nil {
		legacy, lerr := isLegacy(db)
		st, serr := readStoredState(db)
		_ = db.Close() // read-only: nothing to lose
		if lerr != nil || legacy {
			return fmt.Errorf("%s: %w (an earlier format: open it once to upgrade it)", dir, ErrExists)
		}
		if serr == nil && st.size > 0 {
			return fmt.Errorf("%s: %w: its store holds %d events but the LEDGER format file is missing", dir, ErrDamaged, st.size)
		}
	}
	return fs.RemoveAll(fs.PathJoin(dir, storeDir))
}

func validOrigin(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r == '+' || r == 0x7f {
			return false
		}
	}
	return true
}

// storedState is what the store says about the log.
type storedState struct {
	format     int
	origin     string
	size       int64
	lastT      int64
	rebuilding bool
}

// readStoredState reads the m/ keys, strictly.
func readStoredState(r pebble.Reader) (storedState, error) {
	var st storedState
	v, err := getCopy(r, keyFormat)
	if errors.Is(err, ErrNotFound) {
		return st, fmt.Errorf("%w (the store has no format version)", ErrNotLedger)
	}
	if err != nil {
		return st, err
	}
	ver, n := binary.Uvarint(v)
	if n <= 0 || n != len(v) || ver == 0 {
		return st, fmt.Errorf("%w: %q: not a uvarint format version", ErrCorrupt, keyFormat)
	}
	if ver > FormatVersion {
		return st, fmt.Errorf("%w: store format %d, this binary reads up to %d; use a newer ledger binary", ErrNewerFormat, ver, FormatVersion)
	}
	st.format = int(ver)
	origin, err := getCopy(r, keyOrigin)
	if err != nil {
		return st, fmt.Errorf("%q: %w", keyOrigin, err)
	}
	if !validOrigin(string(origin)) {
		return st, fmt.Errorf("%w: %q: invalid origin %.40q", ErrCorrupt, keyOrigin, origin)
	}
	st.origin = string(origin)
	sz, err := getCopy(r, keySize)
	if err != nil {
		return st, fmt.Errorf("%q: %w", keySize, err)
	}
	size, err := be64(keySize, sz)
	if err != nil || size > 1<<62 {
		return st, fmt.Errorf("%w: %q: want 8 bytes, a size below 2^62", ErrCorrupt, keySize)
	}
	st.size = int64(size)
	switch lt, err := getCopy(r, keyLastTime); {
	case err == nil:
		t, err := be64(keyLastTime, lt)
		if err != nil {
			return st, err
		}
		st.lastT = int64(t)
	case errors.Is(err, ErrNotFound):
		if st.size > 0 {
			return st, fmt.Errorf("%w: %q missing for a store of %d events", ErrCorrupt, keyLastTime, st.size)
		}
	default:
		return st, err
	}
	switch _, err := getCopy(r, keyRebuilding); {
	case err == nil:
		st.rebuilding = true
	case !errors.Is(err, ErrNotFound):
		return st, err
	}
	return st, nil
}

// Open opens the ledger in dir (OpenContext without a context).
func Open(dir string, opts Options) (*Ledger, error) {
	return OpenContext(context.Background(), dir, opts)
}

// OpenContext opens the ledger in dir. It never creates a store: a
// directory without the LEDGER format file, or whose store is missing, is
// refused. It then checks the store against the latest signed checkpoint
// (in the store and in the checkpoint log outside it): a store that falls
// short of a size the ledger signed, or whose tree disagrees with a signed
// root, is damaged (ErrDamaged; see Options.AllowDamaged).
//
// A write open takes the ledger's writer lock (LockWriter), waiting for
// another writer up to opts.Wait or ctx's deadline (then ErrBusy), and
// holds it until Close, which makes a read copy for readers in other
// processes. A read-only open takes no lock a writer waits for: it reads
// the newest read copy, or the store itself when no writer holds the lock
// (copies.go; Source says which). opts.Lock, a writer lock the caller
// holds, opens the store itself, read-only or not, under that lock.
func OpenContext(ctx context.Context, dir string, opts Options) (*Ledger, error) {
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	opts.FS = fs
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	lk, err := lockerFor(fs, opts.Locker)
	if err != nil {
		return nil, err
	}
	opts.Locker = lk
	// A directory that is not a ledger gets no lock file.
	if _, err := readDirFormat(fs, dir); err != nil {
		return nil, err
	}
	if opts.ReadOnly && opts.Lock == nil {
		return openReader(ctx, dir, opts, fs, lk, opts.Logger)
	}
	wl, own := opts.Lock, false
	if wl != nil && filepath.Clean(wl.dir) != filepath.Clean(dir) {
		return nil, fmt.Errorf("Options.Lock is the lock of %s, not of %s", wl.dir, dir)
	}
	if wl == nil {
		if wl, err = lockWriter(ctx, dir, LockOptions{FS: fs, Locker: lk, Wait: opts.Wait, Command: opts.Command}); err != nil {
			return nil, err
		}
		own = true
	}
	l, err := openStore(ctx, dir, opts, storeMode{path: fs.PathJoin(dir, storeDir), wlock: wl})
	if err != nil {
		if own {
			_ = wl.Unlock() // err is the error to report
		}
		return nil, err
	}
	l.ownLock = own
	return l, nil
}

// storeMode says which store openStore opens, and under which lock.
type storeMode struct {
	path   string      // the Pebble store's directory
	wlock  *WriterLock // the writer lock the caller holds (a write open, or a read-only one under it)
	shared FileLock    // the writer lock held shared: the store read-only, no writer beside it
	copy   *pinnedCopy // a read copy, pinned
}

// openStore opens the store of mode: the ledger's own (its writer lock
// held, exclusive or shared) or a read copy. The ledger releases
// mode.shared and mode.copy when it closes; the caller releases them, and
// the writer lock, when openStore fails.
func openStore(ctx context.Context, dir string, opts Options, mode storeMode) (_ *Ledger, err error) {
	fs, logger := opts.FS, opts.Logger
	readOnly := opts.ReadOnly || mode.wlock == nil
	dirFormat, err := readDirFormat(fs, dir)
	if err != nil {
		return nil, err
	}
	l := &Ledger{dir: dir, fs: fs, log: logger, proj: opts.Projectors, rules: opts.Rules, closed: make(chan struct{}),
		hooks: opts.hooks, readOnly: readOnly, locker: opts.Locker, wlock: mode.wlock, shared: mode.shared, copy: mode.copy}
	l.pubCond = sync.NewCond(&l.pubMu)
	l.bgErr = make(chan error, 1)
	po := pebbleOptions(pebbleLogger{l: logger, onFatal: opts.OnFatal, record: &l.fatalMsg, corrupt: &l.corrupt, bgErr: l.bgErr})
	po.FS = fs
	if readOnly {
		// The store cannot change under this open (a read copy never
		// does; the writer lock excludes writers), so Pebble's own LOCK
		// file, which would keep every other process out, is not taken.
		po.FS = noLockFS{fs}
	}
	po.ReadOnly = readOnly
	po.ErrorIfNotExists = true
	defer recoverFatal(&err)
	l.db, err = pebble.Open(mode.path, po)
	if errors.Is(err, pebble.ErrDBDoesNotExist) {
		if dirFormat == 0 {
			return nil, fmt.Errorf("%s: %w", dir, ErrNotLedger)
		}
		return nil, &DamageError{Dir: dir, Reason: "its store holds no Pebble database (the store directory, its MANIFEST or its marker file is missing); nothing was changed"}
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, storeErr(err))
	}
	// A store of formats 1 or 2 is upgraded first (a write open; the next
	// one rebuilds the derived entries), then opened as asked.
	if legacy, err := isLegacy(l.db); err != nil || legacy {
		// Nothing was written through it; a store that cannot be opened
		// again fails the upgrade's own open, with its error.
		_ = l.db.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		if mode.wlock == nil {
			// Readers upgrade through a writer first (openReader).
			return nil, fmt.Errorf("%s: the store is of an earlier format; open it for writing to upgrade it", dir)
		}
		if err := upgradeLegacy(dir, fs, logger); err != nil {
			return nil, fmt.Errorf("%s: upgrade to format %d: %w", dir, FormatVersion, err)
		}
		if opts.ReadOnly && opts.Rules != nil {
			w := opts
			w.ReadOnly = false
			wl, err := openStore(ctx, dir, w, mode)
			if err != nil {
				return nil, err
			}
			if err := wl.Close(); err != nil {
				return nil, err
			}
		}
		return openStore(ctx, dir, opts, mode)
	}
	defer func() {
		if err == nil {
			return
		}
		select {
		case <-l.closed:
			// l.Close ran (a failed rebuild below) and closed the store:
			// a second Close would make Pebble panic.
		default:
			_ = l.db.Close() // err is the error to report
		}
	}()
	st, err := readStoredState(l.db)
	if errors.Is(err, ErrCorrupt) {
		// The log's own metadata is unreadable: nothing can be checked
		// or served but what the audit finds.
		damage := &DamageError{Dir: dir, Reason: err.Error()}
		if mode.copy != nil {
			damage.Reason = fmt.Sprintf("read copy %s: %s", mode.copy.path, err)
		}
		if !opts.AllowDamaged {
			return nil, damage
		}
		if err := l.loadKeys(true); err != nil {
			return nil, err
		}
		l.origin, _, _ = strings.Cut(l.vkey, "+")
		l.format, l.damage, l.readOnly = max(dirFormat, 1), damage, true
		if l.zdec, err = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(64<<20)); err != nil {
			return nil, err
		}
		l.publish(tip{}, nil, 0)
		return l, nil
	}
	if err != nil {
		if errors.Is(err, ErrNotLedger) && dirFormat == 0 {
			return nil, fmt.Errorf("%s: %w", dir, ErrNotLedger)
		}
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	switch {
	case dirFormat == 0:
		return nil, fmt.Errorf("%s: %w: the %s format file is missing", dir, ErrNotLedger, formatFile)
	case dirFormat > FormatVersion:
		return nil, fmt.Errorf("%s: %w: %s says format %d, this binary reads up to %d", dir, ErrNewerFormat, formatFile, dirFormat, FormatVersion)
	case dirFormat < FormatVersion && !readOnly:
		// An upgrade stopped after the store's last step.
		if err := writeFileDurable(fs, fs.PathJoin(dir, formatFile), encodeFormatFile(FormatVersion), 0o644); err != nil {
			return nil, err
		}
	}
	l.format, l.origin = st.format, st.origin
	l.stale.Store(st.rebuilding)
	// Derived entries of components this binary versions differently (a
	// projection added since they were written) are out of date.
	outdated, rewrite, err := l.derivedState()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if outdated && st.size > 0 {
		l.stale.Store(true)
	}
	if err := l.loadKeys(readOnly); err != nil {
		return nil, err
	}
	if l.zdec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(64<<20)); err != nil {
		return nil, err
	}
	var ext extState
	if mode.copy != nil {
		ext, err = l.copyExtState(mode.copy, st)
	} else {
		ext, err = l.ckptLogState()
	}
	var t tip
	if err == nil {
		t, err = l.check(st, ext)
	}
	var damage *DamageError
	if errors.As(err, &damage) {
		if !opts.AllowDamaged {
			return nil, err
		}
		l.damage, l.readOnly = err, true
		l.publish(tip{size: st.size, lastT: st.lastT}, nil, 0)
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	if err := l.loadRefusalLimit(); err != nil {
		return nil, err
	}
	if readOnly {
		l.publish(t, nil, 0)
		return l, nil
	}
	if t.journal, err = readJournalState(l.db); err != nil {
		return nil, fmt.Errorf("refusal journal: %w", err)
	}
	if l.ckpts, err = openCkptLog(fs, l.path(ckptLogFile), ext.end, ext.torn, ext.rec.note); err != nil {
		return nil, err
	}
	// Batches whose checkpoints did not reach the log (a crash between the
	// store's sync and the log's) are durable: record their checkpoints.
	if ext.rec.c.Size < t.size {
		if err := l.appendStoredCheckpoints(ext.rec.c.Size); err != nil {
			_ = l.ckpts.close() // err is the error to report
			return nil, err
		}
	}
	t.ckptOff = l.ckpts.last
	if err := chmodOS(fs, dir, dirMode); err != nil {
		_ = l.ckpts.close() // err is the error to report
		return nil, err
	}
	l.next = t
	l.publish(t, l.db.NewSnapshot(), 0)
	qs := opts.QueueSize
	if qs <= 0 {
		qs = 1024
	}
	l.maxB = opts.MaxBatchEvents
	if l.maxB <= 0 {
		l.maxB = 4096
	}
	l.queue = make(chan *appendRequest, qs)
	l.prep = make(chan struct{}, runtime.GOMAXPROCS(0))
	l.syncq = make(chan *inflight, 4)
	l.pubq = make(chan []*inflight, 4)
	l.wg.Add(3)
	go l.sequence()
	go l.syncWait()
	go l.publishLoop()
	// Derived entries left incomplete (an interrupted rebuild, or an
	// upgrade) are rebuilt now, when the rules that derive them are here;
	// so are entries out of date.
	if l.stale.Load() && (l.rules != nil || !st.rebuilding) {
		logger.Warn("rebuilding the derived entries (chains, tasks, projections) from the log", "dir", dir, "events", t.size)
		if err := l.Rebuild(ctx, nil); err != nil {
			l.noCopy = true
			_ = l.Close() // the failed rebuild is the error to report
			return nil, fmt.Errorf("%s: rebuild the derived entries: %w", dir, err)
		}
	} else if !l.stale.Load() && (outdated || rewrite) {
		// Nothing derived yet (an empty log), or components dropped: the
		// record names what the entries are complete for.
		if err := l.writeDerived(); err != nil {
			_ = l.Close() // the failed write is the error to report
			return nil, fmt.Errorf("%s: record the derived entries' versions: %w", dir, err)
		}
	}
	return l, nil
}

func (l *Ledger) path(name string) string { return l.fs.PathJoin(l.dir, name) }

// readDirFormat reads the LEDGER format file: 0 when it is absent from a
// directory that has a store (a format-1 ledger, or an unfinished Init).
func readDirFormat(fs vfs.FS, dir string) (int, error) {
	b, err := readSmallFile(fs, fs.PathJoin(dir, formatFile), maxSmallFile)
	if err == nil {
		v, err := parseFormatFile(b)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", dir, err)
		}
		return v, nil
	}
	if ok, serr := exists(fs, fs.PathJoin(dir, formatFile)); serr != nil || ok {
		return 0, fmt.Errorf("%s: read %s: %w", dir, formatFile, err)
	}
	if ok, serr := exists(fs, fs.PathJoin(dir, storeDir)); serr != nil {
		return 0, serr
	} else if !ok {
		return 0, fmt.Errorf("%s: %w", dir, ErrNotLedger)
	}
	return 0, nil
}

// loadKeys reads the log key (to sign) or, read-only, the verifier key.
func (l *Ledger) loadKeys(readOnly bool) error {
	if !readOnly {
		data, err := readSmallFile(l.fs, l.path(logKeyFile), maxSmallFile)
		if err != nil {
			return fmt.Errorf("log key: %w", err)
		}
		priv, err := keys.ParsePrivateKey(data)
		if err != nil {
			return fmt.Errorf("log key %s: %w", l.path(logKeyFile), err)
		}
		if l.signer, err = newNoteSigner(l.origin, priv); err != nil {
			return err
		}
		l.vkey = l.signer.vkey
		return nil
	}
	pub, err := readSmallFile(l.fs, l.path(logPubFile), maxSmallFile)
	if err != nil {
		return fmt.Errorf("verifier key: %w", err)
	}
	l.vkey = string(bytes.TrimRight(pub, "\r\n"))
	return nil
}

// openNote verifies a signed checkpoint note under the log's key.
func (l *Ledger) openNote(note []byte) (proof.Checkpoint, error) {
	c, err := proof.OpenCheckpoint(note, l.vkey)
	if err == nil && c.Origin != l.origin {
		err = fmt.Errorf("origin %q is not the ledger's %q", c.Origin, l.origin)
	}
	return c, err
}

// extState is the checkpoint log's latest record and where appending
// resumes.
type extState struct {
	rec  ckptRecord
	end  int64
	torn bool
}

// ckptLogState reads the checkpoint log's last record and where appending
// resumes; an unreadable log is damage.
func (l *Ledger) ckptLogState() (extState, error) {
	var ext extState
	var err error
	ext.rec, ext.end, ext.torn, err = lastCkptRecord(l.fs, l.path(ckptLogFile), l.openNote)
	if err != nil {
		return ext, &DamageError{Dir: l.dir, Reason: fmt.Sprintf("its checkpoint log is unreadable: %v", err)}
	}
	return ext, nil
}

// check compares the store with the signed checkpoints: the one the store
// keeps for its size and ext's, the checkpoint log's last record (for a
// read copy: the log's record of the copy's size). It returns the log's
// tip, or a *DamageError. It reads a few keys and O(log n) tree hashes,
// whatever the size.
func (l *Ledger) check(st storedState, ext extState) (_ tip, err error) {
	t := tip{size: st.size, lastT: st.lastT}
	where := ""
	if l.copy != nil {
		where = fmt.Sprintf("read copy %s: ", l.copy.path)
	}
	damaged := func(format string, args ...any) (tip, error) {
		return t, &DamageError{Dir: l.dir, Reason: where + fmt.Sprintf(format, args...)}
	}
	// A checksum failure met while checking is damage too: the ledger
	// opens for diagnosis only.
	defer func() {
		var de *DamageError
		if err != nil && errors.Is(err, ErrCorrupt) && !errors.As(err, &de) {
			err = &DamageError{Dir: l.dir, Reason: where + err.Error()}
		}
	}()
	// The store's own latest checkpoint.
	switch note, err := getCopy(l.db, checkpointKey(st.size)); {
	case err == nil:
		c, err := l.openNote(note)
		if err != nil {
			return damaged("the checkpoint stored for its size %d does not verify: %v", st.size, err)
		}
		if c.Size != st.size {
			return damaged("the checkpoint stored for size %d is for size %d", st.size, c.Size)
		}
		t.ckpt = signedCheckpoint{note: note, c: c}
	case errors.Is(err, ErrNotFound):
		return damaged("no signed checkpoint is stored for its size %d", st.size)
	default:
		return t, err
	}
	if ext.rec.c.Size > st.size {
		return damaged("the store holds %d events, but the ledger signed a checkpoint of size %d (root %s, last record of its checkpoint log): events it acknowledged are gone",
			st.size, ext.rec.c.Size, base64.StdEncoding.EncodeToString(ext.rec.c.Root[:]))
	}
	// The tail is dense: events, documents and tree hashes end exactly at
	// the size.
	for _, span := range []struct {
		what   string
		prefix []byte
		want   int64 // number of keys
		key    func(int64) []byte
	}{
		{"event", prefixLeaf, st.size, eventKey},
		{"document", prefixDoc, st.size, dataKey},
		{"tree hash", prefixHash, tlog.StoredHashCount(st.size), hashKey},
	} {
		first, last, err := edgeKeys(l.db, span.prefix)
		if err != nil {
			return t, err
		}
		switch {
		case span.want == 0 && last != nil:
			return damaged("%s key %x is present in a store of 0 events", span.what, last)
		case span.want > 0 && !bytes.Equal(last, span.key(span.want-1)):
			return damaged("the last %s key is %x, want %x for a store of %d events (a hole or a partial batch)", span.what, last, span.key(span.want-1), st.size)
		case span.want > 0 && !bytes.Equal(first, span.key(0)):
			return damaged("the first %s key is %x, want %x (events are missing at the start)", span.what, first, span.key(0))
		}
	}
	hr := hashReader{r: l.db}
	root, err := tlog.TreeHash(st.size, hr)
	if err != nil {
		return damaged("its tree hashes are incomplete: %v", err)
	}
	if t.ckpt.note != nil && t.ckpt.c.Root != root {
		return damaged("its tree hashes give root %s for size %d, but the checkpoint it signed for that size says %s",
			b64(root[:]), st.size, b64(t.ckpt.c.Root[:]))
	}
	if ext.rec.c.Size < st.size {
		old, err := tlog.TreeHash(ext.rec.c.Size, hr)
		if err != nil {
			return damaged("its tree hashes are incomplete: %v", err)
		}
		if old != ext.rec.c.Root {
			return damaged("its tree hashes give root %s for size %d, but the ledger signed %s for that size (checkpoint log)",
				b64(old[:]), ext.rec.c.Size, b64(ext.rec.c.Root[:]))
		}
	}
	if ext.rec.c.Size == st.size && ext.rec.c.Root != root {
		return damaged("its tree hashes give root %s for size %d, but the ledger signed %s for that size (checkpoint log)",
			b64(root[:]), st.size, b64(ext.rec.c.Root[:]))
	}
	return t, nil
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// edgeKeys returns the first and last keys under prefix (nil when none).
func edgeKeys(r pebble.Reader, prefix []byte) (first, last []byte, err error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, nil, storeErr(err)
	}
	defer closeIter(it, &err)
	if it.First() {
		first = bytes.Clone(it.Key())
	}
	if it.Last() {
		last = bytes.Clone(it.Key())
	}
	return first, last, storeErr(it.Error())
}

// appendStoredCheckpoints appends to the checkpoint log the checkpoints
// the store kept for sizes above from, in order.
func (l *Ledger) appendStoredCheckpoints(from int64) (err error) {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: checkpointKey(from + 1), UpperBound: prefixEnd(prefixCkpt)})
	if err != nil {
		return storeErr(err)
	}
	defer closeIter(it, &err)
	var notes [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		note := bytes.Clone(it.Value())
		if _, err := l.openNote(note); err != nil {
			return fmt.Errorf("%w: stored checkpoint %x: %v", ErrCorrupt, it.Key(), err)
		}
		notes = append(notes, note)
		if len(notes) == 1024 {
			if _, err := l.ckpts.append(notes...); err != nil {
				return err
			}
			notes = notes[:0]
		}
	}
	if err := it.Error(); err != nil {
		return storeErr(err)
	}
	if len(notes) == 0 {
		return nil
	}
	_, err = l.ckpts.append(notes...)
	return err
}

// LogKey reads the log key of the ledger in dir (to build a ledger that
// replaces it under the same identity: package admit's Import).
func LogKey(dir string) (ed25519.PrivateKey, error) { return keyOf(vfs.Default, dir) }

// keyOf reads a private key from a ledger's log key file, through fs.
func keyOf(fs vfs.FS, dir string) (ed25519.PrivateKey, error) {
	data, err := readSmallFile(fs, fs.PathJoin(dir, logKeyFile), maxSmallFile)
	if err != nil {
		return nil, err
	}
	return keys.ParsePrivateKey(data)
}
