package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/ledgertest"
	"github.com/proofledger/ledger/scorecard"
)

// The goals of the projections issue, printed beside the figures they
// judge.
const (
	// goalScorecardMS: `scorecard --since 30d` over 1M bundles answers in
	// under 100 ms.
	goalScorecardMS      = 100.0
	goalScorecardBundles = 1_000_000
	// goalReputationMS: the reputation of one agent in under 1 ms.
	goalReputationMS = 1.0
	// goalRebuildEPS: rebuild runs at 200k events per second or more.
	goalRebuildEPS = 200_000.0
	// goalReplayChecks: replay checks above 1M lookups a second at 1M
	// events (the store issue).
	goalReplayChecks = 1_000_000.0
)

const (
	// bundleSpan is how long the bundle ledgers' creation times spread
	// over, so that a 30-day window holds about a sixth of the bundles.
	bundleSpan = 180 * 24 * time.Hour
	// bundleTextScale makes compact bundles (ledgertest.Config.TextScale):
	// their text sections do not affect what a scorecard reads, and
	// compact bundles keep the build of the 1M ledger to minutes.
	bundleTextScale = 0.05
	// window30d is the window of `scorecard --since 30d` and of the
	// reputation figures' --since.
	window30d = 30 * 24 * time.Hour
	// bundleBuildPerCall is the number of bundles per Append call while
	// building a bundle ledger.
	bundleBuildPerCall = 512
	// latencyMinRuns is the least number of timed runs behind a median.
	latencyMinRuns = 5
	// latencyMaxRuns caps the timed runs of one latency measurement.
	latencyMaxRuns = 20_000
)

// readOp is one read a query made through a recordingReader: a point Get,
// or a range of which the query visited the first visited keys.
type readOp struct {
	get          bool
	lower, upper []byte // the key of a Get in lower
	visited      int
}

// recordingReader is an index.Reader that records the reads of the
// queries it serves, so that the limit can make the same reads with a
// bare Pebble iterator.
type recordingReader struct {
	r   index.Reader
	ops []readOp
}

// Get implements index.Reader.
func (rr *recordingReader) Get(key []byte) ([]byte, error) {
	rr.ops = append(rr.ops, readOp{get: true, lower: bytes.Clone(key)})
	return rr.r.Get(key)
}

// Range implements index.Reader.
func (rr *recordingReader) Range(lower, upper []byte, fn func(k, v []byte) (bool, error)) error {
	op := readOp{lower: bytes.Clone(lower), upper: bytes.Clone(upper)}
	err := rr.r.Range(lower, upper, func(k, v []byte) (bool, error) {
		op.visited++
		return fn(k, v)
	})
	rr.ops = append(rr.ops, op)
	return err
}

// record runs q once on r and returns the reads it made.
func record(r index.Reader, q func(index.Reader) error) ([]readOp, error) {
	rr := &recordingReader{r: r}
	if err := q(rr); err != nil {
		return nil, err
	}
	return rr.ops, nil
}

// replayReads makes the reads of ops on a bare Pebble store: each Get
// with db.Get, each range with one iterator (re-bounded per range) that
// reads the keys and values the query visited. It returns the bytes read.
func replayReads(db *pebble.DB, ops []readOp) (_ int, err error) {
	var it *pebble.Iterator
	defer func() {
		if it != nil {
			if cerr := it.Close(); err == nil {
				err = cerr
			}
		}
	}()
	n := 0
	for _, op := range ops {
		if op.get {
			v, closer, err := db.Get(op.lower)
			if errors.Is(err, pebble.ErrNotFound) {
				continue
			}
			if err != nil {
				return 0, err
			}
			n += len(v)
			if err := closer.Close(); err != nil {
				return 0, err
			}
			continue
		}
		if it == nil {
			var err error
			if it, err = db.NewIter(&pebble.IterOptions{LowerBound: op.lower, UpperBound: op.upper}); err != nil {
				return 0, err
			}
		} else {
			it.SetBounds(op.lower, op.upper)
		}
		i := 0
		for ok := it.First(); ok && i < op.visited; ok = it.Next() {
			n += len(it.Key()) + len(it.Value())
			i++
		}
		if err := it.Error(); err != nil {
			return 0, err
		}
		if i != op.visited {
			return 0, fmt.Errorf("bare iterator found %d keys in [%q, %q), the query visited %d", i, op.lower, op.upper, op.visited)
		}
	}
	return n, nil
}

