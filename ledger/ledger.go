package ledger

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/klauspost/compress/zstd"

	"github.com/proofledger/ledger/codec/inspect"
	"github.com/proofledger/ledger/codec/keys"
)

// FormatVersion is the store format this binary writes and the newest it
// reads.
const FormatVersion = 1

// Files inside a ledger directory.
const (
	storeDir    = "store"
	logKeyFile  = "log.key"
	logPubFile  = "log.pub"
	defaultName = "ledger.local"
)

// Sentinel errors callers branch on.
var (
	// ErrNotLedger: the directory holds no ledger (run ledger init).
	ErrNotLedger = errors.New("not a ledger directory")
	// ErrExists: ledger init on a directory that already holds one.
	ErrExists = errors.New("ledger already exists")
	// ErrNewerFormat: the store was written by a newer binary.
	ErrNewerFormat = errors.New("ledger format is newer than this binary")
	// ErrPushback: the sequencer's queue is full; retry later.
	ErrPushback = errors.New("ledger: append queue full, retry later")
	// ErrClosed: the ledger was closed.
	ErrClosed = errors.New("ledger: closed")
	// ErrNotFound: no event with that sequence number or identity.
	ErrNotFound = errors.New("not found")
)

// InitOptions configure a new ledger.
type InitOptions struct {
	// Origin is the checkpoint origin line (the log's name); default
	// "ledger.local/<random>" is not used: the default is "ledger.local".
	Origin string
	// Key is the log's Ed25519 key; nil generates one.
	Key ed25519.PrivateKey
	// Logger receives Pebble's messages (at debug level); nil discards them.
	Logger *slog.Logger
}

// Init creates a ledger in dir: the Pebble store with its format version
// and origin, and the log key file (0600) with its public verifier key.
func Init(dir string, opts InitOptions) error {
	if _, err := os.Stat(filepath.Join(dir, storeDir)); err == nil {
		return fmt.Errorf("%s: %w", dir, ErrExists)
	}
	if opts.Origin == "" {
		opts.Origin = defaultName
	}
	if !validOrigin(opts.Origin) {
		return fmt.Errorf("origin %q: must be non-empty printable text without spaces or '+'", opts.Origin)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	key := opts.Key
	if key == nil {
		var err error
		if key, err = keys.GenerateEd25519(); err != nil {
			return err
		}
	}
	if err := keys.WritePrivateKeyFile(filepath.Join(dir, logKeyFile), key); err != nil {
		return fmt.Errorf("write log key: %w", err)
	}
	vkey, err := verifierKey(opts.Origin, key.Public().(ed25519.PublicKey))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, logPubFile), []byte(vkey+"\n"), 0o644); err != nil {
		return err
	}
	db, err := pebble.Open(filepath.Join(dir, storeDir), PebbleOptions(opts.Logger))
	if err != nil {
		return fmt.Errorf("create store: %w", err)
	}
	b := db.NewBatch()
	b.Set(keyFormat, binary.AppendUvarint(nil, FormatVersion), nil)
	b.Set(keyOrigin, []byte(opts.Origin), nil)
	b.Set(keySize, u64(0), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		db.Close()
		return fmt.Errorf("initialize store: %w", err)
	}
	return db.Close()
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

// Options configure an opened ledger.
type Options struct {
	// Logger receives the ledger's and Pebble's messages; nil discards them.
	Logger *slog.Logger
	// Projectors derive index entries from each event in its own batch.
	Projectors []Projector
	// QueueSize bounds the sequencer's queue of pending append calls
	// (default 1024); a full queue makes Append return ErrPushback.
	QueueSize int
	// MaxBatchEvents bounds the events committed in one batch (default 4096).
	MaxBatchEvents int
	// ReadOnly opens the store without starting the sequencer.
	ReadOnly bool
}

// Ledger is an open ledger. It is safe for concurrent use.
type Ledger struct {
	dir    string
	db     *pebble.DB
	log    *slog.Logger
	origin string
	signer *noteSigner
	vkey   string
	proj   []Projector
	ins    *inspect.Inspector

	zdec *zstd.Decoder

	queue chan *appendRequest
	syncq chan *inflight
	// prep holds one token per core: decoding and verifying take one, so
	// that however many callers append at once, the sequencer and syncer
	// goroutines find a core instead of queueing behind them.
	prep   chan struct{}
	stale  atomic.Bool // an interrupted rebuild left the projections incomplete (see projectionsStale)
	maxB   int
	closed chan struct{}
	wg     sync.WaitGroup

	setMu    sync.Mutex // guards settings
	settings *settings  // cached HMAC keys and policies; nil until loaded

	seqMu  sync.Mutex   // held while a batch is built and committed, and by Rebuild
	mu     sync.RWMutex // guards state read by Size/LastTime outside the sequencer
	size   int64
	lastT  int64
	latest *signedCheckpoint // the last batch's checkpoint

	durable atomic.Int64 // events known to be synced
	fatal   error        // set when a WAL sync failed
}

// signedCheckpoint is a checkpoint the ledger signed, with its parsed body.
type signedCheckpoint struct {
	note []byte
	c    Checkpoint
}

