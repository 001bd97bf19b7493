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

	"github.com/proofledger/ledger/ledger"
)

// Exit codes; see doc.go.
const (
	exitOK        = 0
	exitInternal  = 1
	exitUsage     = 2
	exitMalformed = 3
	exitInvalid   = 4
	exitDamaged   = 7
)

// exitError carries an exit code out of a command. A nil-error exitError
// has already reported everything it needs to.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitf returns an error that exits with code; %w in format keeps the
// cause, so that a damaged or altered store still exits with exitDamaged.
func exitf(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

func usageErrorf(format string, args ...any) error { return exitf(exitUsage, format, args...) }

const exitCodeHelp = `Exit codes:
   0  success: every input valid
   1  internal error
   2  usage error
   3  some input could not be read or parsed, or fails its schema
   4  some input failed verification (signature, hash, recomputed verdict, governance)
   6  (scorecard) some ADR-035 acceptance criterion is not met
   7  the ledger is damaged or its stored data was altered: it serves no answer it cannot check
   When inputs fail in several ways, the lowest of these codes is returned.`

// env carries the process's streams and logger to commands, so that tests
// and the binary share one code path and nothing lives in package state.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	// exit ends the process (os.Exit); nil in tests, which run commands
	// in process.
	exit func(code int)
	// cleanups run before the process ends on a fatal store error (for
	// example: remove a partial output file).
	cleanups []func()
}

// fatal is the ledger's Options.OnFatal: Pebble met a condition it cannot
// continue from. Say so on one line, clean up, and end the process, rather
// than let Pebble end it with a stack trace. Without exit (tests), the
// ledger turns it into an error.
func (e *env) fatal(msg string) {
	if e.exit == nil {
		return
	}
	for _, f := range e.cleanups {
		f()
	}
	_, _ = fmt.Fprintf(e.stderr, "ledger: the store failed: %s\n", oneLine(msg))
	e.exit(exitInternal)
}

func newApp(e *env) *cli.App {
	app := &cli.App{
		Name:                 "ledger",
		Usage:                "an append-only, tamper-evident record of the proofs AI systems produce",
		Description:          "Inspects VRF receipts, AVIR specifications and attestations, and RVWW witness bundles.\n\n" + exitCodeHelp,
		Reader:               e.stdin,
		Writer:               e.stdout,
		ErrWriter:            e.stderr,
		EnableBashCompletion: false,
		HideHelpCommand:      true,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "verbose", Usage: "log progress and library messages to stderr"},
		},
		Before: func(c *cli.Context) error {
			level := slog.LevelWarn
			if c.Bool("verbose") {
				level = slog.LevelDebug
			}
			e.log = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
			return nil
		},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageErrorf("%v", err)
		},
		CommandNotFound: func(c *cli.Context, name string) {
			_, _ = fmt.Fprintf(c.App.ErrWriter, "ledger: unknown command %q (see ledger --help)\n", name)
		},
		ExitErrHandler: func(*cli.Context, error) {}, // run() maps errors to exit codes
		Commands: []*cli.Command{
			initCommand(e),
			inspectCommand(e),
			appendCommand(e),
			getCommand(e),
			logCommand(e),
			chainCommand(e),
			checkpointCommand(e),
			proveCommand(e),
			verifyProofCommand(e),
			keyCommand(e),
			exportCommand(e),
			importCommand(e),
			scorecardCommand(e),
			trendCommand(e),
			reputationCommand(e),
			systemsCommand(e),
			policyCommand(e),
			rebuildCommand(e),
			auditCommand(e),
			runCommand(e),
			witnessCommand(e),
		},
	}
	for _, cmd := range app.Commands {
		cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return usageErrorf("%v", err) }
	}
	return app
}

// runEnv executes the CLI in e and returns the process exit code.
func runEnv(ctx context.Context, args []string, e *env) int {
	stderr := e.stderr
	e.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	app := newApp(e)
	unknown := false
	app.CommandNotFound = func(c *cli.Context, name string) {
		unknown = true
		_, _ = fmt.Fprintf(stderr, "ledger: unknown command %q (see ledger --help)\n", name)
	}
	err := app.RunContext(ctx, interspersed(app, args))
	if unknown {
		return exitUsage
	}
	if err == nil {
		return exitOK
	}
	code := exitInternal
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if code == exitInternal && (errors.Is(err, ledger.ErrCorrupt) || errors.Is(err, ledger.ErrDamaged)) {
		code = exitDamaged
	}
	if msg := err.Error(); msg != "" {
		_, _ = fmt.Fprintf(stderr, "ledger: %s\n", oneLine(msg))
	}
	return code
}

// oneLine keeps an error message to one line of bounded length.
func oneLine(s string) string {
	s = strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", " ")
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	return s
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runEnv(ctx, os.Args, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, exit: os.Exit})
	stop()
	os.Exit(code)
}
