package ledger

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"github.com/proofledger/ledger/proof"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/klauspost/compress/zstd"
)

// FormatVersion is the store format this binary writes and the newest it
// reads. Format 2 added the LEDGER format file, the checkpoint log, the
// size-0 checkpoint and HMAC secrets outside the store; format 3 named the
// keyspaces for what they hold and gave the admission rules keyspaces of
// their own. Ledgers of formats 1 and 2 are upgraded when they are opened.
const FormatVersion = 3

// Sentinel errors callers branch on.
var (
	// ErrNotLedger: the directory holds no ledger.
	ErrNotLedger = errors.New("not a ledger directory")
	// ErrExists: Init on a directory that already holds a ledger.
	ErrExists = errors.New("ledger already exists")
	// ErrNewerFormat: the store was written by a newer binary.
	ErrNewerFormat = errors.New("ledger format is newer than this binary")
	// ErrPushback: the sequencer's queue is full; retry later.
	ErrPushback = errors.New("ledger: append queue full, retry later")
	// ErrClosed: the ledger was closed.
	ErrClosed = errors.New("ledger: closed")
	// ErrReadOnly: the ledger was opened read-only (or for diagnosis of
	// damage) and refuses writes.
	ErrReadOnly = errors.New("ledger: opened read-only")
	// ErrNotFound: no event with that sequence number or identity.
	ErrNotFound = errors.New("not found")
	// ErrDamaged: the ledger's durable state disagrees with what it
	// signed (events missing below a signed size, a different root, a
	// missing store). It opens only for diagnosis (Options.AllowDamaged)
	// and never appends: it must not sign a second root for a size.
	ErrDamaged = errors.New("ledger damaged")
	// ErrFailed: a write failed in a way that leaves what is durable
	// unknown (a failed WAL or checkpoint-log sync); the ledger accepts
	// no more appends until it is reopened.
	ErrFailed = errors.New("ledger: write failed; reopen the ledger")
)

// InitOptions configure a new ledger.
type InitOptions struct {
	// Origin is the checkpoint origin line (the log's name); default
	// "ledger.local".
	Origin string
	// Key is the log's Ed25519 key; nil generates one.
	Key ed25519.PrivateKey
	// Logger receives Pebble's messages (below warning level, as
	// Options.Logger says); nil discards them.
	Logger *slog.Logger
	// FS is the file system holding the ledger; nil is the operating
	// system's.
	FS vfs.FS
	// Wait, Locker and Command are as in Options: Init holds the writer
	// lock while it creates the ledger.
	Wait    time.Duration
	Locker  Locker
	Command string
}

// Options configure an opened ledger.
type Options struct {
	// Logger receives the ledger's and Pebble's messages; nil discards
	// them. Pebble's own messages come at debug level (its errors, and the
	// corruptions and fatal conditions reported otherwise, at info level):
	// only a background error that is not a corruption (a failed flush or
	// compaction) is a warning.
	Logger *slog.Logger
	// Rules are the admission rules that need the log's order (package
	// admit's chain and task rules); nil admits every new identity.
	Rules Rules
	// Projectors derive index entries from each event in its own batch.
	Projectors []Projector
	// QueueSize bounds the sequencer's queue of pending append calls
	// (default 1024); a full queue makes Append return ErrPushback.
	QueueSize int
	// MaxBatchEvents bounds the events committed in one batch (default 4096).
	MaxBatchEvents int
	// ReadOnly opens for reading only: no sequencer, no writer lock. It
	// reads the newest read copy, or the store itself when no writer holds
	// the lock (OpenContext; Source says which).
	ReadOnly bool
	// AllowDamaged opens a damaged ledger (see ErrDamaged) read-only, for
	// diagnosis, instead of failing; Damage reports what is wrong.
	AllowDamaged bool
	// FS is the file system holding the ledger; nil is the operating
	// system's. Tests use Pebble's in-memory and error-injecting ones.
	FS vfs.FS
	// Wait is how long an open waits for the writer lock another process
	// holds (a writer; a reader only when there is no read copy to read
	// beside that writer); 0 does not wait. A deadline of OpenContext's
	// context also ends the wait. A wait that runs out is ErrBusy.
	Wait time.Duration
	// Locker takes the ledger's file locks; nil is flock(2), which needs
	// FS to be the operating system's (see Locker).
	Locker Locker
	// Lock is a writer lock the caller holds on this directory
	// (LockWriter): the open takes no lock of its own, reads the store
	// itself even when ReadOnly, and Close leaves the lock held.
	Lock *WriterLock
	// Command is what lock.info records as the writer's command line;
	// empty records the process's arguments.
	Command string
	// OnFatal, when set, is called with Pebble's message when the store
	// meets a condition Pebble cannot continue from (Pebble's
	// Logger.Fatalf). It should not return; a command-line program prints
	// one line and exits. When it is nil, or returns, the ledger panics
	// with a *FatalError, which its own calls into Pebble recover and turn
	// into ErrFailed.
	OnFatal func(msg string)

	// hooks are test-only fault injections.
	hooks *hooks
}

