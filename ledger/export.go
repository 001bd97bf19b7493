package ledger

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/proofledger/ledger/proof"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/mod/sumdb/tlog"
)

// Export archive format (docs/FORMAT.md): zstd-compressed JSON Lines. The
// first line is a header, then one line per event in log order:
//
//	{"format":"ledger-export","version":2,"origin":"...","size":N,"root":"<base64>","checkpoint":"<signed note>","verifier_key":"..."}
//	{"seq":0,"appended_at":"...","kind":"vrf","id":"...","leaf":{...},"data":"<base64 original bytes>"}
//
// Version 1 archives (no checkpoint) are still imported.
const exportFormat = "ledger-export"

// exportVersion is the archive version Export writes.
const exportVersion = 2

type exportHeader struct {
	Format      string `json:"format"`
	Version     int    `json:"version"`
	Origin      string `json:"origin"`
	Size        int64  `json:"size"`
	Root        string `json:"root"`
	Checkpoint  string `json:"checkpoint,omitempty"`
	VerifierKey string `json:"verifier_key,omitempty"`
}

type exportLine struct {
	Seq        int64           `json:"seq"`
	AppendedAt string          `json:"appended_at"`
	Kind       string          `json:"kind"`
	ID         string          `json:"id"`
	Leaf       json.RawMessage `json:"leaf"`
	Data       []byte          `json:"data"`
}

// MaxDocumentSize bounds one document, on input and in an archive.
// Witness bundles carry diffs and test logs; 64 MiB is far beyond a real
// one and keeps a stray or hostile input from exhausting memory.
const MaxDocumentSize = 64 << 20

// maxArchiveLine bounds one archive line: a document in base64 and its
// leaf.
const maxArchiveLine = MaxDocumentSize/3*4 + 4 + 1<<20

// ExportStats reports an export.
type ExportStats struct {
	Events int64
	Root   tlog.Hash
}