// latency times op: one untimed warm-up call, then timed calls until at
// least latencyMinRuns have run and d has passed (at most latencyMaxRuns).
// It returns the median duration and the number of timed calls.
func latency(ctx context.Context, d time.Duration, op func() error) (time.Duration, int, error) {
	if err := op(); err != nil {
		return 0, 0, err
	}
	var runs []time.Duration
	start := time.Now()
	for len(runs) < latencyMinRuns || time.Since(start) < d && len(runs) < latencyMaxRuns {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		t := time.Now()
		if err := op(); err != nil {
			return 0, 0, err
		}
		runs = append(runs, time.Since(t))
	}
	slices.Sort(runs)
	return runs[len(runs)/2], len(runs), nil
}

// countOf writes "1 read", "3 reads".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// projQuery is one query of the projections as a CLI command runs it once
// the ledger is open.
type projQuery struct {
	name string // figure name
	run  func(index.Reader) error
	goal float64 // the goal in ms, 0 for none
	note string
	cold bool // also measure the whole command path: open the ledger, query, close

	ops               []readOp // what run reads, recorded on the first call
	warm, bare        time.Duration
	warmRuns          int
	coldRun, coldBare time.Duration
}

// queryOptions are the options the query commands open a ledger with
// (openLedger with readOnly, through admit.Open): read-only, with the
// index projections.
func (b *bench) queryOptions() ledger.Options {
	return ledger.Options{Logger: b.log, ReadOnly: true, Projectors: []ledger.Projector{index.New()}}
}

// openQuery opens the ledger in dir as the query commands do (openQuery):
// read-only, refusing stale projections.
func (b *bench) openQuery(dir string) (*admit.Ledger, error) {
	l, err := admit.Open(dir, b.queryOptions())
	if err != nil {
		return nil, err
	}
	if l.Stale() {
		_ = l.Close() // read-only, and refused: nothing to lose
		return nil, ledger.ErrStale
	}
	return l, nil
}

// measureQueries measures each query on the closed ledger in dir, as the
// command runs it once the ledger is open; then its limit, the same reads
// on a limit store holding a copy of the ledger's projections; then, for
// the queries marked cold, the whole command path with opening and
// closing the ledger, and its limit, with opening and closing the copy.
func (b *bench) measureQueries(ctx context.Context, dir string, qs []*projQuery) error {
	limitDir, err := freshDir(filepath.Join(b.work, "limit-projections"))
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(limitDir) }() // best effort: a scratch store in the work directory
	if err := b.openQueries(ctx, dir, limitDir, qs); err != nil {
		return err
	}
	if err := b.bareQueries(ctx, limitDir, qs); err != nil {
		return err
	}
	for _, q := range qs {
		if q.cold {
			if err := b.coldQuery(ctx, dir, limitDir, q); err != nil {
				return fmt.Errorf("%s (open): %w", q.name, err)
			}
		}
	}
	return nil
}