// hooks let tests break steps that no file system error reaches.
type hooks struct {
	sign     func(proof.Checkpoint) error // called before each checkpoint signature
	copyStep func(step string) error      // called at each step of making a read copy
}

// Ledger is an open ledger. It is safe for concurrent use.
type Ledger struct {
	dir      string
	fs       vfs.FS
	db       *pebble.DB
	log      *slog.Logger
	origin   string
	format   int
	signer   *noteSigner // nil when read-only
	vkey     string
	proj     []Projector
	rules    Rules
	zdec     *zstd.Decoder
	readOnly bool
	damage   error // why a damaged ledger was opened read-only (AllowDamaged)
	hooks    *hooks
	fatalMsg atomic.Pointer[string] // Pebble's fatal message, when it sent one
	corrupt  atomic.Pointer[string] // the first corruption Pebble reported (Corruption)
	bgErr    chan error             // Pebble's background errors (pebbleLogger.bgErr)

	// Sequencer and syncer (sequencer.go); nil queue when read-only.
	queue  chan *appendRequest
	syncq  chan *inflight
	pubq   chan []*inflight // answered batches, for the publisher
	prep   chan struct{}    // one token per core for decoding and verifying
	ckpts  *ckptLog         // written by the syncer and synced by the publisher once started
	maxB   int
	closed chan struct{}
	wg     sync.WaitGroup
	stale  atomic.Bool // an interrupted rebuild left the projections incomplete

	// Locks and read copies (lock.go, copies.go).
	locker       Locker
	wlock        *WriterLock // the writer lock held (a writer, or a read-only open under the caller's lock)
	ownLock      bool        // Close releases wlock
	shared       FileLock    // a reader of the store: the writer lock, shared
	copy         *pinnedCopy // a reader of a read copy: its pin
	src          Source
	copyMu       sync.Mutex  // one read copy at a time; Close waits for it
	copied       *int64      // the size of the last read copy this ledger made
	nonLogChange atomic.Bool // a setting or the derived entries changed since the last read copy
	noCopy       bool        // Close makes no read copy (a failed open)
	signerMu     sync.Mutex  // a read-only ledger loads its signer on demand

	refusalLimit atomic.Int64 // records the refusal journal keeps (refusals.go)

	// seqMu is held while a batch is built and applied, and by Rebuild;
	// next is the state after the last applied batch (which may not be
	// durable yet: see the invariants in sequencer.go).
	seqMu   sync.Mutex
	next    tip
	applied int64 // generation of the last batch applied (inflight.gen)

	// pubMu guards pub (what readers see: durable state only), the count
	// of outstanding views and the fatal error.
	pubMu   sync.Mutex
	pubCond *sync.Cond // broadcast on every publish and view release
	pub     *view
	views   int // views not yet released, pub's own included
	fatal   error
	// ackGen is the generation of the last batch whose callers were
	// answered, pubGen of the last one published, doneGen of the last one
	// the publisher is done with, published or not (inflight.gen).
	ackGen, pubGen, doneGen int64
}

// tip is the log's end: its size, the last event's arrival time and the
// checkpoint signed for that size; and where the refusal journal stands.
type tip struct {
	size    int64
	lastT   int64
	ckpt    signedCheckpoint
	ckptOff int64 // where ckpt's record starts in the checkpoint log, once durable
	journal journalState
}

// signedCheckpoint is a checkpoint the ledger signed, with its parsed body.
type signedCheckpoint struct {
	note []byte
	c    proof.Checkpoint
}

// FatalError is the panic value of a Pebble fatal condition (see
// Options.OnFatal).
type FatalError struct{ Msg string }

func (e *FatalError) Error() string { return "pebble: " + e.Msg }

// recoverFatal turns a *FatalError panic into an error wrapping ErrFailed.
func recoverFatal(err *error) {
	if r := recover(); r != nil {
		fe, ok := r.(*FatalError)
		if !ok {
			panic(r)
		}
		*err = fmt.Errorf("%w: %v", ErrFailed, fe)
	}
}