// Export writes every durable event to w as a zstd-compressed JSON Lines
// archive, headed by the signed checkpoint of its size. Every document is
// checked against its leaf and every leaf against the signed tree (the
// root is recomputed from the leaves as they stream): an altered event is
// an error naming it, and the caller must discard what was written.
func (l *Ledger) Export(ctx context.Context, w io.Writer) (ExportStats, error) {
	var st ExportStats
	v, err := l.acquire()
	if err != nil {
		return st, err
	}
	defer l.releaseView(v)
	if v.ckpt.note == nil {
		return st, fmt.Errorf("%w: no verified checkpoint to export against", ErrDamaged)
	}
	zw, err := zstd.NewWriter(w)
	if err != nil {
		return st, err
	}
	defer zw.Close()
	bw := bufio.NewWriterSize(zw, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	root := v.ckpt.c.Root
	h := exportHeader{Format: exportFormat, Version: exportVersion, Origin: l.origin, Size: v.size,
		Root: b64(root[:]), Checkpoint: string(v.ckpt.note), VerifierKey: l.vkey}
	if err := enc.Encode(h); err != nil {
		return st, err
	}
	dataIt, err := viewIter(v, prefixData, dataKey(v.size))
	if err != nil {
		return st, err
	}
	defer closeIter(dataIt, &err)
	dataIt.First()
	tree := &proof.TreeBuilder{}
	err = l.scanView(ctx, v, 0, func(ev *Event, leaf string) (bool, error) {
		if !dataIt.Valid() || !bytes.Equal(dataIt.Key(), dataKey(ev.Seq)) {
			if err := dataIt.Error(); err != nil {
				return false, storeErr(err)
			}
			return false, fmt.Errorf("%w: event %d has no document", ErrCorrupt, ev.Seq)
		}
		d, err := l.decodePayload(dataIt.Value())
		if err != nil {
			return false, fmt.Errorf("event %d: %w", ev.Seq, err)
		}
		if err := setData(ev, d); err != nil {
			return false, err
		}
		dataIt.Next()
		tree.Append(leafHashString(leaf))
		st.Events++
		return true, enc.Encode(exportLine{Seq: ev.Seq, AppendedAt: formatTime(ev.AppendedAt), Kind: string(ev.Kind), ID: ev.ID,
			Leaf: json.RawMessage(leaf), Data: ev.Data})
	})
	if err != nil {
		return st, err
	}
	if got := tree.Root(); got != root {
		return st, l.leafMismatch(v, fmt.Sprintf("export: the leaves give tree root %s for size %d, the signed checkpoint says %s", b64(got[:]), v.size, b64(root[:])))
	}
	st.Root = root
	if err := bw.Flush(); err != nil {
		return st, err
	}
	return st, zw.Close()
}

// ErrImport is wrapped by errors about an archive that does not reproduce.
var ErrImport = errors.New("import failed")

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
	// AppendOptions carry the HMAC keys that signed bundles need (besides
	// the target's registered keys). AllowUnsigned is implied: an archive
	// holds only what a ledger once admitted.
	AppendOptions
	// VerifierKey, when set, is the key the archive's checkpoint must
	// verify under; otherwise the key the archive names is used (and
	// reported), which proves integrity, not origin.
	VerifierKey string
	// Origin and Key create the target when dir does not exist yet
	// (defaults: the archive's origin, a new key).
	Origin string
	Key    ed25519.PrivateKey
	// Logger, Projectors configure the ledger built.
	Logger     *slog.Logger
	Projectors []Projector
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
	var target *Ledger
	var origin string
	var key ed25519.PrivateKey
	switch _, serr := os.Stat(dir); {
	case serr == nil:
		// An existing, empty ledger: keep its identity and settings, and
		// hold its lock until it is replaced.
		if target, err = Open(dir, Options{ReadOnly: true, Logger: opts.Logger}); err != nil {
			return st, err
		}
		defer func() {
			if target != nil {
				target.Close()
			}
		}()
		if n := target.Size(); n != 0 {
			return st, fmt.Errorf("%w: %s holds %d events; import only into a new or empty ledger", ErrImport, dir, n)
		}
		origin = target.Origin()
		priv, err := keyOf(target.fs, dir)
		if err != nil {
			return st, fmt.Errorf("%s: log key: %w", dir, err)
		}
		key = priv
	case errors.Is(serr, os.ErrNotExist):
		origin, key = opts.Origin, opts.Key
	default:
		return st, serr
	}
	// Streaming decompression with a bounded window. (The reader is
	// wrapped so that zstd cannot see a whole in-memory buffer and decode
	// it all at once.)
	zr, err := zstd.NewReader(struct{ io.Reader }{r}, zstd.WithDecoderMaxMemory(256<<20), zstd.WithDecoderMaxWindow(64<<20), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return st, err
	}
	defer zr.Close()
	lr := &lineReader{r: bufio.NewReaderSize(zr, 1<<20)}
	hline, err := lr.next(1 << 20)
	if err != nil {
		return st, fmt.Errorf("%w: line 1 (header): %v", ErrImport, err)
	}
	var h exportHeader
	if err := strictUnmarshal(hline, &h); err != nil {
		return st, fmt.Errorf("%w: line 1 (header): %v", ErrImport, err)
	}
	if h.Format != exportFormat || h.Version < 1 || h.Version > exportVersion {
		return st, fmt.Errorf("%w: not a ledger export this binary reads (format %.40q version %d)", ErrImport, h.Format, h.Version)
	}
	wantRoot, err := base64.StdEncoding.DecodeString(h.Root)
	if err != nil || len(wantRoot) != tlog.HashSize || h.Size < 0 {
		return st, fmt.Errorf("%w: header: bad size or root", ErrImport)
	}
	if h.Version >= 2 {
		vkey := opts.VerifierKey
		if vkey == "" {
			vkey = h.VerifierKey
		}
		c, err := proof.OpenCheckpoint([]byte(h.Checkpoint), vkey)
		if err != nil {
			return st, fmt.Errorf("%w: the archive's checkpoint: %v", ErrImport, err)
		}
		if c.Size != h.Size || !bytes.Equal(c.Root[:], wantRoot) {
			return st, fmt.Errorf("%w: the archive's signed checkpoint (size %d) does not match its header (size %d)", ErrImport, c.Size, h.Size)
		}
		st.Signer = vkey
	}
	if origin == "" {
		origin = h.Origin
	}
	staging, err := stagingDir(dir)
	if err != nil {
		return st, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(staging)
		}
	}()
	if err := Init(staging, InitOptions{Origin: origin, Key: key, Logger: opts.Logger}); err != nil {
		return st, fmt.Errorf("staging %s: %w", staging, err)
	}
	l, err := Open(staging, Options{Logger: opts.Logger, Projectors: opts.Projectors})
	if err != nil {
		return st, fmt.Errorf("staging %s: %w", staging, err)
	}
	defer func() {
		if l != nil {
			l.Close()
		}
	}()
	if target != nil {
		if err := copySettings(target, l); err != nil {
			return st, err
		}
	}
	aopts := opts.AppendOptions
	aopts.AllowUnsigned = true
	const chunkEvents, chunkBytes = 4096, 64 << 20
	var subs []Submission
	var lines []exportLine
	var pending int
	lineNo := 1
	flush := func() error {
		if len(subs) == 0 {
			return nil
		}
		out, err := l.AppendWithRetry(ctx, subs, aopts)
		if err != nil {
			return err
		}
		for i, o := range out {
			want := lines[i]
			if o.Status != StatusAppended || o.Seq != want.Seq {
				return fmt.Errorf("%w: event %d (%s %s): %s: %s", ErrImport, want.Seq, want.Kind, want.ID, o.Status, o.Reason)
			}
			if got := o.Event.Encode(); !bytes.Equal(got, want.Leaf) {
				return fmt.Errorf("%w: event %d was re-created differently (its leaf differs from the archive's)", ErrImport, want.Seq)
			}
		}
		st.Events += int64(len(out))
		subs, lines, pending = subs[:0], lines[:0], 0
		if opts.Progress != nil {
			opts.Progress(st.Events)
		}
		return nil
	}
	for {
		raw, err := lr.next(maxArchiveLine)
		if errors.Is(err, io.EOF) {
			break
		}
		lineNo++
		if err != nil {
			return st, fmt.Errorf("%w: line %d: %v", ErrImport, lineNo, err)
		}
		var line exportLine
		if err := strictUnmarshal(raw, &line); err != nil {
			return st, fmt.Errorf("%w: line %d: %v", ErrImport, lineNo, err)
		}
		if want := st.Events + int64(len(subs)); line.Seq != want {
			return st, fmt.Errorf("%w: line %d: event %d where event %d was expected", ErrImport, lineNo, line.Seq, want)
		}
		if len(line.Data) > MaxDocumentSize {
			return st, fmt.Errorf("%w: line %d: event %d: document larger than %d MiB", ErrImport, lineNo, line.Seq, MaxDocumentSize>>20)
		}
		t, err := time.Parse(time.RFC3339Nano, line.AppendedAt)
		if err != nil {
			return st, fmt.Errorf("%w: line %d: event %d: appended_at: %v", ErrImport, lineNo, line.Seq, err)
		}
		subs = append(subs, Submission{Name: fmt.Sprintf("event %d", line.Seq), Data: line.Data, Arrival: t})
		lines = append(lines, line)
		pending += len(line.Data)
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
		return st, fmt.Errorf("%w: the archive's header says %d events, it holds %d", ErrImport, h.Size, st.Events)
	}
	root, err := l.TreeHash(l.Size())
	if err != nil {
		return st, err
	}
	if !bytes.Equal(root[:], wantRoot) {
		return st, fmt.Errorf("%w: tree root %s differs from the archive's %s", ErrImport, b64(root[:]), h.Root)
	}
	st.Root = root
	if err := l.Close(); err != nil {
		return st, err
	}
	l = nil
	// Everything checked: the staging ledger replaces dir, atomically.
	if target != nil {
		if err := exchangeDirs(staging, dir); err != nil {
			return st, fmt.Errorf("replace %s: %w", dir, err)
		}
		target.Close()
		target = nil
		os.RemoveAll(staging) // the empty ledger dir was
		return st, nil
	}
	if err := os.Rename(staging, dir); err != nil {
		return st, fmt.Errorf("move the imported ledger into place: %w", err)
	}
	return st, syncOSDir(filepath.Dir(dir))
}

