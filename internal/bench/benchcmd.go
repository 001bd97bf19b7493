//go:build benchmove

package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
)

// benchCommand is `ledger bench`: it measures verified durable ingest,
// replay lookups, inclusion proofs and bytes on disk, each beside a limit
// measured in the same run on the same machine.
func benchCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure ingest, lookups, proofs and bytes on disk against limits measured in the same run",
		Description: "Generates a deterministic corpus (package ledger/ledgertest) and measures, in one run:\n" +
			"  cpu.*          bare Ed25519 verifications and HMAC-SHA256 on all cores (limit: one core x GOMAXPROCS)\n" +
			"  disk.*         raw Pebble synced batches of the same bytes and batch sizes as the ledger's group\n" +
			"                 commits (limit: the same batches written to a preallocated file, each fdatasynced)\n" +
			"  ingest.*       durable ledger.Append per kind (index projections on, as `ledger append` runs),\n" +
			"                 1 appender and --appenders concurrent ones, one document per call (limit: the\n" +
			"                 lower of the CPU limit scaled to the verifications each document needs, measured\n" +
			"                 around the run, and the disk limit)\n" +
			"  build.*        building the --events ledger of receipts through the real append path\n" +
			"  replay.*       at that size: .check is ledger.Seen, the identity point lookup of an append\n" +
			"                 (limit: raw Pebble Gets of random identity keys, i/); .lookup is ledger.Lookup and\n" +
			"                 .append an Append of a stored document (limit: raw Gets of random present keys)\n" +
			"  proof.*        ledger.ProveInclusion and InclusionProof.Verify at that size (limit: bare\n" +
			"                 tlog.ProveRecord / CheckRecord on an in-memory hash store of the same size)\n" +
			"  disk.bytes_per_event  directory size after flush and compaction (limit: raw document bytes)\n" +
			"  reputation.*   index.Agent of one agent (all time, --since 30d) and index.Agents on the big ledger\n" +
			"                 (limit: the same keys read from the bare Pebble store)\n" +
			"  scorecard.*    `scorecard --since 30d` on witness-bundle ledgers of each --bundles size, spread over\n" +
			"                 180 days, built through the real append path (limit: the same rollup and edge keys\n" +
			"                 read with a bare Pebble iterator; .open adds opening the ledger, as the command does)\n" +
			"  trend.*        the trend by day, week and month over the whole span (limit: the same keys, bare)\n" +
			"  rebuild.*      ledger.Rebuild of the biggest bundle ledger, compacted first, under the GC target\n" +
			"                 `ledger rebuild` sets (limit: a bare scan of its leaves, on the same store)\n" +
			"Figures the issues set goals for show them, met or not: ingest of receipts with 64 appenders at\n" +
			"70% of the bare Ed25519 rate, of bundles at 50k/s (Tessera's POSIX log), 1M replay checks/s at 1M\n" +
			"events, 100 ms for the 30-day scorecard of 1M bundles, 1 ms for one agent's reputation, 200k\n" +
			"events/s for rebuild.\n\n" +
			"Machines are shared and noisy: read the ratios, not the absolute values. Progress goes to stderr.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "events", Usage: "size of the big ledger for the replay, proof and reputation figures", Value: 1_000_000},
			&cli.StringFlag{Name: "bundles", Usage: "comma-separated sizes of the witness-bundle ledgers for the scorecard, trend and rebuild figures", Value: "10000,100000,1000000"},
			&cli.BoolFlag{Name: "quick", Usage: "small sizes and short measurements, so the run takes seconds"},
			&cli.StringFlag{Name: "json", Usage: "also write every figure and the machine to this JSON `FILE`"},
			&cli.StringFlag{Name: "dir", Usage: "work directory (default: a temporary directory, removed afterwards)"},
			&cli.IntFlag{Name: "appenders", Usage: "concurrent appenders of the concurrent ingest runs", Value: 64},
			&cli.Uint64Flag{Name: "seed", Usage: "corpus seed", Value: 1},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErrorf("bench takes no arguments")
			}
			opts := benchOptions{
				Events:    c.Int("events"),
				Quick:     c.Bool("quick"),
				JSONPath:  c.String("json"),
				Dir:       c.String("dir"),
				Appenders: c.Int("appenders"),
				Seed:      c.Uint64("seed"),
			}
			if !c.IsSet("events") && opts.Quick {
				opts.Events = 2000
			}
			if opts.Events < 16 || opts.Appenders < 1 {
				return usageErrorf("bench: --events must be at least 16 and --appenders at least 1")
			}
			bundles := c.String("bundles")
			if !c.IsSet("bundles") && opts.Quick {
				bundles = "400,1600"
			}
			var err error
			if opts.Bundles, err = parseBundleSizes(bundles); err != nil {
				return usageErrorf("bench: %v", err)
			}
			return runBench(c.Context, e, opts)
		},
	}
}

