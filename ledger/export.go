package ledger

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/mod/sumdb/tlog"
)

// Export archive format (version 1): zstd-compressed JSON Lines. The first
// line is a header, then one line per event in log order:
//
//	{"format":"ledger-export","version":1,"origin":"...","size":N,"root":"<base64>"}
//	{"seq":0,"appended_at":"...","kind":"vrf","id":"...","leaf":{...},"data":"<base64 original bytes>"}
const exportFormat = "ledger-export"

type exportHeader struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	Origin  string `json:"origin"`
	Size    int64  `json:"size"`
	Root    string `json:"root"`
}

type exportLine struct {
	Seq        int64           `json:"seq"`
	AppendedAt string          `json:"appended_at"`
	Kind       string          `json:"kind"`
	ID         string          `json:"id"`
	Leaf       json.RawMessage `json:"leaf"`
	Data       []byte          `json:"data"`
}

// Export writes every event to w as a zstd-compressed JSON Lines archive
// and returns the number of events written.
func (l *Ledger) Export(ctx context.Context, w io.Writer) (int64, error) {
	size := l.Size()
	root, err := l.TreeHash(size)
	if err != nil {
		return 0, err
	}
	zw, err := zstd.NewWriter(w)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(zw, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(exportHeader{Format: exportFormat, Version: 1, Origin: l.origin, Size: size, Root: base64.StdEncoding.EncodeToString(root[:])}); err != nil {
		return 0, err
	}
	var n int64
	err = l.Scan(0, true, func(ev *Event) (bool, error) {
		if ev.Seq >= size {
			return false, nil
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		n++
		return true, enc.Encode(exportLine{Seq: ev.Seq, AppendedAt: formatTime(ev.AppendedAt), Kind: string(ev.Kind), ID: ev.ID,
			Leaf: ev.Leaf(), Data: ev.Data})
	})
	if err != nil {
		zw.Close()
		return n, err
	}
	if err := bw.Flush(); err != nil {
		return n, err
	}
	return n, zw.Close()
}

// ErrImport is wrapped by errors about an archive that does not reproduce.
var ErrImport = errors.New("import failed")

// ImportStats reports an import.
type ImportStats struct {
	Events int64
	Root   tlog.Hash
}

// Import reads an archive written by Export into this ledger, which must be
// empty. Every document is decoded and verified again and appended with its
// original arrival time; each re-created event must equal the archived one
// and the final tree root must equal the archive's. Documents are admitted
// whether signed or not (the source ledger already applied its trust
// policy), but signatures that are present must verify, so signed bundles
// need their HMAC keys in opts or registered.
func (l *Ledger) Import(ctx context.Context, r io.Reader, opts AppendOptions) (ImportStats, error) {
	var st ImportStats
	if l.Size() != 0 {
		return st, fmt.Errorf("%w: the ledger is not empty (%d events); import only into a new ledger", ErrImport, l.Size())
	}
	zr, err := zstd.NewReader(r, zstd.WithDecoderMaxMemory(1<<30))
	if err != nil {
		return st, err
	}
	defer zr.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(zr, 1<<20))
	var h exportHeader
	if err := dec.Decode(&h); err != nil {
		return st, fmt.Errorf("%w: header: %v", ErrImport, err)
	}
	if h.Format != exportFormat || h.Version != 1 {
		return st, fmt.Errorf("%w: not a ledger export (format %q version %d)", ErrImport, h.Format, h.Version)
	}
	opts.AllowUnsigned = true
	const chunk = 512
	var subs []Submission
	var lines []exportLine
	flush := func() error {
		if len(subs) == 0 {
			return nil
		}
		out, err := l.AppendWithRetry(ctx, subs, opts)
		if err != nil {
			return err
		}
		for i, o := range out {
			want := lines[i]
			if o.Status != StatusAppended || o.Seq != want.Seq {
				return fmt.Errorf("%w: event %d (%s %s): %s %s", ErrImport, want.Seq, want.Kind, want.ID, o.Status, o.Reason)
			}
			if got := o.Event.Leaf(); !bytes.Equal(got, want.Leaf) {
				return fmt.Errorf("%w: event %d re-created differently:\n archived %s\n now      %s", ErrImport, want.Seq, want.Leaf, got)
			}
		}
		st.Events += int64(len(out))
		subs, lines = subs[:0], lines[:0]
		return nil
	}
	for {
		var line exportLine
		if err := dec.Decode(&line); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return st, fmt.Errorf("%w: line %d: %v", ErrImport, st.Events+int64(len(subs))+2, err)
		}
		t, err := time.Parse(time.RFC3339Nano, line.AppendedAt)
		if err != nil {
			return st, fmt.Errorf("%w: event %d: appended_at: %v", ErrImport, line.Seq, err)
		}
		subs = append(subs, Submission{Name: fmt.Sprintf("event %d", line.Seq), Data: line.Data, Arrival: t})
		lines = append(lines, line)
		if len(subs) == chunk {
			if err := flush(); err != nil {
				return st, err
			}
		}
	}
	if err := flush(); err != nil {
		return st, err
	}
	if st.Events != h.Size {
		return st, fmt.Errorf("%w: archive header says %d events, it holds %d", ErrImport, h.Size, st.Events)
	}
	root, err := l.TreeHash(l.Size())
	if err != nil {
		return st, err
	}
	st.Root = root
	if base64.StdEncoding.EncodeToString(root[:]) != h.Root {
		return st, fmt.Errorf("%w: tree root %s differs from the archive's %s", ErrImport, base64.StdEncoding.EncodeToString(root[:]), h.Root)
	}
	return st, nil
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
