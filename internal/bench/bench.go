package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// Description is the help text of ledger-bench: what every figure and its
// limit measure.
const Description = "Generates a deterministic corpus (package ledger/ledgertest) and measures, in one run:\n" +
	"  cpu.*          bare Ed25519 verifications and HMAC-SHA256 on all cores (limit: one core x GOMAXPROCS)\n" +
	"  disk.*         raw Pebble synced batches of the same bytes and batch sizes as the ledger's group\n" +
	"                 commits, read from its checkpoints (limit: the same batches written to a\n" +
	"                 preallocated file, each fdatasynced)\n" +
	"  ingest.*       durable admit.Ledger.Append per kind (index projections on, as `ledger append` runs),\n" +
	"                 1 appender and --appenders concurrent ones, one document per call (limit: the\n" +
	"                 lower of the CPU limit scaled to the verifications each document needs, measured\n" +
	"                 around the run, and the disk limit)\n" +
	"  build.*        building the --events ledger of receipts through the real append path\n" +
	"  replay.*       at that size: .check is ledger.Seen, the identity point lookup of an append\n" +
	"                 (limit: raw Pebble Gets of the same receipts' identity keys); .lookup is ledger.Lookup\n" +
	"                 and .append an Append of a stored document (limit: raw Gets of random present keys).\n" +
	"                 The limits read a bare store of their own holding, for every event of the ledger\n" +
	"                 (read with ledger.Scan), an identity entry (kind and id -> seq and digest), a digest\n" +
	"                 entry, the leaf, the document and the tree hashes, flushed and fully compacted; the\n" +
	"                 ledger's own store is never opened\n" +
	"  proof.*        ledger.ProveInclusion and InclusionProof.Verify at that size (limit: bare\n" +
	"                 tlog.ProveRecord / CheckRecord on an in-memory hash store of the same size)\n" +
	"  disk.bytes_per_event  the ledger's directory size after ledger.Compact and Close (limit: raw\n" +
	"                 document bytes)\n" +
	"  audit.*        audit.Run (package ledger/audit: every signature verified, the tree, checkpoints,\n" +
	"                 index entries and projections recomputed and compared) of that ledger, compacted,\n" +
	"                 in events/s (limit: bare Ed25519 verifications on all cores, measured right after\n" +
	"                 each audit for as long as it took)\n" +
	"  reputation.*   index.Agent of one agent (all time, --since 30d) and index.Agents on the big ledger\n" +
	"                 (limit: the same keys read from a bare store of its own holding a copy of the ledger's\n" +
	"                 projections, the x/ keyspace read through a snapshot, flushed and fully compacted)\n" +
	"  scorecard.*    `scorecard --since 30d` on witness-bundle ledgers of each --bundles size, spread over\n" +
	"                 180 days, built through the real append path (limit: the same rollup and edge keys\n" +
	"                 read with a bare Pebble iterator from such a copy of the projections; .open adds\n" +
	"                 opening the ledger, as the command does, and the limit opening the copy)\n" +
	"  trend.*        the trend by day, week and month over the whole span (limit: the same keys, bare)\n" +
	"  rebuild.*      ledger.Rebuild of the biggest bundle ledger, compacted first (ledger.Compact), under\n" +
	"                 the GC target `ledger rebuild` sets (limit: a bare\n" +
	"                 iterator over the same leaves, read with ledger.Scan and written to a store of its\n" +
	"                 own, flushed and fully compacted)\n" +
	"  verify.*       .test: ms per VRF test decided by verifier/vrfrun one at a time in a pooled sandbox,\n" +
	"                 .sandbox_overhead: what the sandbox adds to it, .throughput.jobs=N: tests/s of a suite\n" +
	"                 of 100 quick python tests at N = GOMAXPROCS, as `ledger run vrf --jobs N` (limit: the\n" +
	"                 same tests by the same verifier with the same python3 started bare, os/exec, in turn\n" +
	"                 with the sandboxed runs; not measured without python3 or user namespaces)\n" +
	"Figures the issues set goals for show them, met or not: ingest of receipts with 64 appenders at\n" +
	"70% of the bare Ed25519 rate, of bundles at 50k/s (Tessera's POSIX log), 1M replay checks/s at 1M\n" +
	"events, 100 ms for the 30-day scorecard of 1M bundles, 1 ms for one agent's reputation, 200k\n" +
	"events/s for rebuild, 10 ms per test for the sandbox, the audit at 70% of the bare Ed25519 rate.\n\n" +
	"Machines are shared and noisy: read the ratios, not the absolute values. Progress goes to stderr."

