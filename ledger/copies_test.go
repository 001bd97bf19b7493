package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// copyDirs lists copies/ by kind: complete generations, and leftovers
// (tmp- and .del directories).
func copyDirs(t testing.TB, fs vfs.FS, dir string) (gens []int64, leftovers []string) {
	t.Helper()
	names, err := fs.List(fs.PathJoin(dir, copiesDir))
	if err != nil {
		if ok, _ := exists(fs, fs.PathJoin(dir, copiesDir)); !ok {
			return nil, nil
		}
		t.Fatal(err)
	}
	for _, n := range names {
		g, complete, ok := copyGen(n)
		switch {
		case ok && complete:
			gens = append(gens, g)
		default:
			leftovers = append(leftovers, n)
		}
	}
	slices.Sort(gens)
	return gens, leftovers
}

// checkReader opens dir read-only and requires it to serve exactly n
// events, auditing clean.
func checkReader(t *testing.T, dir string, opts Options, n int64) Source {
	t.Helper()
	opts.ReadOnly = true
	r, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
	defer closeT(t, r)
	if r.Size() != n {
		t.Errorf("reader serves %d events, want %d (source %+v)", r.Size(), n, r.Source())
	}
	if rep, err := r.Audit(context.Background(), AuditOptions{}); err != nil || !rep.OK() {
		t.Errorf("reader's audit (source %+v): %v %v", r.Source(), err, rep.Problems)
	}
	return r.Source()
}

// TestReadCopyFaults fails one operation of the copy a writer makes at
// Close: Close still succeeds (the events are durable and acknowledged),
// no half-made copy is ever shown to readers, who read the store instead,
// and the next writer's copy leaves nothing of the failed one behind.
func TestReadCopyFaults(t *testing.T) {
	rows := []struct {
		name  string
		match func(errorfs.Op) bool
		// renamed: the failure comes after the copy was renamed into
		// place (complete): readers may read it.
		renamed bool
	}{
		// Pebble copies a table it cannot link: both fail.
		{name: "linking the tables", match: func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpLink || op.Kind == errorfs.OpCreate && strings.Contains(op.Path, "/copies/tmp-") && strings.HasSuffix(op.Path, ".sst")
		}},
		{name: "copying the MANIFEST", match: func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpCreate && strings.Contains(op.Path, "/copies/tmp-") && strings.Contains(op.Path, "MANIFEST")
		}},
		{name: "writing copy.json", match: func(op errorfs.Op) bool { return strings.HasSuffix(op.Path, "/"+copyInfoFile+".tmp") }},
		{name: "creating the pin", match: func(op errorfs.Op) bool {
			return strings.HasSuffix(op.Path, "/"+copyPinFile) && op.Kind == errorfs.OpCreate
		}},
		{name: "renaming into place", match: func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpRename && strings.Contains(op.Path, "/copies/tmp-")
		}},
		{name: "syncing copies/ after the rename", renamed: true, match: func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpFileSync && op.Path == memDir+"/"+copiesDir
		}},
		{name: "listing copies/", match: func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpList && op.Path == memDir+"/"+copiesDir
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			ffs := newFaultFS(vfs.NewMem())
			lk := NewMemLocker()
			if err := Init(memDir, InitOptions{Origin: "copy.faults", Key: testKey(9), FS: ffs.fs, Locker: lk}); err != nil {
				t.Fatal(err)
			}
			opts := Options{FS: ffs.fs, Locker: lk}
			l := openT(t, memDir, opts)
			appendRaw(t, l, 0, 30)
			closeT(t, l) // copy 1
			before, _ := copyDirs(t, ffs.mem, memDir)
			l = openT(t, memDir, opts)
			appendRaw(t, l, 30, 20)
			ffs.arm(row.match)
			err := l.Close()
			ffs.disarm()
			if err != nil {
				t.Fatalf("Close with a failing copy: %v", err)
			}
			if ffs.hits.Load() == 0 {
				t.Fatal("the fault was never hit")
			}
			gens, _ := copyDirs(t, ffs.mem, memDir)
			if !row.renamed && !slices.Equal(gens, before) {
				t.Errorf("complete copies %v after the failed copy, want %v", gens, before)
			}
			src := checkReader(t, memDir, opts, 50)
			if !row.renamed && src.Copy {
				t.Errorf("reader after the failed copy reads copy %d, want the store", src.Gen)
			}
			l = openT(t, memDir, opts)
			appendRaw(t, l, 50, 1)
			closeT(t, l)
			gens, left := copyDirs(t, ffs.mem, memDir)
			if len(gens) != 1 || len(left) != 0 {
				t.Errorf("after the next writer: copies %v, leftovers %v; want one copy, nothing left", gens, left)
			}
			if src := checkReader(t, memDir, opts, 51); !src.Copy {
				t.Errorf("reader after the next writer: source %+v, want its copy", src)
			}
		})
	}
}

