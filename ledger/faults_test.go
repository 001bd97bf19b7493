package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/proofledger/ledger/proof"
)

const memDir = "/ledger"

// faultFS is an in-memory file system whose operations fail, while armed,
// when they match.
type faultFS struct {
	mem   *vfs.MemFS
	fs    vfs.FS
	armed atomic.Bool
	match atomic.Pointer[func(errorfs.Op) bool]
	hits  atomic.Int64
}

func newFaultFS(mem *vfs.MemFS) *faultFS {
	f := &faultFS{mem: mem}
	f.fs = errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !f.armed.Load() {
			return nil
		}
		if m := f.match.Load(); m != nil && (*m)(op) {
			f.hits.Add(1)
			return errorfs.ErrInjected
		}
		return nil
	}))
	return f
}

func (f *faultFS) arm(match func(errorfs.Op) bool) {
	f.match.Store(&match)
	f.hits.Store(0)
	f.armed.Store(true)
}

func (f *faultFS) disarm() { f.armed.Store(false) }

func isWAL(op errorfs.Op) bool { return strings.HasSuffix(op.Path, ".log") }
func isSST(op errorfs.Op) bool { return strings.HasSuffix(op.Path, ".sst") }
func isCkptLog(op errorfs.Op) bool {
	return strings.HasSuffix(op.Path, "/"+ckptLogFile)
}
func isSync(op errorfs.Op) bool {
	return op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo
}

// signedRoots records every root the ledger ever showed for each size and
// fails the test on a second, different one.
type signedRoots struct {
	t     *testing.T
	roots map[int64]string
}

func (s *signedRoots) see(note []byte, vkey string) {
	s.t.Helper()
	c, err := proof.OpenCheckpoint(note, vkey)
	if err != nil {
		s.t.Fatalf("a checkpoint the ledger showed does not verify: %v", err)
	}
	root := b64(c.Root[:])
	if prev, ok := s.roots[c.Size]; ok && prev != root {
		s.t.Fatalf("two roots signed for size %d: %s and %s", c.Size, prev, root)
	}
	s.roots[c.Size] = root
}

// seeLog records every checkpoint in the ledger's checkpoint log.
func (s *signedRoots) seeLog(fs vfs.FS, vkey string) {
	s.t.Helper()
	r, err := openCkptLogReader(fs, fs.PathJoin(memDir, ckptLogFile), func(n []byte) (proof.Checkpoint, error) { return proof.OpenCheckpoint(n, vkey) })
	if err != nil {
		s.t.Fatal(err)
	}
	defer r.close()
	for {
		rec, err := r.next()
		if err != nil {
			s.t.Fatalf("checkpoint log: %v", err)
		}
		if rec == nil {
			return
		}
		s.see(rec.note, vkey)
	}
}