// ErrUsage is wrapped by the errors about options a run cannot use (a
// size out of range, an unusable work directory): the caller's mistake,
// which a command reports as a usage error.
var ErrUsage = errors.New("bad bench option")

// Options configure a run: they are the flags of ledger-bench. Start from
// DefaultOptions.
type Options struct {
	// Events is the size of the big ledger of receipts behind the build,
	// replay, proof, reputation and bytes-on-disk figures: at least 16.
	Events int
	// Bundles are the sizes of the witness-bundle ledgers behind the
	// scorecard, trend and rebuild figures, each at least 100 (see
	// ParseBundleSizes); the rebuild figure uses the biggest.
	Bundles []int
	// Quick makes every measurement and ingest run short, so that a run
	// at small sizes takes seconds.
	Quick bool
	// JSONPath, when set, is where the report is also written as JSON.
	JSONPath string
	// Dir is the work directory, created when missing; empty means a
	// temporary directory, removed afterwards. Every ledger and store a
	// run makes in it is removed before Run returns.
	Dir string
	// Appenders is the number of concurrent appenders of the concurrent
	// ingest runs and of the big ledger's build: at least 1.
	Appenders int
	// Seed selects the corpora.
	Seed uint64
	// Logger receives the ledgers' and Pebble's messages; nil discards
	// them. Progress goes to Run's stderr.
	Logger *slog.Logger
}

// DefaultOptions returns the default sizes of a full run (1M receipts;
// bundle ledgers of 10k, 100k and 1M; 64 appenders; seed 1) or, with
// quick, of a quick one (2,000 receipts; bundle ledgers of 400 and 1,600).
func DefaultOptions(quick bool) Options {
	o := Options{Events: 1_000_000, Bundles: []int{10_000, 100_000, 1_000_000}, Quick: quick, Appenders: 64, Seed: 1}
	if quick {
		o.Events, o.Bundles = 2000, []int{400, 1600}
	}
	return o
}

// check returns an error wrapping ErrUsage naming the first option out of
// range, and the options with their bundle sizes sorted, without repeats.
func (o Options) check() (Options, error) {
	if o.Events < 16 {
		return o, fmt.Errorf("%w: events: %d is below 16", ErrUsage, o.Events)
	}
	if o.Appenders < 1 {
		return o, fmt.Errorf("%w: appenders: %d is below 1", ErrUsage, o.Appenders)
	}
	if len(o.Bundles) == 0 {
		return o, fmt.Errorf("%w: bundles: no bundle ledger size", ErrUsage)
	}
	for _, n := range o.Bundles {
		if n < 100 {
			return o, fmt.Errorf("%w: bundles: %d is below 100", ErrUsage, n)
		}
	}
	o.Bundles = slices.Compact(slices.Sorted(slices.Values(o.Bundles)))
	return o, nil
}

