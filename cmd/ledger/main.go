package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
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

// exitCodeHelp lists the exit codes of commands that take many inputs
// (inspect, append), for their help; `ledger --help` has them all.
const exitCodeHelp = `Exit codes (all of them: ledger --help):
   0  success: every input valid (or appended)
   2  usage error
   3  some input could not be read or parsed, or fails its schema
   4  some input failed verification (signature, hash, recomputed verdict, governance) or trust
   7  the ledger is damaged or its stored data was altered`

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
	// getenv reads the environment (NO_COLOR, TERM); os.Getenv when nil.
	getenv func(string) string
	// verbose and noProgress are the global settings (--verbose or
	// LEDGER_VERBOSE, --no-progress or LEDGER_NO_PROGRESS), set before a
	// command runs.
	verbose, noProgress bool
	// opened are the ledgers the command opened (openWith, but for
	// audit), whose corruption reports runEnv reads once the command has
	// ended.
	opened []corruptionReporter
}

// corruptionReporter is what reportCorruption asks of an opened ledger
// (*ledger.Ledger).
type corruptionReporter interface {
	Dir() string
	Corruption() error
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
		Name:        "ledger",
		Usage:       "an append-only, tamper-evident record of the proofs AI systems produce",
		Description: appDescription(),
		Reader:      e.stdin,
		Writer:      e.stdout,
		ErrWriter:   e.stderr,
		// No bash completion through the hidden --generate-bash-completion
		// flag: `ledger completion bash|zsh|fish` prints static scripts.
		EnableBashCompletion: false,
		HideHelpCommand:      false,
		Flags:                globalFlags(),
		Before: func(c *cli.Context) error {
			e.verbose, e.noProgress = c.Bool("verbose"), c.Bool("no-progress")
			level := slog.LevelWarn
			if e.verbose {
				level = slog.LevelDebug
			}
			e.log = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
			if c.Bool("version") {
				if err := printVersion(e.stdout, false); err != nil {
					return err
				}
				return &exitError{code: exitOK} // printed: run no command
			}
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
			replayCommand(e),
			refusalsCommand(e),
			checkpointCommand(e),
			proveCommand(e),
			verifyProofCommand(e),
			keyCommand(e),
			trustCommand(e),
			freshnessCommand(e),
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
			versionCommand(e),
			completionCommand(e),
		},
	}
	setupCommands(app.Commands, "ledger")
	addWaitFlags(app.Commands)
	return app
}

// runEnv executes the CLI in e and returns the process exit code. A panic
// anywhere in a command becomes one line on stderr and exit code 1 (the
// stack too with --verbose), never a stack trace alone.
func runEnv(ctx context.Context, args []string, e *env) int {
	return runGuarded(ctx, args, e, newApp)
}

// runGuarded runs the app newApp builds, turning a panic into exit code 1
// and one line on stderr (reportPanic).
func runGuarded(ctx context.Context, args []string, e *env, newApp func(*env) *cli.App) (code int) {
	defer func() {
		if v := recover(); v != nil {
			code = reportPanic(e, args, v, debug.Stack())
		}
	}()
	return runApp(ctx, newApp(e), args, e)
}

// runApp runs app with args and maps its outcome to an exit code.
func runApp(ctx context.Context, app *cli.App, args []string, e *env) int {
	stderr := e.stderr
	e.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	unknown := false
	app.CommandNotFound = func(c *cli.Context, name string) {
		unknown = true
		_, _ = fmt.Fprintf(stderr, "ledger: unknown command %q (see ledger --help)\n", name)
	}
	err := app.RunContext(ctx, interspersed(app, helpArgs(app, args)))
	if unknown {
		return exitUsage
	}
	e.reportCorruption(err)
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
	if code == exitInternal && errors.Is(err, ledger.ErrBusy) {
		code = exitBusy
	}
	if msg := err.Error(); msg != "" {
		_, _ = fmt.Fprintf(stderr, "ledger: %s\n", oneLine(msg))
	}
	return code
}

// reportCorruption warns, on one line, of a corruption the store reported
// while the command ran (Ledger.Corruption) that the command's error err
// does not report: one a background job met (a compaction reading a
// damaged table) while the command read none. Pebble's own messages about
// it are below warning level (--verbose shows them).
func (e *env) reportCorruption(err error) {
	if errors.Is(err, ledger.ErrCorrupt) || errors.Is(err, ledger.ErrDamaged) {
		return // the error line says it
	}
	for _, l := range e.opened {
		if cerr := l.Corruption(); cerr != nil {
			e.log.Warn("the store reported a corruption (a background job met it); run `ledger audit` for the details",
				"dir", l.Dir(), "err", oneLine(cerr.Error()))
			return
		}
	}
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