// openQueries records each query's reads, copies the projections into a
// limit store at limitDir, and measures each query on the open ledger: as
// openQuery and the command, check the projections, take a snapshot,
// query, release the snapshot.
func (b *bench) openQueries(ctx context.Context, dir, limitDir string, qs []*projQuery) (err error) {
	l, err := b.openQuery(dir)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := l.Close(); err == nil {
			err = cerr
		}
	}()
	snap := l.Snapshot()
	for _, q := range qs {
		if q.ops, err = record(snap, q.run); err != nil {
			snap.Close()
			return fmt.Errorf("%s: %w", q.name, err)
		}
	}
	b.progress.Info("copying the projections to a limit store", "events", snap.Size())
	err = b.fillProjectionStore(ctx, snap, limitDir)
	if cerr := snap.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	for _, q := range qs {
		b.progress.Info("measuring", "query", q.name)
		q.warm, q.warmRuns, err = latency(ctx, b.sizes.Measure/2, func() error {
			if l.Stale() {
				return ledger.ErrStale
			}
			s := l.Snapshot()
			err := q.run(s)
			if cerr := s.Close(); err == nil {
				err = cerr
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", q.name, err)
		}
	}
	return nil
}

// fillProjectionStore creates the limit store of the projection queries at
// dir: a settled copy of every projection key snap holds.
func (b *bench) fillProjectionStore(ctx context.Context, snap *ledger.Snapshot, dir string) (err error) {
	db, err := b.openLimitStore(dir, false)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = copyProjections(ctx, snap, db)
	return err
}

// bareQueries measures each query's limit: its recorded reads made on the
// limit store at limitDir, opened once.
func (b *bench) bareQueries(ctx context.Context, limitDir string, qs []*projQuery) (err error) {
	db, err := b.openLimitStore(limitDir, true)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	for _, q := range qs {
		b.progress.Info("measuring the bare reads", "query", q.name, "reads", len(q.ops))
		if q.bare, _, err = latency(ctx, b.sizes.Measure/2, func() error { _, err := replayReads(db, q.ops); return err }); err != nil {
			return fmt.Errorf("%s limit: %w", q.name, err)
		}
	}
	return nil
}

// coldQuery measures the command's whole path but process start and
// printing: open the ledger read-only, check the projections, snapshot,
// query, close; and its limit: open the limit store at limitDir
// read-only, make the same reads, close it.
func (b *bench) coldQuery(ctx context.Context, dir, limitDir string, q *projQuery) error {
	b.progress.Info("measuring the whole command path", "query", q.name)
	var err error
	q.coldRun, _, err = latency(ctx, b.sizes.Measure/2, func() error {
		l, err := b.openQuery(dir)
		if err != nil {
			return err
		}
		s := l.Snapshot()
		err = q.run(s)
		s.Close()
		if cerr := l.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		return err
	}
	q.coldBare, _, err = latency(ctx, b.sizes.Measure/2, func() error {
		db, err := b.openLimitStore(limitDir, true)
		if err != nil {
			return err
		}
		_, err = replayReads(db, q.ops)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("limit: %w", err)
	}
	return nil
}

// addQuery adds the figures of a measured query.
func (b *bench) addQuery(q *projQuery) {
	reads := 0
	for _, op := range q.ops {
		if op.get {
			reads++
		} else {
			reads += op.visited
		}
	}
	goalName := ""
	if q.goal > 0 {
		goalName = fmt.Sprintf("under %g ms (issue)", q.goal)
	}
	b.add(figure{Name: q.name, Value: ms(q.warm), Unit: "ms", Limit: ms(q.bare), Better: "lower",
		LimitName: fmt.Sprintf("bare pebble: the same %d keys (%s)", reads, countOf(len(q.ops), "read")),
		Goal:      q.goal, GoalName: goalName,
		Note: fmt.Sprintf("median of %d; %s; snapshot, query and release on the open ledger; the limit reads a settled copy of the projections", q.warmRuns, q.note)})
	if q.cold {
		b.add(figure{Name: q.name + ".open", Value: ms(q.coldRun), Unit: "ms", Limit: ms(q.coldBare), Better: "lower",
			LimitName: "pebble.Open read-only + the same keys + Close",
			Goal:      q.goal, GoalName: goalName,
			Note: "the command's whole path but process start and printing: admit.Open read-only, Stale, Snapshot, the query, Close; " + q.note})
	}
}

// projections builds a witness-bundle ledger of each --bundles size
// through the real append path and measures the scorecard of the last 30
// days and the trends over it, then the rebuild rate on the biggest.
func (b *bench) projections(ctx context.Context) error {
	for i, n := range b.sizes.Bundles {
		dir, err := freshDir(filepath.Join(b.work, fmt.Sprintf("bundles-%d", n)))
		if err != nil {
			return fmt.Errorf("%d bundles: %w", n, err)
		}
		err = b.bundleLedger(ctx, dir, n, i == len(b.sizes.Bundles)-1)
		if rerr := os.RemoveAll(dir); err == nil {
			err = rerr
		}
		if err != nil {
			return fmt.Errorf("%d bundles: %w", n, err)
		}
	}
	return nil
}

// bundleConfig is the corpus of a bundle ledger of n bundles.
func (b *bench) bundleConfig(n int) ledgertest.Config {
	return ledgertest.Config{Seed: b.sizes.Seed + 2, Bundles: n, Span: bundleSpan, TextScale: bundleTextScale}
}

// bundleLedger builds one bundle ledger, measures its queries and, when
// rebuild is set, its rebuild rate.
func (b *bench) bundleLedger(ctx context.Context, dir string, n int, rebuild bool) error {
	cfg := b.bundleConfig(n)
	if err := b.buildBundles(ctx, dir, cfg); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	start := ledgertest.DefaultStart()
	now := start.Add(bundleSpan).Add(time.Hour) // so that the window starts mid-day, as --since 30d does
	window := scorecard.Window{Since: now.Add(-window30d), Filter: index.AnyBundle}
	var rep *scorecard.Report
	at := fmt.Sprintf("bundles=%d", n)
	sc := &projQuery{name: "scorecard.since_30d." + at, cold: true, run: func(r index.Reader) error {
		var err error
		rep, err = scorecard.Build(r, window, scorecard.DefaultCriteria())
		return err
	}}
	if n >= goalScorecardBundles {
		sc.goal = goalScorecardMS
	}
	qs := []*projQuery{sc}
	periods := map[scorecard.Granularity]int{}
	for _, g := range []scorecard.Granularity{scorecard.Day, scorecard.Week, scorecard.Month} {
		qs = append(qs, &projQuery{name: fmt.Sprintf("trend.%s.%s", g, at),
			note: fmt.Sprintf("scorecard.Trend by %s over the whole %d-day span", g, int(bundleSpan.Hours()/24)),
			run: func(r index.Reader) error {
				rows, _, err := scorecard.Trend(r, g, scorecard.Window{Filter: index.AnyBundle})
				periods[g] = len(rows)
				return err
			}})
	}
	if err := b.measureQueries(ctx, dir, qs); err != nil {
		return err
	}
	if rep == nil || rep.Metrics.TotalTasks == 0 {
		return fmt.Errorf("the 30-day scorecard of %d bundles is empty", n)
	}
	sc.note = fmt.Sprintf("scorecard.Build of %d bundles created in the 30 days before %s: %d day rollups, %d edge-day bundles read",
		rep.Metrics.TotalTasks, formatTime(now), rep.DaysRead, rep.BundlesRead)
	for _, g := range []scorecard.Granularity{scorecard.Day, scorecard.Week, scorecard.Month} {
		q := qs[1+int(g)]
		q.note += fmt.Sprintf(", %d periods", periods[g])
	}
	for _, q := range qs {
		b.addQuery(q)
	}
	b.fact("scorecard.since_30d."+at+".bundles_in_window", float64(rep.Metrics.TotalTasks), "bundles")
	if !rebuild {
		return nil
	}
	return b.rebuildRate(ctx, dir, n)
}

// buildBundles appends the corpus of cfg to a fresh ledger through
// admit.Ledger.Append with the index projections, in calls of
// bundleBuildPerCall bundles from max(4, GOMAXPROCS) appender goroutines,
// so that some calls are verified while others wait for their commit.
// Each task's bundles go through one appender, in corpus order, so that
// retries and regressions are recorded as the corpus made them.
func (b *bench) buildBundles(ctx context.Context, dir string, cfg ledgertest.Config) error {
	l, err := b.initLedger(dir, "bench.proofledger.local/bundles")
	if err != nil {
		return err
	}
	opts := admit.Options{HMACKeys: cfg.Keys().HMACKeys()}
	appenders := max(4, runtime.GOMAXPROCS(0)) // calls in flight while others wait for their fsync
	lanes := make([]chan []admit.Submission, appenders)
	for i := range lanes {
		lanes[i] = make(chan []admit.Submission, 2)
	}
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	fail := func(err error) { once.Do(func() { firstErr = err }) }
	var done atomic.Int64
	for _, ch := range lanes {
		wg.Go(func() {
			failed := false
			for subs := range ch {
				if failed {
					continue // drain so the generator never blocks
				}
				if err := appendCounted(ctx, l, subs, opts, &done); err != nil {
					fail(err)
					failed = true
				}
			}
		})
	}
	b.progress.Info("building a bundle ledger", "bundles", cfg.Bundles, "text_scale", cfg.TextScale, "appenders", appenders)
	start, last := time.Now(), time.Now()
	pending := make([][]admit.Submission, appenders)
	var raw int64
	gerr := ledgertest.StreamContext(ctx, cfg, func(d ledgertest.Doc) error {
		h := fnv.New32a()
		h.Write([]byte(d.Subject))
		k := int(h.Sum32() % uint32(appenders))
		pending[k] = append(pending[k], admit.Submission{Name: d.Name, Data: d.Data, Arrival: d.Arrival})
		raw += int64(len(d.Data))
		if len(pending[k]) == bundleBuildPerCall {
			select {
			case lanes[k] <- pending[k]:
			case <-ctx.Done():
				return ctx.Err()
			}
			pending[k] = nil
		}
		if time.Since(last) > 15*time.Second {
			last = time.Now()
			b.progress.Info("building", "bundles", done.Load(), "of", cfg.Bundles, "events_per_s", int(float64(done.Load())/time.Since(start).Seconds()))
		}
		return nil
	})
	for k, ch := range lanes {
		if gerr == nil && len(pending[k]) > 0 {
			ch <- pending[k]
		}
		close(ch)
	}
	wg.Wait()
	elapsed := time.Since(start)
	cerr := l.Close()
	switch {
	case gerr != nil:
		return gerr
	case firstErr != nil:
		return firstErr
	case cerr != nil:
		return cerr
	case done.Load() != int64(cfg.Bundles):
		return fmt.Errorf("appended %d bundles, want %d", done.Load(), cfg.Bundles)
	}
	at := fmt.Sprintf("bundles=%d", cfg.Bundles)
	b.fact("build."+at, float64(cfg.Bundles)/elapsed.Seconds(), "events/s")
	b.fact("build."+at+".seconds", elapsed.Seconds(), "s")
	b.fact("build."+at+".raw_bytes_per_event", float64(raw)/float64(cfg.Bundles), "bytes/event")
	return nil
}

// rebuildGCPercent is the garbage collector's target `ledger rebuild` sets
// while a rebuild runs (cmd/ledger/rebuildcmd.go: GOGC 400 instead of 100,
// unless GOGC is set); the rebuild figure is measured under the same
// setting.
const rebuildGCPercent = 400

// withRebuildGC runs fn with the rebuild's GC target, unless GOGC is set.
func withRebuildGC(fn func() error) error {
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(rebuildGCPercent))
	}
	return fn()
}

// rebuildRate measures ledger.Rebuild of the ledger in dir (the fastest of
// sizes.Trials rebuilds), compacted first (the build left compactions
// pending, which would run during the rebuild), against a bare scan of the
// same leaves, copied into a settled limit store of their own.
func (b *bench) rebuildRate(ctx context.Context, dir string, n int) (err error) {
	scan, err := b.leafScan(ctx, dir, n)
	if err != nil {
		return err
	}
	l, err := b.openLedger(dir)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := l.Close(); err == nil {
			err = cerr
		}
	}()
	compactStart := time.Now()
	if err := l.Compact(ctx); err != nil {
		return err
	}
	b.fact(fmt.Sprintf("rebuild.events=%d.compaction_seconds", n), time.Since(compactStart).Seconds(), "s")
	var best, slowest time.Duration
	for t := range b.sizes.Trials {
		b.progress.Info("rebuilding", "events", n, "trial", t+1)
		start := time.Now()
		if err := withRebuildGC(func() error { return l.Rebuild(ctx, nil) }); err != nil {
			return err
		}
		d := time.Since(start)
		if t == 0 || d < best {
			best = d
		}
		slowest = max(slowest, d)
	}
	name := fmt.Sprintf("rebuild.events=%d", n)
	b.add(figure{Name: name, Value: float64(n) / best.Seconds(), Unit: "events/s", Limit: float64(n) / scan.Seconds(),
		LimitName: "bare pebble iterator over the same leaves", Goal: goalRebuildEPS, GoalName: fmt.Sprintf("at least %.0fk events/s (issue)", goalRebuildEPS/1000),
		Note: fmt.Sprintf("ledger.Rebuild of %d witness bundles, fastest of %d: %.2f s, on the compacted ledger (the limit reads the same leaves from a settled store of its own, decodes nothing, writes nothing); GC target %d as in ledger rebuild", n, b.sizes.Trials, best.Seconds(), rebuildGCPercent)})
	if b.sizes.Trials > 1 {
		b.fact(name+".slowest_trial", float64(n)/slowest.Seconds(), "events/s")
	}
	return nil
}