// TestCrashWhileCopying takes crash images (dropping some unsynced
// writes) at every step of making a read copy and of removing the old
// one, as if the writer were killed there: each image opens for readers,
// who see every acknowledged event and never a half-made copy, and for
// the next writer, whose copy leaves nothing of the interrupted one.
func TestCrashWhileCopying(t *testing.T) {
	mem := vfs.NewCrashableMem()
	lk := NewMemLocker()
	if err := Init(memDir, InitOptions{Origin: "copy.crash", Key: testKey(9), FS: mem, Locker: lk}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	type image struct {
		step string
		fs   *vfs.MemFS
	}
	var images []image
	h := &hooks{copyStep: func(step string) error {
		for range 2 {
			images = append(images, image{step, mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rand.New(rand.NewPCG(uint64(len(images)), 9))})})
		}
		return nil
	}}
	l := openT(t, memDir, Options{FS: mem, Locker: lk})
	appendRaw(t, l, 0, 40)
	closeT(t, l) // copy 1, no hook yet
	l = openT(t, memDir, Options{FS: mem, Locker: lk, hooks: h})
	appendRaw(t, l, 40, 25)
	closeT(t, l) // copy 2 and the removal of copy 1, with images at each step
	steps := map[string]bool{}
	for _, img := range images {
		steps[img.step] = true
	}
	for _, s := range []string{"start", "store", "rename", "gc", "removing"} {
		if !steps[s] {
			t.Errorf("no crash image at step %q", s)
		}
	}
	for i, img := range images {
		t.Run(fmt.Sprintf("%d %s", i, img.step), func(t *testing.T) {
			opts := Options{FS: img.fs, Locker: NewMemLocker()}
			checkReader(t, memDir, opts, 65)
			w := openT(t, memDir, opts)
			appendRaw(t, w, 1000, 1)
			closeT(t, w)
			gens, left := copyDirs(t, img.fs, memDir)
			if len(gens) != 1 || len(left) != 0 {
				t.Errorf("after the next writer: copies %v, leftovers %v", gens, left)
			}
			if src := checkReader(t, memDir, opts, 66); !src.Copy || src.Behind() {
				t.Errorf("reader after the next writer: source %+v", src)
			}
		})
	}
}

