package ledger

// Read copies let readers read beside a writer (lock.go has the writer
// lock). Pebble lets one process open a store; a read-only open takes the
// store's LOCK file too. So a writer, when it closes (and a long-running
// writer, through MakeReadCopy, after published batches), makes a Pebble
// checkpoint of its published, synced state: the store's tables hard
// linked, its MANIFEST and a near-empty WAL copied (the memtable is
// flushed first). It is built under copies/tmp-<gen> and renamed to
// copies/<gen> only once complete, with:
//
//	copies/<gen>/store/     the Pebble checkpoint
//	copies/<gen>/copy.json  its generation, tree size and root, where the
//	                        checkpoint of that size is in the checkpoint
//	                        log, and the writer session that made it
//	copies/<gen>/pin        readers hold a shared lock on it while they
//	                        read the copy
//
// so a reader never sees a half-made copy. A copy is immutable (its
// tables are never rewritten, only unlinked by the store's compactions,
// which leaves the copy's links), so any number of readers open it
// read-only at once, through a file system whose Lock does nothing. The
// writer removes older copies that no reader pins.
//
// A reader opens the newest copy when it is current: its size is the
// checkpoint log's latest and the last writer (lock.info's session) made
// it. Otherwise, when no writer holds the lock, it takes the lock shared
// and reads the store itself (a writer crashed before making a copy, a
// copy failed, or the ledger predates copies); when a writer holds it, it
// reads the newest copy, whatever its age (Source says how far behind),
// or, with no copy at all, waits for the writer like a writer would. Open
// checks a copy as it checks the store, against the checkpoint of the
// copy's size in the checkpoint log (the store's own check asks for the
// log's latest, which a copy beside a writer is behind); a copy ahead of
// the checkpoint log is damage.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/proofledger/ledger/proof"
)

// Files of the read copies.
const (
	copiesDir     = "copies"
	copyStoreDir  = "store"
	copyInfoFile  = "copy.json"
	copyPinFile   = "pin"
	copyTmpPrefix = "tmp-"
	copyDelSuffix = ".del"
	copyFormat    = 1
)

// copyInfo is copy.json.
type copyInfo struct {
	Format int   `json:"format"`
	Gen    int64 `json:"gen"`
	// Size and Root are the copy's tree size and root.
	Size int64  `json:"size"`
	Root string `json:"root"`
	// CheckpointOffset is where the record of the checkpoint of Size
	// starts in the checkpoint log.
	CheckpointOffset int64 `json:"checkpoint_offset"`
	// Session is the writer session (LockInfo.Session) that made it.
	Session string `json:"session"`
	// Made is when it was made.
	Made time.Time `json:"made"`
}

// Source says what a ledger opened read-only reads: a read copy or the
// store itself.
type Source struct {
	// Copy is true when the ledger reads a read copy (DIR/copies/<Gen>).
	Copy bool
	// Gen is the read copy's generation.
	Gen int64
	// Size is the number of events served.
	Size int64
	// Latest is the latest size the ledger had signed when it was
	// opened; above Size when a writer appended after the copy was made.
	Latest int64
	// Writer is the writer that held the ledger when a copy behind it was
	// opened (from lock.info), when known.
	Writer *LockInfo
}

// Behind reports that a writer has appended beyond what is served.
func (s Source) Behind() bool { return s.Copy && s.Latest > s.Size }

// Source says what the ledger reads (the zero Source for a writer).
func (l *Ledger) Source() Source { return l.src }

// noLockFS is a file system whose Lock does nothing: a read-only open of
// a read copy (immutable) or of the store while the caller holds the
// ledger's lock (no writer can exist) needs no Pebble LOCK file, and must
// not take one, so that readers open at once.
type noLockFS struct{ vfs.FS }