// leafScan copies the leaves of the ledger in dir (opened read-only, so
// that it compacts nothing meanwhile) into a limit store, settles it, and
// returns the fastest of sizes.Trials bare scans of them. It removes the
// store.
func (b *bench) leafScan(ctx context.Context, dir string, n int) (scan time.Duration, err error) {
	storeDir, err := freshDir(filepath.Join(b.work, "limit-leaves"))
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(storeDir) }() // best effort: a scratch store in the work directory
	db, err := b.openLimitStore(storeDir, false)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	l, err := b.openQuery(dir)
	if err != nil {
		return 0, err
	}
	b.progress.Info("copying the leaves to a limit store", "events", n)
	start := time.Now()
	err = copyLeaves(ctx, l.Ledger, db)
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	b.fact(fmt.Sprintf("rebuild.events=%d.limit_store_seconds", n), time.Since(start).Seconds(), "s")
	b.progress.Info("scanning the leaves with a bare iterator", "events", n)
	for range b.sizes.Trials {
		d, err := scanLeaves(ctx, db, n)
		if err != nil {
			return 0, err
		}
		if scan == 0 || d < scan {
			scan = d
		}
	}
	return scan, nil
}

// scanLeaves reads every leaf of a leaf limit store with one bare
// iterator and returns the time it took.
func scanLeaves(ctx context.Context, db *pebble.DB, want int) (_ time.Duration, err error) {
	start := time.Now()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagLeaf}, UpperBound: []byte{tagLeaf + 1}})
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	n, size := 0, 0
	for ok := it.First(); ok; ok = it.Next() {
		if n%65536 == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		size += len(it.Value())
		n++
	}
	if err := it.Error(); err != nil {
		return 0, err
	}
	d := time.Since(start)
	if n != want || size == 0 {
		return 0, fmt.Errorf("bare scan found %d leaves, want %d", n, want)
	}
	return d, nil
}