// TestReaderDuringGC: a reader opening while the writer removes old
// copies gets the newest copy; a pinned copy outlives newer ones until its
// reader closes; readers opening and closing without pause while a writer
// appends, makes copies and removes old ones never fail, never go back in
// time and never serve more than was acknowledged.
func TestReaderDuringGC(t *testing.T) {
	ctx := context.Background()
	dir := initDir(t, 5)
	var atGC func()
	w := openT(t, dir, Options{hooks: &hooks{copyStep: func(step string) error {
		if step == "gc" && atGC != nil {
			atGC()
		}
		return nil
	}}})
	defer func() { _ = w.Close() }() // closed below; a failed test closes it here
	appendRaw(t, w, 5, 5)
	atGC = func() {
		r, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			t.Errorf("reader during GC: %v", err)
			return
		}
		defer closeT(t, r)
		if s := r.Source(); !s.Copy || s.Size != 10 {
			t.Errorf("reader during GC reads %+v, want the new copy of size 10", s)
		}
	}
	if err := w.MakeReadCopy(ctx); err != nil {
		t.Fatal(err)
	}
	atGC = nil
	if err := w.MakeReadCopy(ctx); err != nil { // nothing changed: no copy
		t.Fatal(err)
	}
	if gens, _ := copyDirs(t, vfs.Default, dir); len(gens) != 1 {
		t.Errorf("copies %v after a MakeReadCopy with nothing new, want one", gens)
	}

	var acked atomic.Int64
	acked.Store(10)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(0)
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := Open(dir, Options{ReadOnly: true})
				if err != nil {
					t.Errorf("reader: %v", err)
					return
				}
				n := r.Size()
				if n < last || n > acked.Load() {
					t.Errorf("reader serves %d events after %d, %d acknowledged", n, last, acked.Load())
				}
				last = n
				if _, err := r.Event(n-1, true); err != nil {
					t.Errorf("reader: event %d: %v", n-1, err)
				}
				if err := r.Close(); err != nil {
					t.Errorf("reader close: %v", err)
				}
			}
		}()
	}
	for i := range 15 {
		appendRaw(t, w, 10+i, 1)
		acked.Add(1)
		if err := w.MakeReadCopy(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	closeT(t, w)
	if gens, left := copyDirs(t, vfs.Default, dir); len(gens) != 1 || len(left) != 0 {
		t.Errorf("after the writer closed: copies %v, leftovers %v", gens, left)
	}
}

// TestCopyDamage: a read copy is checked against the checkpoint log as
// the store is: one ahead of the log, or whose copy.json or tree
// disagrees with it, is damage; data altered in a copy is never served.
func TestCopyDamage(t *testing.T) {
	ctx := context.Background()
	t.Run("ahead of the checkpoint log", func(t *testing.T) {
		dir := initDir(t, 0)
		l := openT(t, dir, Options{})
		appendRaw(t, l, 0, 3)
		logAt3, err := os.ReadFile(filepath.Join(dir, ckptLogFile))
		if err != nil {
			t.Fatal(err)
		}
		appendRaw(t, l, 3, 3)
		closeT(t, l)
		// The checkpoint log loses its last records; a writer holds the
		// lock, so a reader reads the copy (size 6) instead of the store.
		if err := os.WriteFile(filepath.Join(dir, ckptLogFile), logAt3, 0o644); err != nil {
			t.Fatal(err)
		}
		wl, err := LockWriter(ctx, dir, LockOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = wl.Unlock() }()
		_, err = Open(dir, Options{ReadOnly: true})
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "ahead") {
			t.Errorf("reader of a copy ahead of the checkpoint log: %v", err)
		}
	})
	t.Run("copy.json root", func(t *testing.T) {
		dir := initDir(t, 4)
		gens, _ := copyDirs(t, vfs.Default, dir)
		p := filepath.Join(dir, copiesDir, fmt.Sprint(gens[0]), copyInfoFile)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Replace(b, []byte(`"root":"`), []byte(`"root":"A`), 1)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "root") {
			t.Errorf("reader of a copy whose copy.json disagrees: %v", err)
		}
	})
	t.Run("altered leaf", func(t *testing.T) {
		dir := initDir(t, 4)
		gens, _ := copyDirs(t, vfs.Default, dir)
		store := filepath.Join(dir, copiesDir, fmt.Sprint(gens[0]), copyStoreDir)
		po := PebbleOptions(nil)
		po.ErrorIfNotExists = true
		db, err := pebble.Open(store, po)
		if err != nil {
			t.Fatal(err)
		}
		v, closer, err := db.Get(eventKey(2))
		if err != nil {
			t.Fatal(err)
		}
		leaf := bytes.Replace(v, []byte(`"subject":"subject-2"`), []byte(`"subject":"subject-9"`), 1)
		_ = closer.Close()
		if err := db.Set(eventKey(2), leaf, pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		r := openT(t, dir, Options{ReadOnly: true})
		defer closeT(t, r)
		if !r.Source().Copy {
			t.Fatalf("source %+v, want the altered copy", r.Source())
		}
		if _, err := r.Event(2, false); !errors.Is(err, ErrCorrupt) {
			t.Errorf("event 2 altered in the copy: %v, want ErrCorrupt", err)
		}
	})
}

// TestNoLockerOnMemFS: a ledger on a file system other than the
// operating system's needs a Locker shared by its openers.
func TestNoLockerOnMemFS(t *testing.T) {
	mem := vfs.NewMem()
	if err := Init(memDir, InitOptions{FS: mem}); !errors.Is(err, errNoLocker) {
		t.Errorf("Init on a MemFS without a Locker: %v", err)
	}
}