// Close stops the sequencer (after the batch in flight), waits for
// readers to release their views and closes the store.
func (l *Ledger) Close() (err error) {
	select {
	case <-l.closed:
		return nil
	default:
	}
	close(l.closed)
	l.wg.Wait()
	defer recoverFatal(&err)
	l.pubMu.Lock()
	pub := l.pub
	l.pub = nil
	l.pubMu.Unlock()
	var last copyOfView
	if pub != nil {
		last = copyOfView{size: pub.size, ckpt: pub.ckpt, off: pub.ckptOff}
		l.releaseView(pub)
	}
	defer l.releaseLocks()
	// Iterators or snapshots still open when the store closes make Pebble
	// panic; wait for every reader.
	l.pubMu.Lock()
	for l.views > 0 {
		l.pubCond.Wait()
	}
	failed := l.fatal != nil
	l.pubMu.Unlock()
	var errs []error
	if l.queue != nil && !failed {
		// Flush the memtable so that the next open does not replay the
		// write-ahead log: with a full memtable that replay made every
		// read-only open (each query command) take about 250 ms. Pebble
		// retries a failed flush without end; the first failure ends the
		// wait (everything is in the synced WAL, which the next open
		// replays).
		for len(l.bgErr) > 0 {
			// An earlier background error, logged when it happened
			// (pebbleOptions): only this flush's failure ends the wait.
			stale := <-l.bgErr
			_ = stale
		}
		done, err := l.db.AsyncFlush()
		if err == nil {
			select {
			case <-done:
			case err = <-l.bgErr:
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("close: flush: %w", err))
		}
		// A read copy of what this writer leaves, for readers in other
		// processes. Its failure fails nothing: every event is durable
		// and acknowledged, and readers fall back to the store.
		l.copyMu.Lock()
		if err == nil && !l.noCopy && pub != nil {
			if err := l.makeReadCopy(last); err != nil {
				l.log.Warn("no read copy made; readers read the store itself when no writer holds it", "dir", l.dir, "err", err)
			}
		}
		l.copyMu.Unlock()
	}
	errs = append(errs, l.ckpts.close())
	if l.zdec != nil {
		l.zdec.Close()
	}
	if err := l.db.Close(); err != nil && !failed {
		errs = append(errs, fmt.Errorf("close store: %w", err))
	}
	return errors.Join(errs...)
}

// releaseLocks releases the locks the ledger holds, once its store is
// closed.
func (l *Ledger) releaseLocks() {
	if l.copy != nil {
		l.copy.unpin()
	}
	if l.shared != nil {
		_ = l.shared.Unlock() // a shared lock of a reader: nothing to lose
	}
	if l.ownLock {
		if err := l.wlock.Unlock(); err != nil {
			l.log.Warn("release the writer lock", "dir", l.dir, "err", err)
		}
	}
}

// Compact flushes the store's memtable and compacts all of it: the LSM
// reaches its settled shape (old versions and deleted keys gone). Appends
// wait while it runs. Operators run it after large deletions of derived
// entries (a rebuild, an upgrade); benchmarks before measuring a settled
// store.
func (l *Ledger) Compact(ctx context.Context) (err error) {
	if l.readOnly {
		return ErrReadOnly
	}
	l.seqMu.Lock()
	defer l.seqMu.Unlock()
	defer recoverFatal(&err)
	if err := l.db.Flush(); err != nil {
		return fmt.Errorf("compact: flush: %w", err)
	}
	if err := l.db.Compact(ctx, []byte{0}, []byte{0xff, 0xff}, true); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// Dir returns the ledger's directory.
func (l *Ledger) Dir() string { return l.dir }

// Origin returns the checkpoint origin.
func (l *Ledger) Origin() string { return l.origin }

// VerifierKey returns the log's public key in signed-note verifier form
// ("<origin>+<hash>+<base64>"), which proofs are checked against.
func (l *Ledger) VerifierKey() string { return l.vkey }

// Damage returns why the ledger was opened read-only for diagnosis, or
// nil when it is sound (see Options.AllowDamaged).
func (l *Ledger) Damage() error { return l.damage }

// Corruption returns the first corruption Pebble reported while the
// ledger was open, as an error wrapping ErrCorrupt, or nil when there was
// none. A read that met it returned an error wrapping ErrCorrupt too; a
// corruption only a background job met (a compaction reading a damaged
// table) is reported here alone, and logged below warning level. It may
// be called after Close.
func (l *Ledger) Corruption() error {
	if msg := l.corrupt.Load(); msg != nil {
		return fmt.Errorf("%w: %s", ErrCorrupt, *msg)
	}
	return nil
}

// ReadOnly reports whether the ledger refuses writes.
func (l *Ledger) ReadOnly() bool { return l.readOnly }

// Size returns the number of durable events in the log.
func (l *Ledger) Size() int64 {
	v, err := l.acquire()
	if err != nil {
		return 0
	}
	defer l.releaseView(v)
	return v.size
}

// PebbleOptions returns the options the ledger opens its Pebble store
// with: bloom filters on every level (identity point lookups stay O(1) in
// practice), a 256 MB block cache, block compression, and Pebble's own
// messages routed to logger below warning level (see Options.Logger).
// Benchmarks open the bare Pebble stores they measure the ledger against
// (stores of their own, never the ledger's) with the same options, so that
// the limit and the figure meet the same engine.
func PebbleOptions(logger *slog.Logger) *pebble.Options {
	return pebbleOptions(pebbleLogger{l: logger})
}

func pebbleOptions(pl pebbleLogger) *pebble.Options {
	o := &pebble.Options{
		Logger:             pl,
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       64 << 20,
		CacheSize:          256 << 20,
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	// MinLZ on the upper levels, zstd level 1 on the bottom two, where
	// nearly all the documents end up.
	o.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionBalanced })
	// A checksum failure is reported to the reader that met it (as an
	// error wrapping pebble's ErrCorruption) instead of ending the
	// process, Pebble's default, and recorded for Ledger.Corruption: a
	// background job (a compaction) may meet it where no reader does. Both
	// are logged below warning level: the reader's error and the record
	// are the reports, and a command-line program says it once.
	o.EventListener = &pebble.EventListener{
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			msg := pebbleMessage(info.Details)
			pl.corruption(msg)
			if pl.l != nil {
				pl.l.Info("store corruption", "component", "pebble", "path", info.Path, "err", msg)
			}
		},
		BackgroundError: func(err error) {
			msg := pebbleMessage(err)
			switch {
			case pebble.IsCorruptionError(err):
				pl.corruption(msg) // DataCorruption usually has it already
				if pl.l != nil {
					pl.l.Info("store background error", "component", "pebble", "err", msg)
				}
			case pl.l != nil:
				// A failed flush or compaction (a full disk, an I/O
				// error): nothing else tells an operator.
				pl.l.Warn("store background error", "component", "pebble", "err", msg)
			}
			if pl.bgErr != nil {
				select {
				case pl.bgErr <- err:
				default:
				}
			}
		},
	}
	o.EnsureDefaults()
	return o
}

