package ledger

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/proofledger/ledger/proof"
	"io"
	"strconv"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The checkpoint log is the ledger's memory of what it signed, kept
// outside the Pebble store so that losing or damaging store files cannot
// erase it: every signed checkpoint, in order, appended and synced after
// the batch it describes is durable and before anyone is shown it.
//
// Each record is a header line and the signed note's bytes:
//
//	checkpoint <length of the note in bytes>\n
//	<signed note>
//
// Appending one record costs one write and one data sync (a rename-based
// "latest checkpoint" file costs two syncs and a directory sync); the
// latest signed checkpoint is the last record. A crash can leave at most
// the last record torn: it was never published (publication follows the
// sync), so a torn final record is ignored, while a bad record anywhere
// else is damage. A note never contains "\ncheckpoint " (an origin has no
// spaces, and the other lines are digits, base64 or start with "— "), so
// the last record is found by scanning back from the end of the file.
type ckptLog struct {
	fs   vfs.FS
	name string
	f    vfs.File // open for appending
	off  int64    // where the next record goes
	last int64    // where the last record starts (read copies record it)
}

const ckptRecordPrefix = "checkpoint "

// maxNoteSize bounds one signed checkpoint note.
const maxNoteSize = 16 << 10

// ckptRecord is one record of the checkpoint log.
type ckptRecord struct {
	note []byte
	c    proof.Checkpoint
}

// errTornRecord: a record is incomplete (the end of the file came first).
var errTornRecord = errors.New("incomplete record")

// parseCkptRecord parses the record at the start of b, returning its
// length.
func parseCkptRecord(b []byte) (note []byte, n int, err error) {
	line, _, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return nil, 0, errTornRecord
	}
	num, found := bytes.CutPrefix(line, []byte(ckptRecordPrefix))
	size, perr := strconv.Atoi(string(num))
	if !found || perr != nil || size <= 0 || size > maxNoteSize || string(num) != strconv.Itoa(size) {
		return nil, 0, fmt.Errorf("bad header line %.40q", line)
	}
	start := len(line) + 1
	if len(b) < start+size {
		return nil, 0, errTornRecord
	}
	return b[start : start+size], start + size, nil
}

// lastCkptRecord finds the last complete record of the log. torn reports
// that an incomplete record follows it (a crash during an append); end is
// where the next record belongs. open verifies a note.
func lastCkptRecord(fs vfs.FS, name string, open func([]byte) (proof.Checkpoint, error)) (rec ckptRecord, end int64, torn bool, err error) {
	f, err := fs.Open(name)
	if err != nil {
		return rec, 0, false, err
	}
	defer func() { _ = f.Close() }() // read-only: nothing to lose
	st, err := f.Stat()
	if err != nil {
		return rec, 0, false, err
	}
	size := st.Size()
	from := max(0, size-4*maxNoteSize)
	tail := make([]byte, size-from)
	if _, err := f.ReadAt(tail, from); err != nil && !errors.Is(err, io.EOF) {
		return rec, 0, false, fmt.Errorf("read %s: %w", name, err)
	}
	// Record starts in the tail, last first.
	var starts []int
	for i := 0; i < len(tail); i++ {
		if (i == 0 && from == 0 || i > 0 && tail[i-1] == '\n') && bytes.HasPrefix(tail[i:], []byte(ckptRecordPrefix)) {
			starts = append(starts, i)
		}
	}
	bad := func(format string, args ...any) (ckptRecord, int64, bool, error) {
		return ckptRecord{}, 0, false, fmt.Errorf("%w: %s: %s", ErrCorrupt, name, fmt.Sprintf(format, args...))
	}
	// valid parses and verifies the record at tail[s:], which must end at
	// stop (or, when stop < 0, be followed only by an incomplete line:
	// the torn start of a next record).
	valid := func(s, stop int) (ckptRecord, int, error) {
		note, n, err := parseCkptRecord(tail[s:])
		if err != nil {
			return ckptRecord{}, 0, err
		}
		rest := tail[s+n:]
		if stop >= 0 && s+n != stop || stop < 0 && bytes.IndexByte(rest, '\n') >= 0 {
			return ckptRecord{}, 0, fmt.Errorf("%d unexpected bytes after it", len(rest))
		}
		c, err := open(note)
		if err != nil {
			return ckptRecord{}, 0, err
		}
		return ckptRecord{note: bytes.Clone(note), c: c}, s + n, nil
	}
	if len(starts) == 0 {
		return bad("no checkpoint record in its last %d bytes", len(tail))
	}
	last := starts[len(starts)-1]
	if r, e, err := valid(last, -1); err == nil {
		return r, from + int64(e), e != len(tail), nil
	}
	// The last record failed: a crash tore it before its sync completed,
	// so it was never published. The one before it is the latest, and it
	// must be whole.
	if len(starts) < 2 {
		return bad("no complete checkpoint record")
	}
	prev := starts[len(starts)-2]
	r, e, err := valid(prev, last)
	if err != nil {
		return bad("record at byte %d: %v", from+int64(prev), err)
	}
	return r, from + int64(e), true, nil
}

