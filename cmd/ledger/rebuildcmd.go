package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/urfave/cli/v2"
)

// rebuildGCPercent is the garbage collector's target while a rebuild runs
// (GOGC 400 instead of Go's 100): a rebuild allocates a few KB per event,
// the leaves' JSON trees, all dead within a batch of 4096 events, so
// collecting less often buys about 15% more events per second (measured:
// go test ./index -bench Rebuild -index.bundles -index.events 200000,
// GOGC=100 142k, GOGC=400 164k events/s) for a heap still bounded by a few
// batches. A GOGC set in the environment wins. `ledger bench` measures
// its rebuild figure under the same setting.
const rebuildGCPercent = 400

// withRebuildGC runs fn with the rebuild's GC target, unless GOGC is set.
func withRebuildGC(fn func() error) error {
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(rebuildGCPercent))
	}
	return fn()
}

func rebuildCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "rebuild",
		Usage: "drop every projection and recompute it from the log",
		Description: "Deletes the projections (reputation, systems, scorecard rollups, regressions, the investigation\n" +
			"indexes: the x/ keyspace; never the refusal journal)\n" +
			"and recomputes them from the events' leaves, in log order. The result is identical, key for key,\n" +
			"to what appends maintained incrementally. Appends wait while it runs; an interrupted rebuild\n" +
			"leaves the projections marked incomplete, and queries refuse them until a rebuild completes.\n" +
			"A progress bar goes to stderr when it is a terminal; the result line to stdout.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object"},
			&cli.BoolFlag{Name: "quiet", Usage: "no progress bar (as --no-progress)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErrorf("rebuild takes no arguments")
			}
			l, err := openLedger(c, e, false)
			if err != nil {
				return err
			}
			defer closeLedger(l)
			total := l.Size()
			start := time.Now()
			var bar *progress
			if !c.Bool("quiet") {
				bar = e.newProgress("rebuild", "events", total)
			}
			err = withRebuildGC(func() error { return l.Rebuild(c.Context, bar.set) })
			bar.done()
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return exitf(exitInternal, "rebuild interrupted: the projections are incomplete until ledger rebuild completes")
				}
				return exitf(exitInternal, "rebuild: %w", err)
			}
			elapsed := time.Since(start)
			rate := 0.0
			if s := elapsed.Seconds(); s > 0 {
				rate = float64(total) / s
			}
			if c.Bool("json") {
				return writeJSONLine(e.stdout, rebuildJSON{total, round4(elapsed.Seconds()), float64(int64(rate))})
			}
			_, _ = fmt.Fprintf(e.stdout, "rebuilt the projections from %s events in %s (%s events/s)\n",
				thousands(total), elapsed.Round(time.Millisecond), thousands(int64(rate)))
			return nil
		},
	}
}
