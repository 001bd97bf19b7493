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

// Init creates a ledger in dir: the directory (mode 0700), the log key
// (0600) and its verifier key, the Pebble store with its format version,
// origin and the signed checkpoint of the empty tree, the checkpoint log,
// and, last, the LEDGER format file that marks the directory complete.
func Init(dir string, opts InitOptions) (err error) {
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
	if err := mkdirPrivate(fs, dir); err != nil {
		return err
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

// Open opens the ledger in dir. It never creates a store: a directory
// without the LEDGER format file, or whose store is missing, is refused.
// It then checks the store against the latest signed checkpoint (in the
// store and in the checkpoint log outside it): a store that falls short of
// a size the ledger signed, or whose tree disagrees with a signed root, is
// damaged (ErrDamaged; see Options.AllowDamaged).
func Open(dir string, opts Options) (_ *Ledger, err error) {
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dirFormat, err := readDirFormat(fs, dir)
	if err != nil {
		return nil, err
	}
	l := &Ledger{dir: dir, fs: fs, log: logger, proj: opts.Projectors, rules: opts.Rules, closed: make(chan struct{}),
		hooks: opts.hooks, readOnly: opts.ReadOnly}
	l.pubCond = sync.NewCond(&l.pubMu)
	l.bgErr = make(chan error, 1)
	po := pebbleOptions(pebbleLogger{l: logger, onFatal: opts.OnFatal, record: &l.fatalMsg, bgErr: l.bgErr})
	po.FS = fs
	po.ReadOnly = opts.ReadOnly
	po.ErrorIfNotExists = true
	defer recoverFatal(&err)
	l.db, err = pebble.Open(fs.PathJoin(dir, storeDir), po)
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
		if err := upgradeLegacy(dir, fs, logger); err != nil {
			return nil, fmt.Errorf("%s: upgrade to format %d: %w", dir, FormatVersion, err)
		}
		if opts.ReadOnly && opts.Rules != nil {
			w := opts
			w.ReadOnly = false
			wl, err := Open(dir, w)
			if err != nil {
				return nil, err
			}
			if err := wl.Close(); err != nil {
				return nil, err
			}
		}
		return Open(dir, opts)
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
		l.publish(tip{}, nil)
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
	case dirFormat < FormatVersion && !opts.ReadOnly:
		// An upgrade stopped after the store's last step.
		if err := writeFileDurable(fs, fs.PathJoin(dir, formatFile), encodeFormatFile(FormatVersion), 0o644); err != nil {
			return nil, err
		}
	}
	l.format, l.origin = st.format, st.origin
	if opts.Rules != nil && !st.rebuilding {
		// Derived entries written under another description (derived.go)
		// are stale: rebuilt below at a write open, refused to queries
		// until then.
		current, err := derivedCurrent(l.db, derivedVersion(opts.Rules, opts.Projectors))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		// An empty store has nothing derived: a read-only open serves it
		// as it is, a write open records the version (a rebuild of no
		// events).
		st.rebuilding = !current && (st.size > 0 || !opts.ReadOnly)
	}
	l.stale.Store(st.rebuilding)
	if err := l.loadKeys(opts.ReadOnly); err != nil {
		return nil, err
	}
	if l.zdec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(64<<20)); err != nil {
		return nil, err
	}
	t, ext, err := l.check(st)
	var damage *DamageError
	if errors.As(err, &damage) {
		if !opts.AllowDamaged {
			return nil, err
		}
		l.damage, l.readOnly = err, true
		l.publish(tip{size: st.size, lastT: st.lastT}, nil)
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	if opts.ReadOnly {
		l.publish(t, nil)
		return l, nil
	}
	if l.ckpts, err = openCkptLog(fs, l.path(ckptLogFile), ext.end, ext.torn); err != nil {
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
	if err := chmodOS(fs, dir, dirMode); err != nil {
		_ = l.ckpts.close() // err is the error to report
		return nil, err
	}
	l.next = t
	l.publish(t, l.db.NewSnapshot())
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
	l.wg.Add(2)
	go l.sequence()
	go l.syncWait()
	// Derived entries left incomplete (an interrupted rebuild, or an
	// upgrade) are rebuilt now, when the rules that derive them are here.
	if l.stale.Load() && l.rules != nil {
		level := slog.LevelWarn
		if t.size == 0 {
			level = slog.LevelDebug
		}
		logger.Log(context.Background(), level, "rebuilding the derived entries (chains, tasks, projections) from the log", "dir", dir, "events", t.size)
		if err := l.Rebuild(context.Background(), nil); err != nil {
			_ = l.Close() // the failed rebuild is the error to report
			return nil, fmt.Errorf("%s: rebuild the derived entries: %w", dir, err)
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

// check compares the store with the latest signed checkpoints: the one
// the store keeps for its size and the last one in the checkpoint log. It
// returns the log's tip and the checkpoint log's state, or a *DamageError.
// It reads a few keys and O(log n) tree hashes, whatever the size.
func (l *Ledger) check(st storedState) (_ tip, _ extState, err error) {
	t := tip{size: st.size, lastT: st.lastT}
	var ext extState
	damaged := func(format string, args ...any) (tip, extState, error) {
		return t, ext, &DamageError{Dir: l.dir, Reason: fmt.Sprintf(format, args...)}
	}
	// A checksum failure met while checking is damage too: the ledger
	// opens for diagnosis only.
	defer func() {
		var de *DamageError
		if err != nil && errors.Is(err, ErrCorrupt) && !errors.As(err, &de) {
			err = &DamageError{Dir: l.dir, Reason: err.Error()}
		}
	}()
	ext.rec, ext.end, ext.torn, err = lastCkptRecord(l.fs, l.path(ckptLogFile), l.openNote)
	if err != nil {
		return damaged("its checkpoint log is unreadable: %v", err)
	}
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
		return t, ext, err
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
			return t, ext, err
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
	return t, ext, nil
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
			if err := l.ckpts.append(notes...); err != nil {
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
	return l.ckpts.append(notes...)
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
