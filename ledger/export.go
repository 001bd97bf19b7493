package ledger

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/proofledger/ledger/proof"
	"io"
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
// first line is a header, then the settings (version 3: one line per
// setting, then one per secret, named but never carried), then one line
// per event in log order:
//
//	{"format":"ledger-export","version":3,"origin":"...","size":N,"root":"<base64>","checkpoint":"<signed note>","verifier_key":"...","settings":S,"secrets":K,"settings_note":"<signed note>"}
//	{"setting":"policy/7cc2a0d5ea562ac8","value":"<base64>"}
//	{"secret":"hmac-ci-runner","id":"hmac:5f0e..."}
//	{"seq":0,"appended_at":"...","kind":"vrf","id":"...","leaf":{...},"data":"<base64 original bytes>"}
//
// Version 1 archives (no checkpoint) and version 2 archives (no settings)
// are still imported.
const exportFormat = "ledger-export"

// exportVersion is the archive version Export writes.
const exportVersion = 3

type exportHeader struct {
	Format      string `json:"format"`
	Version     int    `json:"version"`
	Origin      string `json:"origin"`
	Size        int64  `json:"size"`
	Root        string `json:"root"`
	Checkpoint  string `json:"checkpoint,omitempty"`
	VerifierKey string `json:"verifier_key,omitempty"`
	// Version 3: the number of setting lines and secret lines after the
	// header, and the note signing them.
	Settings     *int   `json:"settings,omitempty"`
	Secrets      *int   `json:"secrets,omitempty"`
	SettingsNote string `json:"settings_note,omitempty"`
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
	// Settings and Secrets count the settings carried and the secrets
	// named.
	Settings, Secrets int
}