// TestAppendFaults breaks one step of an append per row (after Sunlight's
// TestSequenceErrors) and states what must follow: the append fails and
// nothing of it is published; the ledger either goes on (a failure before
// the batch is applied) or refuses further appends (a failure after, when
// what is durable is unknown); no size is ever signed twice; and after
// reopening, the store is consistent, audits clean, and appends again.
func TestAppendFaults(t *testing.T) {
	rows := []struct {
		name string
		// match selects the failing operations; nil with failSign fails
		// the checkpoint signature instead.
		match    func(errorfs.Op) bool
		failSign bool
		// flushFirst moves the log into tables and reopens, so that
		// admission reads them from the file system.
		flushFirst bool
		// fatal: the ledger must refuse appends after the fault.
		fatal bool
		// acked: the append is acknowledged (its batch is in the synced
		// WAL and its checkpoint written to the checkpoint log) though the
		// fault comes after: nothing of it is published, the ledger
		// refuses further appends, and the event is there on reopening.
		acked bool
		// conflict: the faulted append is a different document with the
		// identity of an appended one, so admission must read its entry.
		conflict bool
	}{
		{name: "WAL write", match: func(op errorfs.Op) bool { return isWAL(op) && op.Kind == errorfs.OpFileWrite }, fatal: true},
		{name: "WAL sync", match: func(op errorfs.Op) bool { return isWAL(op) && isSync(op) }, fatal: true},
		{name: "checkpoint log write", match: func(op errorfs.Op) bool { return isCkptLog(op) && op.Kind == errorfs.OpFileWriteAt }, fatal: true},
		{name: "checkpoint log sync", match: func(op errorfs.Op) bool { return isCkptLog(op) && isSync(op) }, fatal: true, acked: true},
		{name: "read during admission", match: func(op errorfs.Op) bool {
			return isSST(op) && (op.Kind == errorfs.OpFileReadAt || op.Kind == errorfs.OpFileRead || op.Kind == errorfs.OpOpen)
		}, flushFirst: true, conflict: true},
		{name: "checkpoint signature", failSign: true},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			ctx := context.Background()
			ffs := newFaultFS(vfs.NewMem())
			if err := Init(memDir, InitOptions{Origin: "faults.test", Key: testKey(9), FS: ffs.fs, Locker: NewMemLocker()}); err != nil {
				t.Fatal(err)
			}
			var signFail atomic.Bool
			opts := Options{FS: ffs.fs, Locker: NewMemLocker(), hooks: &hooks{sign: func(proof.Checkpoint) error {
				if signFail.Load() {
					return errors.New("signature failed on purpose")
				}
				return nil
			}}}
			l, err := Open(memDir, opts)
			if err != nil {
				t.Fatal(err)
			}
			roots := &signedRoots{t: t, roots: map[int64]string{}}
			n := 0
			appendOne := func(l *Ledger) ([]Outcome, error) {
				n++
				return l.Append(ctx, []*Entry{rawEntry(n)})
			}
			for range 200 {
				if _, err := appendOne(l); err != nil {
					t.Fatal(err)
				}
			}
			if row.flushFirst {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if l, err = Open(memDir, opts); err != nil {
					t.Fatal(err)
				}
			}
			note, err := l.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			roots.see(note, l.VerifierKey())
			before := l.Size()

			if row.failSign {
				signFail.Store(true)
			} else {
				ffs.arm(row.match)
			}
			var out []Outcome
			if row.conflict {
				conflict := rawEntry(100)
				conflict.Data = append(conflict.Data, ' ')
				out, err = l.Append(ctx, []*Entry{conflict})
			} else {
				out, err = appendOne(l)
			}
			if row.acked && err == nil {
				// Answered before its checkpoint-log sync: a read waits
				// for the publisher, which meets the fault.
				_ = l.Size()
			}
			ffs.disarm()
			signFail.Store(false)
			switch {
			case row.acked && err != nil:
				t.Fatalf("append through a fault after its WAL sync = %v, want it acknowledged", err)
			case !row.acked && err == nil:
				t.Fatalf("the append went through the fault: %+v (%d injected errors)", out, ffs.hits.Load())
			}
			if !row.failSign && ffs.hits.Load() == 0 {
				t.Fatal("the fault was never hit")
			}
			ackedID := ""
			if row.acked {
				ackedID = out[0].ID
			}
			// Nothing of the failed append is published.
			if got := l.Size(); got != before {
				t.Errorf("size %d after the failed append, want %d", got, before)
			}
			if note, err := l.Checkpoint(); err != nil || !strings.Contains(string(note), fmt.Sprintf("\n%d\n", before)) {
				t.Errorf("checkpoint after the failed append: %q %v", note, err)
			} else {
				roots.see(note, l.VerifierKey())
			}
			_, err = appendOne(l)
			switch {
			case row.fatal && !errors.Is(err, ErrFailed):
				t.Errorf("append after the fault = %v, want ErrFailed", err)
			case !row.fatal && err != nil:
				t.Errorf("append after a fault before apply = %v, want success", err)
			}
			if !row.fatal {
				note, _ := l.Checkpoint()
				roots.see(note, l.VerifierKey())
			}
			_ = l.Close() // after an injected fault Close may fail; the reopen below is the check
			roots.seeLog(ffs.mem, l.VerifierKey())

			// Reopened on the same (now healthy) file system: consistent,
			// clean, appending, and never re-signing a size.
			l, err = Open(memDir, opts)
			if err != nil {
				t.Fatalf("reopen after the fault: %v", err)
			}
			defer func() {
				if err := l.Close(); err != nil {
					t.Error(err)
				}
			}()
			if l.Size() < before {
				t.Errorf("reopened with %d events, fewer than the %d acknowledged", l.Size(), before)
			}
			if ackedID != "" {
				if ev, err := l.Lookup(ackedID); err != nil || ev.Seq != before {
					t.Errorf("the append acknowledged before the fault: %+v %v, want event %d", ev, err, before)
				}
			}
			rep, err := l.Audit(ctx, AuditOptions{})
			if err != nil || !rep.OK() {
				t.Fatalf("audit after reopening: %v %v", err, rep.Problems)
			}
			if _, err := appendOne(l); err != nil {
				t.Fatalf("append after reopening: %v", err)
			}
			note, _ = l.Checkpoint()
			roots.see(note, l.VerifierKey())
			if err := l.Close(); err != nil {
				t.Error(err)
			}
			roots.seeLog(ffs.mem, l.VerifierKey())
		})
	}
}