// ParseBundleSizes reads a list of bundle ledger sizes as the --bundles
// flag gives it: comma-separated counts, each at least 100 ("_" may group
// digits). It returns them sorted, without repeats; a bad list is an error
// wrapping ErrUsage.
func ParseBundleSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(strings.ReplaceAll(f, "_", ""))
		n, err := strconv.Atoi(f)
		if err != nil || n < 100 {
			return nil, fmt.Errorf("%w: bundles: %q is not a count of at least 100 bundles", ErrUsage, f)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// benchSizes are the sizes a run uses, from the options; the report's
// "sizes".
type benchSizes struct {
	Measure      time.Duration `json:"-"`                  // length of each timed loop
	MeasureSecs  float64       `json:"measure_seconds"`    // Measure in seconds
	SingleDocs   int           `json:"single_ingest_docs"` // documents per 1-appender ingest run
	ConcDocs     int           `json:"concurrent_ingest_docs"`
	Appenders    int           `json:"appenders"`
	Events       int           `json:"events"`
	BuildPerCall int           `json:"build_docs_per_call"` // documents per Append call while building
	DiskReplay   int           `json:"disk_limit_events"`   // events replayed for the build's disk limit
	Sample       int           `json:"sample_docs"`         // documents kept for replay and lookup
	Trials       int           `json:"ingest_trials"`       // attempts per ingest run (and rebuild); the fastest is reported
	Seed         uint64        `json:"seed"`
	// Bundles are the sizes of the witness-bundle ledgers of the scorecard,
	// trend and rebuild figures; their bundles' creation times spread over
	// BundleSpanDays, with text sections scaled by BundleTextScale.
	Bundles         []int   `json:"bundle_ledgers"`
	BundleSpanDays  float64 `json:"bundle_span_days"`
	BundleTextScale float64 `json:"bundle_text_scale"`
}

func (o Options) sizes() benchSizes {
	s := benchSizes{Measure: 3 * time.Second, SingleDocs: 2000, ConcDocs: 20000, Appenders: o.Appenders,
		Events: o.Events, BuildPerCall: 16, DiskReplay: 200_000, Sample: 4096, Trials: 2, Seed: o.Seed,
		Bundles: o.Bundles, BundleSpanDays: bundleSpan.Hours() / 24, BundleTextScale: bundleTextScale}
	if o.Quick {
		s.Measure, s.SingleDocs, s.ConcDocs, s.DiskReplay, s.Sample, s.Trials = 150*time.Millisecond, 12, 160, 2000, 256, 1
	}
	s.DiskReplay = min(s.DiskReplay, s.Events)
	s.Sample = min(s.Sample, s.Events)
	s.MeasureSecs = s.Measure.Seconds()
	return s
}

// figure is one measured value beside its limit. Ratio is Value/Limit;
// Better says which way is good ("higher" for rates, "lower" for bytes
// and latencies). A figure the issue set a goal for carries it: Goal in
// the figure's unit, GoalMet whether Value reaches it (below it when lower
// is better, at least it when higher is).
type figure struct {
	Name      string  `json:"name"`
	Value     float64 `json:"value"`
	Unit      string  `json:"unit"`
	Limit     float64 `json:"limit"`
	LimitName string  `json:"limit_name"`
	Ratio     float64 `json:"ratio"`
	Better    string  `json:"better"`
	Goal      float64 `json:"goal,omitempty"`
	GoalName  string  `json:"goal_name,omitempty"`
	GoalMet   *bool   `json:"goal_met,omitempty"`
	Note      string  `json:"note,omitempty"`
}

// fact is a measured value that is not compared with a limit (a duration,
// a generation rate, a batch size).
type fact struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// machine describes where the run happened.
type machine struct {
	GOMAXPROCS int    `json:"gomaxprocs"`
	NumCPU     int    `json:"num_cpu"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	GoVersion  string `json:"go_version"`
	CPUModel   string `json:"cpu_model,omitempty"`
}

// benchReport is the whole result, as --json writes it.
type benchReport struct {
	Started time.Time `json:"started"`
	Seconds float64   `json:"duration_seconds"`
	// LoadStart and LoadEnd are the 1, 5 and 15 minute load averages
	// (/proc/loadavg) when the run started and ended: other work on the
	// machine shows there.
	LoadStart string     `json:"loadavg_start,omitempty"`
	LoadEnd   string     `json:"loadavg_end,omitempty"`
	Machine   machine    `json:"machine"`
	Sizes     benchSizes `json:"sizes"`
	Figures   []figure   `json:"figures"`
	Facts     []fact     `json:"facts"`
}

// bench is one run.
type bench struct {
	sizes    benchSizes
	work     string
	log      *slog.Logger // ledger and Pebble messages (Options.Logger)
	progress *slog.Logger // what the run is doing, at info level on stderr
	rep      *benchReport

	// The proof rates of the big ledger, reported beside the tlog limits.
	proveRate, verifyRate float64
	proofNote             string
}

// Run makes one run with opts: it measures every figure, prints the
// report to stdout (progress goes to stderr) and, when opts.JSONPath is
// set, writes it there as JSON. Options out of range, or a work directory
// it cannot create, are errors wrapping ErrUsage; ctx ends the run early.
func Run(ctx context.Context, opts Options, stdout, stderr io.Writer) error {
	opts, err := opts.check()
	if err != nil {
		return err
	}
	work := opts.Dir
	if work == "" {
		d, err := os.MkdirTemp("", "ledger-bench-")
		if err != nil {
			return fmt.Errorf("work directory: %w", err)
		}
		defer func() { _ = os.RemoveAll(d) }() // best effort, like any temporary directory
		work = d
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return fmt.Errorf("%w: dir %s: %w", ErrUsage, work, pathless(err))
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	b := &bench{
		sizes:    opts.sizes(),
		work:     work,
		log:      logger,
		progress: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
		rep:      &benchReport{Started: time.Now().UTC(), LoadStart: loadAverage(), Machine: describeMachine()},
	}
	b.rep.Sizes = b.sizes
	start := time.Now()
	if err := b.run(ctx); err != nil {
		return err
	}
	b.rep.Seconds = time.Since(start).Seconds()
	b.rep.LoadEnd = loadAverage()
	printReport(stdout, b.rep)
	if opts.JSONPath != "" {
		data, err := json.MarshalIndent(b.rep, "", "  ")
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		if err := os.WriteFile(opts.JSONPath, append(data, '\n'), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", opts.JSONPath, pathless(err))
		}
		_, _ = fmt.Fprintf(stdout, "\nwrote %s\n", opts.JSONPath)
	}
	return nil
}

// pathless drops the path a *fs.PathError repeats, for messages that
// already name the file.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// formatTime writes t as the report's notes do: RFC 3339 in UTC.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// run measures everything in order: the CPU limits, the ingest runs with
// their disk limits, the big ledger (with the reputation figures), then the
// witness-bundle ledgers of the scorecard, trend and rebuild figures.
func (b *bench) run(ctx context.Context) error {
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"cpu limits", b.cpuLimits},
		{"ingest", b.ingestAll},
		{"big ledger", b.bigLedger},
		{"projections", b.projections},
		{"verification", b.verifyAll},
	}
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

// add records a figure, computing its ratio.
func (b *bench) add(f figure) {
	if f.Limit > 0 {
		f.Ratio = f.Value / f.Limit
	}
	if f.Better == "" {
		f.Better = "higher"
	}
	if f.Goal > 0 {
		met := f.Value >= f.Goal
		if f.Better == "lower" {
			met = f.Value < f.Goal
		}
		f.GoalMet = &met
	}
	b.rep.Figures = append(b.rep.Figures, f)
	b.progress.Info("figure", "name", f.Name, "value", round3(f.Value), "unit", f.Unit, "limit", round3(f.Limit), "ratio", round3(f.Ratio))
}

// fact records a value without a limit.
func (b *bench) fact(name string, value float64, unit string) {
	b.rep.Facts = append(b.rep.Facts, fact{Name: name, Value: value, Unit: unit})
	b.progress.Info("fact", "name", name, "value", round3(value), "unit", unit)
}

// rate runs op on workers goroutines for about d (each op is started
// before the deadline, so the last ones may finish after it) and returns
// the completed ops per second over the whole wall time. Worker w's i-th
// call gets (w, i). The first error stops every worker.
func rate(ctx context.Context, workers int, d time.Duration, op func(w, i int) error) (float64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var total atomic.Int64
	var once sync.Once
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := range workers {
		wg.Go(func() {
			n := int64(0)
			defer func() { total.Add(n) }()
			for i := 0; ctx.Err() == nil && time.Now().Before(deadline); i++ {
				if err := op(w, i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
				n++
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return 0, firstErr
	}
	if err := ctx.Err(); err != nil && total.Load() == 0 {
		return 0, err
	}
	if total.Load() == 0 {
		return 0, fmt.Errorf("no operation completed in %v", d)
	}
	return float64(total.Load()) / elapsed.Seconds(), nil
}

func describeMachine() machine {
	m := machine{GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer func() { _ = f.Close() }() // read-only: nothing to lose
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// loadAverage returns the 1, 5 and 15 minute load averages from
// /proc/loadavg, or "" where there is none.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// printReport writes the readable table: figure, value, unit, limit,
// ratio, the goal where there is one, then the facts. Like the
// ledger's text output it does not check its writes (a closed pipe ends
// the process with SIGPIPE anyway); the JSON report, which programs read,
// is written to a file and checked.
func printReport(w io.Writer, r *benchReport) {
	m := r.Machine
	_, _ = fmt.Fprintf(w, "ledger bench: %s, %s/%s, GOMAXPROCS %d, %s, %.0f s\n", m.CPUModel, m.GOOS, m.GOARCH, m.GOMAXPROCS, m.GoVersion, r.Seconds)
	if r.LoadStart != "" {
		_, _ = fmt.Fprintf(w, "load average %s at the start, %s at the end\n", r.LoadStart, r.LoadEnd)
	}
	_, _ = fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "FIGURE\tVALUE\tUNIT\tLIMIT\tRATIO\tGOAL\tLIMIT IS")
	for _, f := range r.Figures {
		ratio := fmt.Sprintf("%.3f", f.Ratio)
		if f.Better == "lower" {
			ratio += " (lower is better)"
		}
		goal := "-"
		if f.GoalMet != nil {
			op, verdict := ">=", "met"
			if f.Better == "lower" {
				op = "<"
			}
			if !*f.GoalMet {
				verdict = "NOT MET"
			}
			goal = fmt.Sprintf("%s %s %s: %s", op, human(f.Goal), f.Unit, verdict)
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Name, human(f.Value), f.Unit, human(f.Limit), ratio, goal, f.LimitName)
	}
	_ = tw.Flush() // text output, unchecked (see above)
	_, _ = fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "FACT\tVALUE\tUNIT")
	for _, f := range r.Facts {
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, human(f.Value), f.Unit)
	}
	_ = tw.Flush() // text output, unchecked (see above)
}

// human writes v with about four significant digits.
func human(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

func round3(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	p := math.Pow(10, 3-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}