// copySettings registers src's HMAC keys and policies in dst.
func copySettings(src, dst *Ledger) error {
	hk, err := src.HMACKeys()
	if err != nil {
		return err
	}
	for _, k := range hk {
		if _, err := dst.AddHMACKey(k); err != nil {
			return err
		}
	}
	ps, err := src.Policies()
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := dst.AddPolicy(p); err != nil {
			return err
		}
	}
	return nil
}

// stagingDir returns a new directory name beside dir for an import, after
// removing stale ones that no import holds any more.
func stagingDir(dir string) (string, error) {
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	prefix := "." + base + ".import-"
	if ents, err := os.ReadDir(parent); err == nil {
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), prefix) {
				continue
			}
			p := filepath.Join(parent, e.Name())
			lock, err := pebble.LockDirectory(filepath.Join(p, storeDir), vfs.Default)
			if err != nil {
				continue // held by a running import, or not a store
			}
			lock.Close()
			os.RemoveAll(p)
		}
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	return filepath.Join(parent, prefix+hex.EncodeToString(rnd[:])), nil
}

// lineReader reads newline-terminated lines of bounded length.
type lineReader struct {
	r   *bufio.Reader
	buf []byte
}

// next returns the next line without its newline (io.EOF at the end).
func (lr *lineReader) next(max int) ([]byte, error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if len(lr.buf)+len(chunk) > max+1 {
			return nil, fmt.Errorf("line longer than %d bytes", max)
		}
		lr.buf = append(lr.buf, chunk...)
		switch {
		case err == nil:
			return lr.buf[:len(lr.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(lr.buf) == 0:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("the archive ends in the middle of a line (truncated)")
		default:
			return nil, err
		}
	}
}

// strictUnmarshal decodes one JSON value, refusing unknown fields and
// trailing data.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the JSON object")
	}
	return nil
}

// AppendWithRetry is Append that waits and retries, with capped
// exponential backoff, while the sequencer pushes back.
func (l *Ledger) AppendWithRetry(ctx context.Context, subs []Submission, opts AppendOptions) ([]Outcome, error) {
	delay := time.Millisecond
	for {
		out, err := l.Append(ctx, subs, opts)
		if !errors.Is(err, ErrPushback) {
			return out, err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}