// Open opens the ledger in dir.
func Open(dir string, opts Options) (*Ledger, error) {
	if _, err := os.Stat(filepath.Join(dir, storeDir)); err != nil {
		return nil, fmt.Errorf("%s: %w (create one with: ledger init --dir %s)", dir, ErrNotLedger, dir)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	po := PebbleOptions(logger)
	po.ReadOnly = opts.ReadOnly
	db, err := pebble.Open(filepath.Join(dir, storeDir), po)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	ins, err := inspect.New()
	if err != nil {
		db.Close()
		return nil, err
	}
	l := &Ledger{dir: dir, db: db, log: logger, proj: opts.Projectors, ins: ins, closed: make(chan struct{})}
	if err := l.load(); err != nil {
		db.Close()
		return nil, err
	}
	if l.zdec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(1<<30)); err != nil {
		db.Close()
		return nil, err
	}
	if !opts.ReadOnly {
		priv, err := keys.LoadPrivateKey(filepath.Join(dir, logKeyFile))
		if err != nil {
			l.closeStore()
			return nil, fmt.Errorf("log key: %w", err)
		}
		if l.signer, err = newNoteSigner(l.origin, priv); err != nil {
			l.closeStore()
			return nil, err
		}
		l.vkey = l.signer.vkey
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
	} else if pub, err := os.ReadFile(filepath.Join(dir, logPubFile)); err == nil {
		l.vkey = string(trimNewline(pub))
	}
	return l, nil
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func (l *Ledger) load() error {
	v, err := l.get(keyFormat)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%s: %w (store has no format version)", l.dir, ErrNotLedger)
	}
	if err != nil {
		return err
	}
	ver, n := binary.Uvarint(v)
	if n <= 0 {
		return fmt.Errorf("%w: format version", ErrCorrupt)
	}
	if ver > FormatVersion {
		return fmt.Errorf("%s: %w: store format %d, this binary reads up to %d; use a newer ledger binary", l.dir, ErrNewerFormat, ver, FormatVersion)
	}
	origin, err := l.get(keyOrigin)
	if err != nil {
		return fmt.Errorf("origin: %w", err)
	}
	l.origin = string(origin)
	sz, err := l.get(keySize)
	if err != nil || len(sz) != 8 {
		return fmt.Errorf("%w: tree size", ErrCorrupt)
	}
	l.size = int64(binary.BigEndian.Uint64(sz))
	l.durable.Store(l.size)
	if err := l.loadStale(); err != nil {
		return err
	}
	if lt, err := l.get(keyLastTime); err == nil && len(lt) == 8 {
		l.lastT = int64(binary.BigEndian.Uint64(lt))
	}
	return nil
}

// get returns a copy of the value at key, or ErrNotFound.
// view calls fn with the value of key, valid only during the call, without
// copying it; ErrNotFound when absent.
func (l *Ledger) view(key []byte, fn func(v []byte) error) error {
	v, closer, err := l.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	return fn(v)
}

func (l *Ledger) get(key []byte) ([]byte, error) { return getCopy(l.db, key) }

// getCopy returns a copy of the value at key in r, or ErrNotFound.
func getCopy(r pebble.Reader, key []byte) ([]byte, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := bytes.Clone(v)
	closer.Close()
	return out, nil
}

// Close stops the sequencer (after the batch in flight) and closes the store.
func (l *Ledger) Close() error {
	select {
	case <-l.closed:
		return nil
	default:
	}
	close(l.closed)
	l.wg.Wait()
	if l.queue != nil {
		// Flush the memtable so that the next open does not replay the
		// write-ahead log: with a full memtable that replay made every
		// read-only open (each query command) take about 250 ms.
		if err := l.db.Flush(); err != nil {
			l.closeStore()
			return fmt.Errorf("close: flush: %w", err)
		}
	}
	return l.closeStore()
}

func (l *Ledger) closeStore() error {
	if l.zdec != nil {
		l.zdec.Close()
	}
	return l.db.Close()
}

// Dir returns the ledger's directory.
func (l *Ledger) Dir() string { return l.dir }

// Origin returns the checkpoint origin.
func (l *Ledger) Origin() string { return l.origin }

// VerifierKey returns the log's public key in signed-note verifier form
// ("<origin>+<hash>+<base64>"), which `ledger verify-proof --key` takes.
func (l *Ledger) VerifierKey() string { return l.vkey }

// Size returns the number of events in the log.
func (l *Ledger) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.size
}

// PebbleOptions returns the options the ledger opens its Pebble store
// with: bloom filters on every level (identity point lookups stay O(1) in
// practice), a 256 MB block cache, block compression, and Pebble's own
// messages routed to logger at debug level. `ledger bench` opens its bare
// Pebble stores, the limits of its figures, with the same options.
func PebbleOptions(logger *slog.Logger) *pebble.Options {
	o := &pebble.Options{
		Logger:             pebbleLogger{logger},
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
	o.EnsureDefaults()
	return o
}

// pebbleLogger routes Pebble's log lines to slog at debug level, so they
// never reach a user's terminal unless --verbose.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	if p.l != nil {
		p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}
func (p pebbleLogger) Errorf(format string, args ...any) {
	if p.l != nil {
		p.l.Warn(fmt.Sprintf(format, args...), "component", "pebble")
	}
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	if p.l != nil {
		p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
	}
	os.Exit(1)
}

// waitCtx is a helper that returns ctx.Err() if ctx is done first.
func waitCtx(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Inspector returns the ledger's document inspector.
func (l *Ledger) Inspector() *inspect.Inspector { return l.ins }