// TestFlushFaultLosesNothing fails the writes of a memtable flush: the
// appends before it were synced to the WAL, so closing reports the error
// and reopening finds every acknowledged event.
func TestFlushFaultLosesNothing(t *testing.T) {
	ctx := context.Background()
	ffs := newFaultFS(vfs.NewMem())
	if err := Init(memDir, InitOptions{Origin: "faults.test", Key: testKey(9), FS: ffs.fs, Locker: NewMemLocker()}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(memDir, Options{FS: ffs.fs, Locker: NewMemLocker()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := l.Append(ctx, []*Entry{rawEntry(i)}); err != nil {
			t.Fatal(err)
		}
	}
	ffs.arm(func(op errorfs.Op) bool {
		return isSST(op) && (op.Kind == errorfs.OpCreate || op.Kind == errorfs.OpFileWrite)
	})
	closeErr := l.Close()
	ffs.disarm()
	if closeErr == nil || ffs.hits.Load() == 0 {
		t.Fatalf("close with failing table writes = %v (%d injected errors), want an error", closeErr, ffs.hits.Load())
	}
	l, err = Open(memDir, Options{FS: ffs.fs, Locker: NewMemLocker()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	if l.Size() != 10 {
		t.Errorf("reopened with %d events, want 10", l.Size())
	}
	if rep, err := l.Audit(ctx, AuditOptions{}); err != nil || !rep.OK() {
		t.Errorf("audit: %v %v", err, rep.Problems)
	}
}

// TestCrashDropsOnlyUnacknowledged appends from several goroutines on
// Pebble's crashable in-memory file system and, at random moments, takes
// a crash image that drops some or all unsynced writes. Each image must
// open (never damaged: nothing published was unsynced), hold every append
// acknowledged before the image was taken, audit clean (no half batch) and
// accept appends again.
func TestCrashDropsOnlyUnacknowledged(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewCrashableMem()
	if err := Init(memDir, InitOptions{Origin: "crash.test", Key: testKey(9), FS: mem, Locker: NewMemLocker()}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(memDir, Options{FS: mem, Locker: NewMemLocker()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[string]int64{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	defer func() {
		close(stop)
		wg.Wait()
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	var next atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if next.Load() > 3000 {
					time.Sleep(time.Millisecond) // enough events; wait for the images
					continue
				}
				var entries []*Entry
				for range 1 + w {
					i := int(next.Add(1))
					entries = append(entries, rawEntry(i))
				}
				out, err := l.Append(ctx, entries)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, o := range out {
					if o.Status == StatusAppended {
						acked[o.ID] = o.Seq
					}
				}
				mu.Unlock()
			}
		}()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	images := 0
	for images < 12 {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n < 200*(images+1) {
			time.Sleep(time.Millisecond)
			continue
		}
		mu.Lock()
		seen := make(map[string]int64, len(acked))
		for k, v := range acked {
			seen[k] = v
		}
		mu.Unlock()
		img := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rand.New(rand.NewPCG(uint64(images), 7))})
		images++
		checkReopens(t, img, seen)
	}
}

// checkReopens opens the ledger left on fs (a crash image, or the files a
// failed ledger left) and checks that it opens undamaged, holds every
// acknowledged append at its sequence number, audits clean and appends.
func checkReopens(t *testing.T, fs vfs.FS, acked map[string]int64) {
	t.Helper()
	ctx := context.Background()
	l, err := Open(memDir, Options{FS: fs, Locker: NewMemLocker()})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	for id, seq := range acked {
		ev, err := l.Lookup(id)
		if err != nil || ev.Seq != seq {
			t.Fatalf("acknowledged %s (event %d) after reopening: %v %v", id, seq, ev, err)
		}
	}
	if rep, err := l.Audit(ctx, AuditOptions{}); err != nil || !rep.OK() {
		t.Fatalf("audit after reopening: %v %v", err, rep.Problems)
	}
	out, err := l.Append(ctx, []*Entry{rawEntry(1 << 20)})
	if err != nil || out[0].Status != StatusAppended {
		t.Fatalf("append after reopening: %v %+v", err, out)
	}
}

// TestGroupedSyncFailure fails the checkpoint log's sync while several
// appenders keep batches in flight, so that the publisher meets the
// failure with a group of answered batches sharing one checkpoint-log
// sync. None of that group is published (their appends were answered
// before the sync: fewer are published than acknowledged), every append
// after it fails, every acknowledged append is there after reopening at
// its sequence number, no size is signed twice, and the store audits
// clean.
func TestGroupedSyncFailure(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	ffs := newFaultFS(mem)
	lk := NewMemLocker()
	if err := Init(memDir, InitOptions{Origin: "group.test", Key: testKey(4), FS: ffs.fs, Locker: lk}); err != nil {
		t.Fatal(err)
	}
	opts := Options{FS: ffs.fs, Locker: lk}
	l, err := Open(memDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[string]int64{}
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				out, err := l.Append(ctx, []*Entry{rawEntry(i)})
				if err != nil {
					if !errors.Is(err, ErrFailed) {
						t.Errorf("append %d: %v, want ErrFailed", i, err)
					}
					return
				}
				mu.Lock()
				acked[out[0].ID] = out[0].Seq
				mu.Unlock()
				if done.Add(1) == 400 {
					ffs.arm(func(op errorfs.Op) bool { return isCkptLog(op) && isSync(op) })
				}
			}
		}()
	}
	wg.Wait()
	ffs.disarm()
	if ffs.hits.Load() == 0 {
		t.Fatal("the fault was never hit")
	}
	// Appends are answered once their batch's WAL sync returned and its
	// checkpoint is written to the checkpoint log; the failed sync of the
	// log comes after, so some acknowledged ones are never published here.
	if got, acks := l.Size(), int64(len(acked)); got > acks || got == acks {
		t.Errorf("published size %d after the failure, want fewer than the %d acknowledged", got, acks)
	}
	_ = l.Close() // after an injected fault Close may fail; the reopen below is the check
	roots := &signedRoots{t: t, roots: map[int64]string{}}
	roots.seeLog(mem, l.VerifierKey())
	checkReopens(t, mem, acked)
}

// TestAnsweredBeforeLogSync holds the checkpoint log's sync while an
// append is answered (its batch is in the synced WAL, its checkpoint
// written to the log but not synced): nothing of it is published yet, and
// a power loss at that moment (a crash image without unsynced writes)
// leaves a ledger that opens undamaged, holds the acknowledged event and
// writes its checkpoint to the log again. Then the sync goes on and the
// running ledger publishes the append.
func TestAnsweredBeforeLogSync(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewCrashableMem()
	ffs := newFaultFS(mem)
	lk := NewMemLocker()
	if err := Init(memDir, InitOptions{Origin: "window.test", Key: testKey(5), FS: ffs.fs, Locker: lk}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(memDir, Options{FS: ffs.fs, Locker: lk})
	if err != nil {
		t.Fatal(err)
	}
	appendRaw(t, l, 0, 10)
	if l.Size() != 10 {
		t.Fatalf("size %d, want 10", l.Size())
	}
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	ffs.arm(func(op errorfs.Op) bool {
		if isCkptLog(op) && isSync(op) {
			once.Do(func() {
				entered <- struct{}{}
				<-release
			})
		}
		return false // never fails: holds the first sync
	})
	out, err := l.Append(ctx, []*Entry{rawEntry(10)})
	if err != nil || out[0].Status != StatusAppended || out[0].Seq != 10 {
		t.Fatalf("append: %v %+v", err, out)
	}
	<-entered
	s := l.Latest()
	if s.Size() != 10 {
		t.Errorf("published size %d while the checkpoint log's sync is held, want 10", s.Size())
	}
	s.Close()
	img := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: rand.New(rand.NewPCG(3, 4))})
	close(release)
	if got := l.Size(); got != 11 {
		t.Errorf("size after the sync went on: %d, want 11 (a read after an answer sees it)", got)
	}
	ffs.disarm()
	vkey := l.VerifierKey()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// The image lost the log's record of size 11 (never synced), not the
	// batch (its WAL sync came before the answer).
	open := func(n []byte) (proof.Checkpoint, error) { return proof.OpenCheckpoint(n, vkey) }
	if rec, _, _, err := lastCkptRecord(img, img.PathJoin(memDir, ckptLogFile), open); err != nil || rec.c.Size != 10 {
		t.Fatalf("the image's checkpoint log ends at size %d (%v), want 10", rec.c.Size, err)
	}
	checkReopens(t, img, map[string]int64{out[0].ID: 10})
	roots := &signedRoots{t: t, roots: map[int64]string{}}
	roots.seeLog(img, vkey)
	if _, ok := roots.roots[11]; !ok {
		t.Error("reopening did not record the checkpoint of size 11 in the checkpoint log")
	}
}

// TestReadYourAppends: whatever the checkpoint log's sync is doing, a read
// that starts after Append returned sees the appended events.
func TestReadYourAppends(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, Options{}) // a real directory: real syncs
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 8 {
		wg.Go(func() {
			for {
				n := int(next.Add(1))
				if n > 400 {
					return
				}
				out, err := l.Append(ctx, []*Entry{rawEntry(n)})
				if err != nil || out[0].Status != StatusAppended {
					t.Errorf("append %d: %v %+v", n, err, out)
					return
				}
				seq := out[0].Seq
				if size := l.Size(); size <= seq {
					t.Errorf("size %d right after event %d was acknowledged", size, seq)
				}
				if _, err := l.Event(seq, true); err != nil {
					t.Errorf("event %d right after it was acknowledged: %v", seq, err)
				}
				if _, err := l.ProveInclusion(seq, 0); err != nil {
					t.Errorf("inclusion proof of event %d right after it was acknowledged: %v", seq, err)
				}
			}
		})
	}
	wg.Wait()
}