func (noLockFS) Lock(string) (io.Closer, error) { return nopCloser{}, nil }
func (fs noLockFS) Unwrap() vfs.FS              { return fs.FS }

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// copyGen parses a copy directory's name: its generation, and whether it
// is complete (not a tmp- or .del leftover).
func copyGen(name string) (gen int64, complete, ok bool) {
	s, tmp := strings.CutPrefix(name, copyTmpPrefix)
	s, del := strings.CutSuffix(s, copyDelSuffix)
	if tmp && del {
		return 0, false, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != s {
		return 0, false, false
	}
	return n, !tmp && !del, true
}

// copyOfView is what a read copy records of the published state it copies.
type copyOfView struct {
	size int64
	ckpt signedCheckpoint
	off  int64 // the checkpoint's record in the checkpoint log
}

// MakeReadCopy makes a read copy of the published state now, for readers
// in other processes, unless the newest one already holds it. A writer
// makes one when it closes; a long-running writer (a server) calls this
// after published batches, at most every few seconds: each copy flushes
// the memtable (outside the sequencer's lock) and then holds appends back
// while it links the store's tables. A failed copy changes nothing
// readers see.
func (l *Ledger) MakeReadCopy(ctx context.Context) (err error) {
	if l.readOnly {
		return ErrReadOnly
	}
	l.copyMu.Lock()
	defer l.copyMu.Unlock()
	select {
	case <-l.closed:
		return ErrClosed
	default:
	}
	defer recoverFatal(&err)
	// Most of the memtable goes to tables before appends are held back.
	if err := l.db.Flush(); err != nil {
		return fmt.Errorf("read copy: flush: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	l.seqMu.Lock()
	defer l.seqMu.Unlock()
	if err := l.waitPublished(); err != nil {
		return err
	}
	v, err := l.acquire()
	if err != nil {
		return err
	}
	cv := copyOfView{size: v.size, ckpt: v.ckpt, off: v.ckptOff}
	l.releaseView(v)
	if l.copied != nil && *l.copied == cv.size && !l.nonLogChange.Load() {
		return nil
	}
	return l.makeReadCopy(cv)
}

// makeReadCopy copies the store, whose applied state is cv (the caller
// keeps the sequencer from applying more), into a new read copy, then
// removes the older copies no reader pins.
func (l *Ledger) makeReadCopy(cv copyOfView) (err error) {
	if l.wlock == nil {
		return errors.New("read copy: the ledger holds no writer lock")
	}
	fs := l.fs
	dir := l.path(copiesDir)
	step := l.copyHook
	start := time.Now()
	if err := mkdirPrivate(fs, dir); err != nil {
		return fmt.Errorf("read copy: %w", err)
	}
	names, err := fs.List(dir)
	if err != nil {
		return fmt.Errorf("read copy: list %s: %w", dir, err)
	}
	var gen int64
	for _, n := range names {
		if g, _, ok := copyGen(n); ok {
			gen = max(gen, g)
		}
	}
	gen++
	tmp := fs.PathJoin(dir, copyTmpPrefix+strconv.FormatInt(gen, 10))
	final := fs.PathJoin(dir, strconv.FormatInt(gen, 10))
	defer func() {
		if err != nil {
			// Best effort: the next copy removes what is left (gcCopies),
			// and readers never look at tmp- directories.
			_ = fs.RemoveAll(tmp)
			err = fmt.Errorf("read copy %s: %w", final, err)
		}
	}()
	if err := fs.MkdirAll(tmp, dirMode); err != nil {
		return err
	}
	if err := step("start"); err != nil {
		return err
	}
	// WithFlushedWAL syncs the WAL first; the memtable was flushed, so the
	// copy is the tables' links, a MANIFEST and a near-empty WAL.
	if err := l.db.Checkpoint(fs.PathJoin(tmp, copyStoreDir), pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("pebble checkpoint: %w", err)
	}
	if err := step("store"); err != nil {
		return err
	}
	pin, err := fs.Create(fs.PathJoin(tmp, copyPinFile), vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if err := pin.Close(); err != nil {
		return err
	}
	info, err := json.Marshal(copyInfo{Format: copyFormat, Gen: gen, Size: cv.size, Root: b64(cv.ckpt.c.Root[:]),
		CheckpointOffset: cv.off, Session: l.wlock.info.Session, Made: time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	if err := writeFileDurable(fs, fs.PathJoin(tmp, copyInfoFile), append(info, '\n'), 0o600); err != nil {
		return err
	}
	if err := step("rename"); err != nil {
		return err
	}
	if err := fs.Rename(tmp, final); err != nil {
		return err
	}
	if err := syncDir(fs, dir); err != nil {
		return err
	}
	size := cv.size
	l.copied = &size
	l.nonLogChange.Store(false)
	made := time.Since(start)
	if err := step("gc"); err != nil {
		return err
	}
	l.gcCopies(gen)
	l.log.Debug("read copy made", "copy", final, "events", cv.size, "took", made, "gc", time.Since(start)-made)
	return nil
}

// copyHook calls the test hook at a step of making or removing a copy.
func (l *Ledger) copyHook(step string) error {
	if l.hooks != nil && l.hooks.copyStep != nil {
		return l.hooks.copyStep(step)
	}
	return nil
}

// gcCopies removes the copies older than keep that no reader pins, and
// what failed or interrupted copies left. Only a writer, holding the
// writer lock, makes or removes copies, so every tmp- or .del directory
// is a leftover. Failures are logged: a copy left behind is removed next
// time.
func (l *Ledger) gcCopies(keep int64) {
	fs := l.fs
	dir := l.path(copiesDir)
	names, err := fs.List(dir)
	if err != nil {
		l.log.Warn("read copies: list", "dir", dir, "err", err)
		return
	}
	for _, n := range names {
		g, complete, ok := copyGen(n)
		if !ok || g == keep {
			continue
		}
		p := fs.PathJoin(dir, n)
		if complete {
			if g > keep {
				continue
			}
			// A reader's shared lock on the pin keeps the copy. Renaming
			// it away while holding the pin exclusively means a reader
			// that pins it afterwards finds it gone and looks again.
			fl, err := l.locker.TryLock(fs, fs.PathJoin(p, copyPinFile), true)
			if err != nil {
				l.log.Warn("read copies: lock a copy to remove it", "copy", p, "err", err)
				continue
			}
			if fl == nil {
				continue // pinned by a reader
			}
			del := p + copyDelSuffix
			err = fs.Rename(p, del)
			_ = fl.Unlock() // the lock only guarded the rename
			if err != nil {
				l.log.Warn("read copies: remove", "copy", p, "err", err)
				continue
			}
			p = del
			_ = l.copyHook("removing") // tests only: its error means nothing here
		}
		if err := fs.RemoveAll(p); err != nil {
			l.log.Warn("read copies: remove", "copy", p, "err", err)
		}
	}
}

// pinnedCopy is a read copy a reader holds a shared lock on.
type pinnedCopy struct {
	gen   int64
	path  string
	store string
	info  copyInfo
	pin   FileLock
}

func (c *pinnedCopy) unpin() {
	if c != nil {
		_ = c.pin.Unlock() // a shared lock on an immutable copy: nothing to lose
	}
}

// pinNewestCopy pins the newest complete read copy; nil when there is none
// (or its copy.json is unreadable: it is then not used).
func pinNewestCopy(fs vfs.FS, lk Locker, dir string, log *slog.Logger) (*pinnedCopy, error) {
	cdir := fs.PathJoin(dir, copiesDir)
	for range 100 {
		names, err := fs.List(cdir)
		if err != nil {
			if ok, serr := exists(fs, cdir); serr == nil && !ok {
				return nil, nil
			}
			return nil, fmt.Errorf("list %s: %w", cdir, err)
		}
		var gens []int64
		for _, n := range names {
			if g, complete, ok := copyGen(n); ok && complete {
				gens = append(gens, g)
			}
		}
		if len(gens) == 0 {
			return nil, nil
		}
		gen := slices.Max(gens)
		p := fs.PathJoin(cdir, strconv.FormatInt(gen, 10))
		pin, err := lk.TryLock(fs, fs.PathJoin(p, copyPinFile), false)
		if errors.Is(err, os.ErrNotExist) {
			continue // removed since the listing: look again
		}
		if err != nil {
			return nil, fmt.Errorf("pin read copy %s: %w", p, err)
		}
		if pin == nil {
			// A writer is removing it (an older copy, now that a newer
			// one exists): look again.
			time.Sleep(time.Millisecond)
			continue
		}
		if ok, err := pin.Current(); err != nil || !ok {
			_ = pin.Unlock() // a pin on a copy renamed away: look again
			if err != nil {
				return nil, err
			}
			continue
		}
		b, err := readSmallFile(fs, fs.PathJoin(p, copyInfoFile), 4<<10)
		var info copyInfo
		if err == nil {
			err = strictUnmarshal(b, &info)
		}
		if err == nil && (info.Format != copyFormat || info.Gen != gen || info.Size < 0 || info.CheckpointOffset < 0) {
			err = fmt.Errorf("format %d, generation %d, size %d, offset %d", info.Format, info.Gen, info.Size, info.CheckpointOffset)
		}
		if err != nil {
			_ = pin.Unlock() // not used
			log.Warn("read copy: unusable copy.json; reading without it", "copy", p, "err", err)
			return nil, nil
		}
		return &pinnedCopy{gen: gen, path: p, store: fs.PathJoin(p, copyStoreDir), info: info, pin: pin}, nil
	}
	return nil, fmt.Errorf("%s: read copies keep disappearing", cdir)
}

// latestSigned returns the checkpoint log's last record, verified under
// the key in log.pub.
func latestSigned(fs vfs.FS, dir string) (ckptRecord, error) {
	pub, err := readSmallFile(fs, fs.PathJoin(dir, logPubFile), maxSmallFile)
	if err != nil {
		return ckptRecord{}, err
	}
	vkey := strings.TrimRight(string(pub), "\r\n")
	origin, _, _ := strings.Cut(vkey, "+")
	rec, _, _, err := lastCkptRecord(fs, fs.PathJoin(dir, ckptLogFile), func(note []byte) (proof.Checkpoint, error) {
		c, err := proof.OpenCheckpoint(note, vkey)
		if err == nil && c.Origin != origin {
			err = fmt.Errorf("origin %q is not the ledger's %q", c.Origin, origin)
		}
		return c, err
	})
	return rec, err
}

// openReader opens dir read-only for a caller that holds no lock: a
// current read copy, else the store under the shared lock when no writer
// holds it, else the newest copy, else it waits for the writer.
func openReader(ctx context.Context, dir string, opts Options, fs vfs.FS, lk Locker, logger *slog.Logger) (*Ledger, error) {
	dirFormat, err := readDirFormat(fs, dir)
	if err != nil {
		return nil, err
	}
	if dirFormat < FormatVersion {
		// An earlier format (or an upgrade that stopped before its last
		// step) is upgraded first, by a writer.
		w := opts
		w.ReadOnly, w.AllowDamaged = false, false
		wl, err := OpenContext(ctx, dir, w)
		if err != nil {
			return nil, err
		}
		if err := wl.Close(); err != nil {
			return nil, err
		}
	}
	lockName := fs.PathJoin(dir, lockFile)
	start := time.Now()
	var l *Ledger
	err = waitLock(ctx, opts.Wait, func() (bool, error) {
		cp, err := pinNewestCopy(fs, lk, dir, logger)
		if err != nil {
			return false, err
		}
		latest, lerr := latestSigned(fs, dir)
		holder, _ := readLockInfo(fs, dir)
		current := cp != nil && lerr == nil && cp.info.Size == latest.c.Size && holder != nil && holder.Session == cp.info.Session
		// Audit (AllowDamaged) diagnoses the store itself whenever no
		// writer holds it; every other reader prefers a current copy.
		if current && !opts.AllowDamaged {
			l, err = openCopy(ctx, dir, opts, cp, latest.c.Size, nil)
			return true, err
		}
		sh, err := tryLockCurrent(lk, fs, lockName, false)
		if err != nil {
			cp.unpin()
			return false, fmt.Errorf("%s: writer lock %s: %w", dir, lockName, err)
		}
		if sh != nil {
			cp.unpin()
			l, err = openStore(ctx, dir, opts, storeMode{path: fs.PathJoin(dir, storeDir), shared: sh})
			if err != nil {
				_ = sh.Unlock() // err is the error to report
			}
			return true, err
		}
		if cp == nil {
			return false, nil // a writer holds it and there is no copy: wait
		}
		var w *LockInfo
		if lerr == nil && cp.info.Size < latest.c.Size {
			w = holder
		}
		l, err = openCopy(ctx, dir, opts, cp, latest.c.Size, w)
		return true, err
	})
	if errors.Is(err, errWouldWait) {
		return nil, busyError(fs, dir, time.Since(start))
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// openCopy opens a pinned read copy; the ledger unpins it when it closes.
func openCopy(ctx context.Context, dir string, opts Options, cp *pinnedCopy, latest int64, writer *LockInfo) (*Ledger, error) {
	l, err := openStore(ctx, dir, opts, storeMode{path: cp.store, copy: cp})
	if err != nil {
		cp.unpin()
		return nil, err
	}
	l.src = Source{Copy: true, Gen: cp.gen, Size: cp.info.Size, Latest: max(latest, cp.info.Size), Writer: writer}
	return l, nil
}

// copyExtState finds the checkpoint log's record for a read copy's size
// (at the offset the copy recorded, else by reading the log) and checks
// that the copy is not ahead of the log and agrees with copy.json.
func (l *Ledger) copyExtState(cp *pinnedCopy, st storedState) (extState, error) {
	var ext extState
	name := l.path(ckptLogFile)
	damaged := func(format string, args ...any) (extState, error) {
		return ext, &DamageError{Dir: l.dir, Reason: fmt.Sprintf("read copy %s: ", cp.path) + fmt.Sprintf(format, args...)}
	}
	last, _, _, err := lastCkptRecord(l.fs, name, l.openNote)
	if err != nil {
		return damaged("its checkpoint log is unreadable: %v", err)
	}
	if st.size != cp.info.Size {
		return damaged("its store holds %d events, its %s says %d", st.size, copyInfoFile, cp.info.Size)
	}
	if last.c.Size < st.size {
		return damaged("it holds %d events, but the checkpoint log's latest checkpoint is of size %d: the copy is ahead of what the ledger signed", st.size, last.c.Size)
	}
	rec, err := ckptRecordAt(l.fs, name, cp.info.CheckpointOffset, l.openNote)
	if err != nil || rec.c.Size != st.size {
		rec, err = findCkptRecord(l.fs, name, st.size, l.openNote)
		if err != nil {
			return damaged("the checkpoint log: %v", err)
		}
	}
	if info := cp.info.Root; info != b64(rec.c.Root[:]) {
		return damaged("its %s says root %s for size %d, the checkpoint log %s", copyInfoFile, info, st.size, b64(rec.c.Root[:]))
	}
	ext.rec = rec
	return ext, nil
}

// ckptRecordAt reads the checkpoint log's record starting at off.
func ckptRecordAt(fs vfs.FS, name string, off int64, open func([]byte) (proof.Checkpoint, error)) (ckptRecord, error) {
	f, err := fs.Open(name)
	if err != nil {
		return ckptRecord{}, err
	}
	defer func() { _ = f.Close() }() // read-only: nothing to lose
	buf := make([]byte, maxNoteSize+64)
	n, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return ckptRecord{}, err
	}
	note, _, err := parseCkptRecord(buf[:n])
	if err != nil {
		return ckptRecord{}, err
	}
	c, err := open(note)
	if err != nil {
		return ckptRecord{}, err
	}
	return ckptRecord{note: note, c: c}, nil
}

// findCkptRecord reads the checkpoint log from its start for the record
// of size n.
func findCkptRecord(fs vfs.FS, name string, n int64, open func([]byte) (proof.Checkpoint, error)) (ckptRecord, error) {
	r, err := openCkptLogReader(fs, name, open)
	if err != nil {
		return ckptRecord{}, err
	}
	defer r.close()
	for {
		rec, err := r.next()
		if err != nil {
			return ckptRecord{}, err
		}
		if rec == nil || rec.c.Size > n {
			return ckptRecord{}, fmt.Errorf("no checkpoint of size %d", n)
		}
		if rec.c.Size == n {
			return *rec, nil
		}
	}
}