// benchOptions are the flags of `ledger bench`.
type benchOptions struct {
	Events    int
	Bundles   []int // sizes of the witness-bundle ledgers, ascending
	Quick     bool
	JSONPath  string
	Dir       string
	Appenders int
	Seed      uint64
}

// benchSizes are the sizes a run uses, from the options.
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

func (o benchOptions) sizes() benchSizes {
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

// bench is one run of `ledger bench`.
type bench struct {
	sizes    benchSizes
	work     string
	log      *slog.Logger // the CLI's logger: ledger and Pebble messages
	progress *slog.Logger // what the run is doing, at info level on stderr
	rep      *benchReport

	// The proof rates of the big ledger, reported beside the tlog limits.
	proveRate, verifyRate float64
	proofNote             string
}

func runBench(ctx context.Context, e *env, opts benchOptions) error {
	work := opts.Dir
	if work == "" {
		d, err := os.MkdirTemp("", "ledger-bench-")
		if err != nil {
			return exitf(exitInternal, "bench: %w", err)
		}
		defer os.RemoveAll(d)
		work = d
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return usageErrorf("bench --dir %s: %v", work, pathless(err))
	}
	b := &bench{
		sizes:    opts.sizes(),
		work:     work,
		log:      e.log,
		progress: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
		rep:      &benchReport{Started: time.Now().UTC(), LoadStart: loadAverage(), Machine: describeMachine()},
	}
	b.rep.Sizes = b.sizes
	start := time.Now()
	if err := b.run(ctx); err != nil {
		return exitf(exitInternal, "bench: %w", err)
	}
	b.rep.Seconds = time.Since(start).Seconds()
	b.rep.LoadEnd = loadAverage()
	printReport(e.stdout, b.rep)
	if opts.JSONPath != "" {
		data, err := json.MarshalIndent(b.rep, "", "  ")
		if err != nil {
			return exitf(exitInternal, "bench: %w", err)
		}
		if err := os.WriteFile(opts.JSONPath, append(data, '\n'), 0o644); err != nil {
			return exitf(exitInternal, "bench: write %s: %v", opts.JSONPath, pathless(err))
		}
		fmt.Fprintf(e.stdout, "\nwrote %s\n", opts.JSONPath)
	}
	return nil
}

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
		defer f.Close()
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
// ratio, the goal where there is one, then the facts.
func printReport(w io.Writer, r *benchReport) {
	m := r.Machine
	fmt.Fprintf(w, "ledger bench: %s, %s/%s, GOMAXPROCS %d, %s, %.0f s\n", m.CPUModel, m.GOOS, m.GOARCH, m.GOMAXPROCS, m.GoVersion, r.Seconds)
	if r.LoadStart != "" {
		fmt.Fprintf(w, "load average %s at the start, %s at the end\n", r.LoadStart, r.LoadEnd)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tVALUE\tUNIT\tLIMIT\tRATIO\tGOAL\tLIMIT IS")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Name, human(f.Value), f.Unit, human(f.Limit), ratio, goal, f.LimitName)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FACT\tVALUE\tUNIT")
	for _, f := range r.Facts {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, human(f.Value), f.Unit)
	}
	tw.Flush()
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