// reputation measures, on the big receipts ledger in dir, the reputation
// of its busiest agent (all time and since 30 days) and the ranking of
// every agent, each against the same reads on the bare store. now is the
// end of the corpus's time span.
func (b *bench) reputation(ctx context.Context, dir string, now time.Time) error {
	l, err := b.openQuery(dir)
	if err != nil {
		return err
	}
	snap := l.Snapshot()
	agents, err := index.Agents(snap, time.Time{}, now)
	snap.Close()
	cerr := l.Close()
	if err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	if len(agents) == 0 {
		return errors.New("reputation: the big ledger has no agents")
	}
	busiest := agents[0]
	for _, a := range agents {
		if a.Receipts() > busiest.Receipts() {
			busiest = a
		}
	}
	since := now.Add(-window30d)
	size := fmt.Sprintf("%d receipts of %d agents", b.sizes.Events, len(agents))
	agent := func(since time.Time) func(index.Reader) error {
		return func(r index.Reader) error {
			rep, err := index.Agent(r, busiest.Subject, since)
			if err != nil {
				return err
			}
			if rep.Receipts() == 0 {
				return fmt.Errorf("agent %s has no receipts", busiest.Subject)
			}
			_ = rep.Score(now)
			_ = rep.Confidence(now)
			return nil
		}
	}
	ranking := func(since time.Time) func(index.Reader) error {
		return func(r index.Reader) error {
			reps, err := index.Agents(r, since, now)
			if err == nil && len(reps) == 0 {
				err = errors.New("empty ranking")
			}
			return err
		}
	}
	qs := []*projQuery{
		{name: "reputation.agent", run: agent(time.Time{}), goal: goalReputationMS,
			note: fmt.Sprintf("index.Agent of the busiest agent (%d receipts), all time, score and confidence; %s", busiest.Receipts(), size)},
		{name: "reputation.agent.since_30d", run: agent(since), goal: goalReputationMS,
			note: fmt.Sprintf("index.Agent of the busiest agent, receipts of the 30 days before %s (per-day aggregates); %s", formatTime(now), size)},
		{name: "reputation.ranking", run: ranking(time.Time{}),
			note: "index.Agents: every agent ranked, all time; " + size},
		{name: "reputation.ranking.since_30d", run: ranking(since),
			note: "index.Agents: every agent ranked on the receipts of the last 30 days; " + size},
	}
	if err := b.measureQueries(ctx, dir, qs); err != nil {
		return err
	}
	for _, q := range qs {
		b.addQuery(q)
	}
	return nil
}
