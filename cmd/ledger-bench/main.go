package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/internal/bench"
)

// Exit codes.
const (
	exitOK       = 0
	exitInternal = 1
	exitUsage    = 2
)

// errUsage marks a command line the program cannot run (flags it cannot
// parse, arguments it does not take).
var errUsage = errors.New("usage")

func newApp(stdout, stderr io.Writer) *cli.App {
	full, quick := bench.DefaultOptions(false), bench.DefaultOptions(true)
	return &cli.App{
		Name:      "ledger-bench",
		Usage:     "measure ingest, lookups, proofs and bytes on disk against limits measured in the same run",
		UsageText: "ledger-bench [--quick] [--json FILE] [--dir DIR] [--events N] [--bundles N,N,...] [--appenders N] [--seed N]",
		Description: bench.Description + "\n\n" +
			"Exit codes: 0 success, 1 internal error, 2 usage error.",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "events", Usage: "size of the big ledger for the replay, proof and reputation figures",
				DefaultText: fmt.Sprintf("%d, %d with --quick", full.Events, quick.Events)},
			&cli.StringFlag{Name: "bundles", Usage: "comma-separated sizes of the witness-bundle ledgers for the scorecard, trend and rebuild figures",
				DefaultText: fmt.Sprintf("%s, %s with --quick", sizes(full.Bundles), sizes(quick.Bundles))},
			&cli.BoolFlag{Name: "quick", Usage: "small sizes and short measurements, so the run takes seconds"},
			&cli.StringFlag{Name: "json", Usage: "also write every figure and the machine to this JSON `FILE`"},
			&cli.StringFlag{Name: "dir", Usage: "work directory (default: a temporary directory, removed afterwards)"},
			&cli.IntFlag{Name: "appenders", Usage: "concurrent appenders of the concurrent ingest runs", Value: full.Appenders},
			&cli.Uint64Flag{Name: "seed", Usage: "corpus seed", Value: full.Seed},
			&cli.BoolFlag{Name: "verbose", Usage: "log the ledgers' and Pebble's messages to stderr"},
		},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return fmt.Errorf("%w: %w", errUsage, err)
		},
		ExitErrHandler: func(*cli.Context, error) {}, // run maps errors to exit codes
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return fmt.Errorf("%w: ledger-bench takes no arguments (got %q)", errUsage, c.Args().First())
			}
			opts := bench.DefaultOptions(c.Bool("quick"))
			if c.IsSet("events") {
				opts.Events = c.Int("events")
			}
			if c.IsSet("bundles") {
				var err error
				if opts.Bundles, err = bench.ParseBundleSizes(c.String("bundles")); err != nil {
					return err
				}
			}
			opts.Appenders = c.Int("appenders")
			opts.Seed = c.Uint64("seed")
			opts.JSONPath = c.String("json")
			opts.Dir = c.String("dir")
			level := slog.LevelWarn
			if c.Bool("verbose") {
				level = slog.LevelDebug
			}
			opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
			return bench.Run(c.Context, opts, stdout, stderr)
		},
	}
}

// sizes writes bundle ledger sizes as --bundles takes them.
func sizes(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}

// run executes the command line args (args[0] is the program name) and
// returns the process exit code; errors go to stderr on one line.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := newApp(stdout, stderr).RunContext(ctx, args)
	if err == nil {
		return exitOK
	}
	code := exitInternal
	if errors.Is(err, errUsage) || errors.Is(err, bench.ErrUsage) {
		code = exitUsage
	}
	_, _ = fmt.Fprintf(stderr, "ledger-bench: %s\n", strings.ReplaceAll(strings.TrimRight(err.Error(), "\n"), "\n", " "))
	return code
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