// pebbleLogger routes Pebble's log lines to slog below warning level, so
// they never reach a user's terminal unless asked for (a command-line
// program shows warnings by default, and these with --verbose): its
// messages at debug level, its errors at info level. Pebble's errors are
// reported to the ledger's callers otherwise: a read that fails returns
// its error, a corruption is recorded (Ledger.Corruption), a fatal
// condition goes to OnFatal or a *FatalError panic (never Pebble's
// os.Exit with a stack trace).
type pebbleLogger struct {
	l       *slog.Logger
	onFatal func(string)
	record  *atomic.Pointer[string]
	corrupt *atomic.Pointer[string] // when set, keeps the first corruption reported
	bgErr   chan error              // when set, receives background errors (a failed flush), without blocking
}

func (p pebbleLogger) Infof(format string, args ...any) {
	if p.l != nil {
		p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	if p.l != nil {
		p.l.Info(oneLine(fmt.Sprintf(format, args...)), "component", "pebble")
	}
}

// corruption records msg as the store's corruption unless one was
// recorded first.
func (p pebbleLogger) corruption(msg string) {
	if p.corrupt != nil {
		p.corrupt.CompareAndSwap(nil, &msg)
	}
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := oneLine(fmt.Sprintf(format, args...))
	if p.l != nil {
		// OnFatal reports it (a command-line program on one line of its
		// own); without it, this record precedes the panic.
		level := slog.LevelError
		if p.onFatal != nil {
			level = slog.LevelInfo
		}
		p.l.Log(context.Background(), level, msg, "component", "pebble")
	}
	if p.record != nil {
		p.record.Store(&msg)
	}
	if p.onFatal != nil {
		p.onFatal(msg)
	}
	panic(&FatalError{Msg: msg})
}

// oneLine keeps the first line of s, at most 300 bytes of it.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// waitCtx returns ctx.Err() if ctx is done before ch is closed.
func waitCtx(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// getCopy returns a copy of the value at key in r, or ErrNotFound.
func getCopy(r pebble.Reader, key []byte) ([]byte, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, storeErr(err)
	}
	out := bytes.Clone(v)
	// The closer is a Pebble iterator: Close reports a failed read too.
	if err := closer.Close(); err != nil {
		return nil, storeErr(err)
	}
	return out, nil
}

// storeErr marks a Pebble checksum failure as ErrCorrupt.
func storeErr(err error) error {
	if err != nil && pebble.IsCorruptionError(err) {
		return fmt.Errorf("%w: %s", ErrCorrupt, pebbleMessage(err))
	}
	return err
}

// pebbleMessage is a Pebble error's one-line message, without the detail
// markers its error library appends.
func pebbleMessage(err error) string {
	if err == nil {
		return ""
	}
	return oneLine(strings.ReplaceAll(err.Error(), " <corruption detail carrier>", ""))
}