// Export writes every durable event to w as a zstd-compressed JSON Lines
// archive, headed by the signed checkpoint of its size, the ledger's
// settings (every one, with its bytes) and its secrets' names and ids
// (opts.SecretID; never the secrets), which the log key signs with the
// archive's size and root. Every document is checked against its leaf and
// every leaf against the signed tree (the root is recomputed from the
// leaves as they stream): an altered event is an error naming it, and the
// caller must discard what was written.
func (l *Ledger) Export(ctx context.Context, w io.Writer, opts ExportOptions) (st ExportStats, err error) {
	v, err := l.acquire()
	if err != nil {
		return st, err
	}
	defer l.releaseView(v)
	if v.ckpt.note == nil {
		return st, fmt.Errorf("%w: no verified checkpoint to export against", ErrDamaged)
	}
	root := v.ckpt.c.Root
	settings, nSettings, nSecrets, err := l.archiveSettings(opts)
	if err != nil {
		return st, err
	}
	settingsNote, err := l.signSettings(v.size, root, settings)
	if err != nil {
		return st, err
	}
	zw, err := zstd.NewWriter(w)
	if err != nil {
		return st, err
	}
	// On success zw is closed (and its error returned) below; on failure
	// the caller discards what was written, and this only frees zw.
	defer func() { _ = zw.Close() }()
	bw := bufio.NewWriterSize(zw, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	h := exportHeader{Format: exportFormat, Version: exportVersion, Origin: l.origin, Size: v.size,
		Root: b64(root[:]), Checkpoint: string(v.ckpt.note), VerifierKey: l.vkey,
		Settings: &nSettings, Secrets: &nSecrets, SettingsNote: string(settingsNote)}
	if err := enc.Encode(h); err != nil {
		return st, err
	}
	if _, err := bw.Write(settings); err != nil {
		return st, err
	}
	st.Settings, st.Secrets = nSettings, nSecrets
	dataIt, err := viewIter(v, prefixDoc, dataKey(v.size))
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

// ArchiveHeader is the first line of an export archive, with the settings
// that follow it.
type ArchiveHeader struct {
	Version int
	Origin  string
	Size    int64
	Root    tlog.Hash
	// Checkpoint is the signed checkpoint of Size (version 2 and later)
	// and VerifierKey the key the archive names for it.
	Checkpoint  []byte
	VerifierKey string
	// Settings are the exporting ledger's settings and Secrets its
	// secrets' names and ids, each in name order (version 3 and later);
	// SettingsNote signs them with the header's origin, size and root
	// (VerifyCheckpoint checks it).
	Settings     []ArchiveSetting
	Secrets      []ArchiveSecret
	SettingsNote []byte

	settingsDigest [32]byte
}

// VerifyCheckpoint checks the archive's signatures under vkey (the key the
// archive names when vkey is empty): the signed checkpoint must verify and
// match the header's size and root, and (version 3 and later) the settings
// note must verify and sign the header's size and root and the settings
// the archive carries. It returns the key it verified under. A version-1
// archive has no checkpoint: the empty string and no error.
func (h ArchiveHeader) VerifyCheckpoint(vkey string) (string, error) {
	if h.Version < 2 {
		return "", nil
	}
	if vkey == "" {
		vkey = h.VerifierKey
	}
	c, err := proof.OpenCheckpoint(h.Checkpoint, vkey)
	if err != nil {
		return "", fmt.Errorf("%w: the archive's checkpoint: %v", ErrImport, err)
	}
	if c.Size != h.Size || c.Root != h.Root {
		return "", fmt.Errorf("%w: the archive's signed checkpoint (size %d) does not match its header (size %d)", ErrImport, c.Size, h.Size)
	}
	if h.Version >= 3 {
		if err := h.verifySettings(vkey); err != nil {
			return "", err
		}
	}
	return vkey, nil
}

// ArchiveEvent is one event of an archive.
type ArchiveEvent struct {
	Seq        int64
	AppendedAt time.Time
	Kind       string
	ID         string
	Leaf       []byte
	Data       []byte
	// Line is the event's line number in the archive.
	Line int
}

// ErrImport is wrapped by errors about an archive that cannot be read or
// does not reproduce.
var ErrImport = errors.New("import failed")

// ArchiveReader reads an export archive in bounded memory: the zstd window,
// each line and each document are capped, and events must come in order
// from 0.
type ArchiveReader struct {
	zr     *zstd.Decoder
	lr     *lineReader
	header ArchiveHeader
	line   int
	next   int64
}

// NewArchiveReader reads and checks the archive's header.
func NewArchiveReader(r io.Reader) (*ArchiveReader, error) {
	// Streaming decompression with a bounded window. (The reader is
	// wrapped so that zstd cannot see a whole in-memory buffer and decode
	// it all at once.)
	zr, err := zstd.NewReader(struct{ io.Reader }{r}, zstd.WithDecoderMaxMemory(256<<20), zstd.WithDecoderMaxWindow(64<<20), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	a := &ArchiveReader{zr: zr, lr: &lineReader{r: bufio.NewReaderSize(zr, 1<<20)}, line: 1}
	hline, err := a.lr.next(1 << 20)
	if err != nil {
		zr.Close()
		return nil, fmt.Errorf("%w: line 1 (header): %v", ErrImport, err)
	}
	var h exportHeader
	if err := strictUnmarshal(hline, &h); err != nil {
		zr.Close()
		return nil, fmt.Errorf("%w: line 1 (header): %v", ErrImport, err)
	}
	if h.Format != exportFormat || h.Version < 1 || h.Version > exportVersion {
		zr.Close()
		return nil, fmt.Errorf("%w: not a ledger export this binary reads (format %.40q version %d)", ErrImport, h.Format, h.Version)
	}
	root, err := base64.StdEncoding.DecodeString(h.Root)
	if err != nil || len(root) != tlog.HashSize || h.Size < 0 {
		zr.Close()
		return nil, fmt.Errorf("%w: header: bad size or root", ErrImport)
	}
	a.header = ArchiveHeader{Version: h.Version, Origin: h.Origin, Size: h.Size, Root: tlog.Hash(root),
		Checkpoint: []byte(h.Checkpoint), VerifierKey: h.VerifierKey, SettingsNote: []byte(h.SettingsNote)}
	switch {
	case h.Version >= 3 && (h.Settings == nil || h.Secrets == nil || h.SettingsNote == "" || h.Checkpoint == ""):
		zr.Close()
		return nil, fmt.Errorf("%w: line 1 (header): a version %d header needs checkpoint, settings, secrets and settings_note", ErrImport, h.Version)
	case h.Version < 3 && (h.Settings != nil || h.Secrets != nil || h.SettingsNote != ""):
		zr.Close()
		return nil, fmt.Errorf("%w: line 1 (header): a version %d archive carries no settings", ErrImport, h.Version)
	case h.Version >= 3:
		if err := a.readSettings(*h.Settings, *h.Secrets); err != nil {
			zr.Close()
			return nil, err
		}
	}
	return a, nil
}

// Header returns the archive's header.
func (a *ArchiveReader) Header() ArchiveHeader { return a.header }

// Next returns the next event, or io.EOF after the last one.
func (a *ArchiveReader) Next() (*ArchiveEvent, error) {
	raw, err := a.lr.next(maxArchiveLine)
	if errors.Is(err, io.EOF) {
		return nil, io.EOF
	}
	a.line++
	if err != nil {
		return nil, fmt.Errorf("%w: line %d: %v", ErrImport, a.line, err)
	}
	var line exportLine
	if err := strictUnmarshal(raw, &line); err != nil {
		return nil, fmt.Errorf("%w: line %d: %v", ErrImport, a.line, err)
	}
	if line.Seq != a.next {
		return nil, fmt.Errorf("%w: line %d: event %d where event %d was expected", ErrImport, a.line, line.Seq, a.next)
	}
	if len(line.Data) > MaxDocumentSize {
		return nil, fmt.Errorf("%w: line %d: event %d: document larger than %d MiB", ErrImport, a.line, line.Seq, MaxDocumentSize>>20)
	}
	t, err := time.Parse(time.RFC3339Nano, line.AppendedAt)
	if err != nil {
		return nil, fmt.Errorf("%w: line %d: event %d: appended_at: %v", ErrImport, a.line, line.Seq, err)
	}
	a.next++
	return &ArchiveEvent{Seq: line.Seq, AppendedAt: t, Kind: line.Kind, ID: line.ID, Leaf: line.Leaf, Data: line.Data, Line: a.line}, nil
}

// Close releases the decompressor.
func (a *ArchiveReader) Close() { a.zr.Close() }

// Install moves a complete ledger directory, staging, into place at dir:
// when dir exists (an empty ledger the caller holds open, so that nothing
// else writes it) the two are exchanged atomically (renameat2 on Linux),
// and the old directory is then at staging, for the caller to remove once
// it has closed it (replaced true); otherwise staging is renamed to dir.
func Install(staging, dir string) (replaced bool, err error) {
	if _, err := os.Stat(dir); err == nil {
		if err := exchangeDirs(staging, dir); err != nil {
			return false, fmt.Errorf("replace %s: %w", dir, err)
		}
		return true, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	if err := os.Rename(staging, dir); err != nil {
		return false, fmt.Errorf("move the new ledger into place: %w", err)
	}
	return false, syncOSDir(filepath.Dir(dir))
}

// stagingLock is the file an import holds locked in its staging directory
// for as long as it runs (LockStaging).
const stagingLock = "import.lock"

// StagingDir returns a new directory name beside dir for a ledger being
// built to replace it (Install), after removing stale ones that no process
// holds any more: those whose import.lock (LockStaging) or, for a staging
// directory made before that lock existed, whose store can be locked.
func StagingDir(dir string) (string, error) {
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	prefix := "." + base + ".import-"
	if ents, err := os.ReadDir(parent); err == nil {
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), prefix) {
				continue
			}
			p := filepath.Join(parent, e.Name())
			var lock io.Closer
			if _, err := os.Stat(filepath.Join(p, stagingLock)); err == nil {
				if lock, err = vfs.Default.Lock(filepath.Join(p, stagingLock)); err != nil {
					continue // held by a running import
				}
			} else if lock, err = pebble.LockDirectory(filepath.Join(p, storeDir), vfs.Default); err != nil {
				continue // held by a running import, or not a store
			}
			// Best effort: a stale directory left here is retried by the
			// next import and hides nothing.
			_ = lock.Close()
			_ = os.RemoveAll(p)
		}
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	return filepath.Join(parent, prefix+hex.EncodeToString(rnd[:])), nil
}

// LockStaging creates the staging directory (StagingDir) and locks it for
// this process: StagingDir leaves it alone until the lock is released,
// however early the import is killed (before its store exists, too). The
// caller builds the ledger in it (Init works in the existing directory),
// and once it is installed removes the lock file from where it is then
// (UnlockStaging).
func LockStaging(staging string) (io.Closer, error) {
	if err := os.Mkdir(staging, dirMode); err != nil {
		return nil, err
	}
	return vfs.Default.Lock(filepath.Join(staging, stagingLock))
}

// UnlockStaging releases the lock of a staging directory and removes its
// lock file from dir, the ledger directory the staging directory became
// (or still is).
func UnlockStaging(dir string, lock io.Closer) error {
	cerr := lock.Close()
	err := os.Remove(filepath.Join(dir, stagingLock))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return errors.Join(cerr, err)
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
