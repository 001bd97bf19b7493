package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
)

// Exit codes; see doc.go.
const (
	exitOK        = 0
	exitInternal  = 1
	exitUsage     = 2
	exitMalformed = 3
	exitInvalid   = 4
)

// exitError carries an exit code out of a command. A nil-message exitError
// has already reported everything it needs to.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func exitf(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

func usageErrorf(format string, args ...any) error { return exitf(exitUsage, format, args...) }

const exitCodeHelp = `Exit codes:
   0  success: every input valid
   1  internal error
   2  usage error
   3  some input could not be read or parsed, or fails its schema
   4  some input failed verification (signature, hash, recomputed verdict, governance)
   6  (scorecard) some ADR-035 acceptance criterion is not met
   When inputs fail in several ways, the lowest of these codes is returned.`

// env carries the process's streams and logger to commands, so that tests
// and the binary share one code path and nothing lives in package state.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
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
			fmt.Fprintf(c.App.ErrWriter, "ledger: unknown command %q (see ledger --help)\n", name)
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
			benchCommand(e),
			scorecardCommand(e),
			trendCommand(e),
			reputationCommand(e),
			systemsCommand(e),
			policyCommand(e),
			rebuildCommand(e),
		},
	}
	for _, cmd := range app.Commands {
		cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return usageErrorf("%v", err) }
	}
	return app
}

// run executes the CLI and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr,
		log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	app := newApp(e)
	unknown := false
	app.CommandNotFound = func(c *cli.Context, name string) {
		unknown = true
		fmt.Fprintf(stderr, "ledger: unknown command %q (see ledger --help)\n", name)
	}
	err := app.RunContext(ctx, interspersed(app, args))
	if unknown {
		return exitUsage
	}
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintf(stderr, "ledger: %s\n", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "ledger: %v\n", err)
	return exitInternal
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
