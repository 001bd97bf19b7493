package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// recordHandler keeps the records logged through it.
type recordHandler struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

// take returns the records logged since the last call, and forgets them.
func (h *recordHandler) take() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	recs := h.recs
	h.recs = nil
	return recs
}

// TestPebbleMessagesBelowWarning checks the level of every message Pebble
// sends the ledger's logger: below warning (a command-line program shows
// them with --verbose only), on one line, but for a background error that
// is not a corruption (a failed flush or compaction); and that nothing
// is lost: a corruption is recorded for Corruption, a fatal condition goes
// to OnFatal, and a background error to the flush Close waits for.
func TestPebbleMessagesBelowWarning(t *testing.T) {
	corrupt := fmt.Errorf("pebble: file 000011: block 757905/1309: crc32c checksum mismatch 1 != 2\n(1) details: %w", pebble.ErrCorruption)
	ioErr := errors.New("write 000012.sst: no space left on device\n(1) details")
	tests := []struct {
		name      string
		fatal     bool // with an OnFatal
		log       func(o *pebble.Options)
		level     slog.Level
		msg       string // the record's message and its attributes' values (component first), in part
		corrupted bool   // recorded for Corruption
		bg        bool   // sent to the flush Close waits for
	}{
		{name: "Infof", log: func(o *pebble.Options) { o.Logger.Infof("[JOB %d] WAL %s recovered", 1, "000010") },
			level: slog.LevelDebug, msg: "[JOB 1] WAL 000010 recovered"},
		{name: "Errorf", log: func(o *pebble.Options) { o.Logger.Errorf("metrics error: %s", "one\ntwo") },
			level: slog.LevelInfo, msg: "metrics error: one"},
		{name: "data corruption", log: func(o *pebble.Options) {
			o.EventListener.DataCorruption(pebble.DataCorruptionInfo{Path: "store/000011.sst", Details: corrupt})
		}, level: slog.LevelInfo, msg: "store corruption pebble store/000011.sst pebble: file 000011: block 757905/1309: crc32c checksum mismatch 1 != 2", corrupted: true},
		{name: "background corruption", log: func(o *pebble.Options) { o.EventListener.BackgroundError(corrupt) },
			level: slog.LevelInfo, msg: "store background error pebble pebble: file 000011", corrupted: true, bg: true},
		{name: "background I/O error", log: func(o *pebble.Options) { o.EventListener.BackgroundError(ioErr) },
			level: slog.LevelWarn, msg: "store background error pebble write 000012.sst: no space left on device", bg: true},
		{name: "fatal with OnFatal", fatal: true, log: func(o *pebble.Options) { o.Logger.Fatalf("MANIFEST %s", "lost") },
			level: slog.LevelInfo, msg: "MANIFEST lost"},
		{name: "fatal without OnFatal", log: func(o *pebble.Options) { o.Logger.Fatalf("MANIFEST %s", "lost") },
			level: slog.LevelError, msg: "MANIFEST lost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &recordHandler{}
			var fatalMsg, corruptMsg atomic.Pointer[string]
			var onFatal []string
			pl := pebbleLogger{l: slog.New(h), record: &fatalMsg, corrupt: &corruptMsg, bgErr: make(chan error, 1)}
			if tt.fatal {
				pl.onFatal = func(msg string) { onFatal = append(onFatal, msg) }
			}
			o := pebbleOptions(pl)
			func() {
				defer func() {
					if r := recover(); r != nil {
						if _, ok := r.(*FatalError); !ok {
							panic(r)
						}
					}
				}()
				tt.log(o)
			}()
			recs := h.take()
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1", len(recs))
			}
			r := recs[0]
			text := r.Message
			r.Attrs(func(a slog.Attr) bool { text += " " + a.Value.String(); return true })
			if r.Level != tt.level || !strings.Contains(text, tt.msg) || strings.Contains(text, "\n") {
				t.Errorf("logged %v %q, want %v with %q on one line", r.Level, text, tt.level, tt.msg)
			}
			l := &Ledger{}
			if p := corruptMsg.Load(); p != nil {
				l.corrupt.Store(p)
			}
			if err := l.Corruption(); (err != nil) != tt.corrupted || err != nil && (!errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "crc32c checksum mismatch 1 != 2")) {
				t.Errorf("Corruption() = %v, want a report: %v", err, tt.corrupted)
			}
			if got := len(pl.bgErr) == 1; got != tt.bg {
				t.Errorf("background error sent: %v, want %v", got, tt.bg)
			}
			if strings.HasPrefix(tt.name, "fatal") {
				if p := fatalMsg.Load(); p == nil || *p != "MANIFEST lost" {
					t.Errorf("fatal message not recorded: %v", p)
				}
				if tt.fatal && (len(onFatal) != 1 || onFatal[0] != "MANIFEST lost") {
					t.Errorf("OnFatal got %q", onFatal)
				}
			}
		})
	}
}

// TestCorruptionKeepsTheFirst checks that Corruption reports the first
// corruption Pebble reported, whatever came after it.
func TestCorruptionKeepsTheFirst(t *testing.T) {
	l := &Ledger{}
	if err := l.Corruption(); err != nil {
		t.Fatalf("a fresh ledger reports %v", err)
	}
	o := pebbleOptions(pebbleLogger{corrupt: &l.corrupt})
	for _, f := range []string{"000011", "000012"} {
		o.EventListener.DataCorruption(pebble.DataCorruptionInfo{Details: fmt.Errorf("pebble: file %s: bad block: %w", f, pebble.ErrCorruption)})
	}
	err := l.Corruption()
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "file 000011") || strings.Contains(err.Error(), "000012") {
		t.Errorf("Corruption() = %v, want the first report, of file 000011", err)
	}
}
