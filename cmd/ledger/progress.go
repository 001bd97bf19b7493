package main

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/schollz/progressbar/v3"

	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
)

// Progress bars for long work (append, import, export, audit, rebuild):
// on stderr, only when stderr is a terminal and neither --no-progress nor
// LEDGER_NO_PROGRESS is set, so tests and pipes see nothing. A bar is
// cleared when its work ends: what the command reports stays on stdout.

// progressThrottle is the least time between two renderings of a bar.
const progressThrottle = 100 * time.Millisecond

// progress is one bar; a nil *progress (progress off) ignores every call.
type progress struct {
	bar *progressbar.ProgressBar
	// shared: stdout is the same terminal, so lines written to it clear
	// the bar first (see clear).
	shared bool
	mu     sync.Mutex
	ended  bool
}

// newProgress starts a bar describing what, counting unit (events,
// documents) towards total; total < 0 when it is not known (a spinner with
// the count).
func (e *env) newProgress(what, unit string, total int64) *progress {
	if e.noProgress || !isTerminal(e.stderr) {
		return nil
	}
	max := total
	if total < 0 {
		max = -1
	} else if total == 0 {
		return nil // nothing to wait for
	}
	bar := progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(e.stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionSetItsString(unit),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(progressThrottle),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionUseANSICodes(true),
		progressbar.OptionEnableColorCodes(false),
	)
	_ = bar.RenderBlank() // a write error on the terminal: the bar is cosmetic
	return &progress{bar: bar, shared: isTerminal(e.stdout)}
}

// set moves the bar to done.
func (p *progress) set(done int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ended {
		_ = p.bar.Set64(done) // cosmetic: a failed render changes nothing
	}
}

// add moves the bar on by n.
func (p *progress) add(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ended {
		_ = p.bar.Add64(n) // cosmetic
	}
}

// clear erases the bar before a line goes to a stdout that is the same
// terminal; the next update draws it again.
func (p *progress) clear() {
	if p == nil || !p.shared {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ended {
		_ = p.bar.Clear() // cosmetic
	}
}

// done ends the bar and erases it, whether the work completed or failed.
func (p *progress) done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.ended = true
	_ = p.bar.Finish() // stops a spinner and clears the line (OptionClearOnFinish)
	_ = p.bar.Clear()
}

// eventCounter counts the events an export writes, from the archive bytes
// alone (cmd may not reach into ledger.Export): it decompresses a copy of
// the zstd stream in a goroutine and counts the lines after the header.
// It only ever reads: a decoding problem stops the count, never the
// export, and a writer is never blocked by a stalled count.
type eventCounter struct {
	pw    *io.PipeWriter
	done  chan struct{}
	lines atomic.Int64
}

// newEventCounter starts counting; onLines is called with the number of
// lines seen so far (the header included) as they are decoded.
func newEventCounter(onLines func(lines int64)) *eventCounter {
	pr, pw := io.Pipe()
	c := &eventCounter{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer func() { _, _ = io.Copy(io.Discard, pr) }() // keep the writer unblocked whatever happened
		dec, err := zstd.NewReader(pr, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20))
		if err != nil {
			return
		}
		defer dec.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := dec.Read(buf)
			for _, b := range buf[:n] {
				if b == '\n' {
					onLines(c.lines.Add(1))
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return c
}

// Write passes a copy of the archive's bytes to the counter.
func (c *eventCounter) Write(p []byte) (int, error) {
	n, err := c.pw.Write(p)
	if errors.Is(err, io.ErrClosedPipe) {
		return len(p), nil
	}
	return n, err
}

// close ends the stream and waits for the count to finish.
func (c *eventCounter) close() {
	_ = c.pw.Close() // a pipe's Close never fails
	<-c.done
}

// exportWithProgress runs l.Export into w with a progress bar of the
// events written (counted by an eventCounter) when progress is shown.
func exportWithProgress(ctx context.Context, e *env, l *admit.Ledger, w io.Writer) (ledger.ExportStats, error) {
	bar := e.newProgress("export", "events", l.Size())
	if bar == nil {
		return l.Export(ctx, w)
	}
	defer bar.done()
	counter := newEventCounter(func(lines int64) {
		if lines > 1 { // the first line is the archive's header
			bar.set(lines - 1)
		}
	})
	st, err := l.Export(ctx, io.MultiWriter(w, counter))
	counter.close()
	return st, err
}

// newImportProgress starts the bar of an import of path ("-": standard
// input, whose size is not known ahead).
func (e *env) newImportProgress(path string) *progress {
	if e.noProgress || !isTerminal(e.stderr) {
		return nil
	}
	total := int64(-1)
	if path != "-" {
		total = archiveEvents(path)
	}
	return e.newProgress("import", "events", total)
}

// archiveEvents is the number of events an archive file's header
// announces, for an import's progress bar; -1 when it cannot tell (then
// the import itself reports what is wrong).
func archiveEvents(path string) int64 {
	f, err := openRegular(path)
	if err != nil {
		return -1
	}
	defer func() { _ = f.Close() }() // read-only: nothing to lose
	ar, err := ledger.NewArchiveReader(f)
	if err != nil {
		return -1
	}
	defer ar.Close()
	return ar.Header().Size
}