// ckptLogReader reads the log's records in order (the audit reads them
// all, in bounded memory).
type ckptLogReader struct {
	f    vfs.File
	br   *bufio.Reader
	open func([]byte) (proof.Checkpoint, error)
	off  int64
}

func openCkptLogReader(fs vfs.FS, name string, open func([]byte) (proof.Checkpoint, error)) (*ckptLogReader, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	return &ckptLogReader{f: f, br: bufio.NewReaderSize(f, 64<<10), open: open}, nil
}

// next returns the next record, nil at the end (or at a torn final
// record, which was never published).
func (r *ckptLogReader) next() (*ckptRecord, error) {
	line, err := r.br.ReadSlice('\n')
	if errors.Is(err, io.EOF) {
		return nil, nil // the end, or a torn header line
	}
	if err != nil {
		return nil, fmt.Errorf("record at byte %d: %w", r.off, err)
	}
	num, found := bytes.CutPrefix(line[:len(line)-1], []byte(ckptRecordPrefix))
	size, perr := strconv.Atoi(string(num))
	if !found || perr != nil || size <= 0 || size > maxNoteSize || string(num) != strconv.Itoa(size) {
		return nil, fmt.Errorf("%w: record at byte %d: bad header line %.40q", ErrCorrupt, r.off, line)
	}
	hdr := int64(len(line))
	note := make([]byte, size)
	if _, err := io.ReadFull(r.br, note); err != nil {
		return nil, nil // a torn final record
	}
	c, err := r.open(note)
	if err != nil {
		if _, peek := r.br.Peek(1); peek != nil {
			return nil, nil // an unverifiable final record: torn
		}
		return nil, fmt.Errorf("%w: record at byte %d: %v", ErrCorrupt, r.off, err)
	}
	r.off += hdr + int64(size)
	return &ckptRecord{note: note, c: c}, nil
}

func (r *ckptLogReader) close() {
	if r != nil {
		_ = r.f.Close() // read-only: nothing to lose
	}
}

// openCkptLog opens the log for appending at end, the end of its last
// complete record, which holds lastNote. A torn record after it is cut off
// first, by rewriting the log's complete records through a rename (rare:
// only after a crash during an append).
func openCkptLog(fs vfs.FS, name string, end int64, torn bool, lastNote []byte) (*ckptLog, error) {
	if torn {
		if err := truncateByRewrite(fs, name, end); err != nil {
			return nil, fmt.Errorf("cut the torn record off %s: %w", name, err)
		}
	}
	f, err := fs.OpenReadWrite(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	return &ckptLog{fs: fs, name: name, f: f, off: end, last: end - int64(len(encodeCkptRecords(lastNote)))}, nil
}

// truncateByRewrite replaces name with its first n bytes.
func truncateByRewrite(fs vfs.FS, name string, n int64) error {
	f, err := fs.Open(name)
	if err != nil {
		return err
	}
	data := make([]byte, n)
	_, err = io.ReadFull(f, data)
	_ = f.Close() // read-only: nothing to lose
	if err != nil {
		return err
	}
	return writeFileDurable(fs, name, data, 0o644)
}

// createCkptLog writes a new log holding one note.
func createCkptLog(fs vfs.FS, name string, note []byte) error {
	return writeFileDurable(fs, name, encodeCkptRecords(note), 0o644)
}

func encodeCkptRecords(notes ...[]byte) []byte {
	var buf []byte
	for _, n := range notes {
		buf = fmt.Appendf(buf, "%s%d\n", ckptRecordPrefix, len(n))
		buf = append(buf, n...)
	}
	return buf
}

// append writes the notes as records and syncs the file. It returns
// where each note's record starts.
func (c *ckptLog) append(notes ...[]byte) ([]int64, error) {
	starts, err := c.write(notes...)
	if err != nil {
		return nil, err
	}
	return starts, c.sync()
}

// write writes the notes as records, returning where each record starts.
// Only once sync has returned may the checkpoints they carry be shown to
// anyone.
func (c *ckptLog) write(notes ...[]byte) ([]int64, error) {
	starts := make([]int64, len(notes))
	var buf []byte
	for i, n := range notes {
		starts[i] = c.off + int64(len(buf))
		buf = append(buf, encodeCkptRecords(n)...)
	}
	if _, err := c.f.WriteAt(buf, c.off); err != nil {
		return nil, fmt.Errorf("write %s: %w", c.name, err)
	}
	c.off += int64(len(buf))
	c.last = starts[len(starts)-1]
	return starts, nil
}

// sync makes what was written durable. It may run beside write (the
// publisher syncs while the syncer writes the next records).
func (c *ckptLog) sync() error {
	if err := c.f.SyncData(); err != nil {
		return fmt.Errorf("sync %s: %w", c.name, err)
	}
	return nil
}

func (c *ckptLog) close() error {
	if c == nil || c.f == nil {
		return nil
	}
	err := c.f.Close()
	c.f = nil
	return err
}
