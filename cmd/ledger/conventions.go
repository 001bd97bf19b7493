package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// The conventions every command shares: global flags and their LEDGER_*
// environment variables, the exit codes, usage errors (exit 2, one line)
// at every level of the command tree, `ledger help CMD [SUB]`, and what a
// panic turns into.

// exitCode documents one exit code (docs/CLI.md, ledger --help).
type exitCode struct {
	code    int
	meaning string
}

// exitCodes are the codes the binary returns. When inputs fail in several
// ways, the lowest failure code is returned.
var exitCodes = []exitCode{
	{exitOK, "success: every input valid (or appended)"},
	{exitInternal, "internal error (a panic included: one line on stderr, the stack with --verbose)"},
	{exitUsage, "usage error: an unknown command, subcommand or flag, a bad flag value, missing or extra arguments, a missing required flag"},
	{exitMalformed, "some input could not be read or parsed, or fails its schema"},
	{exitInvalid, "some input failed verification (signature, hash, recomputed verdict, governance), trust or a chain rule; (audit) a divergence was found; (run avir) a benchmark could not be measured: verdict INVALID, nothing signed"},
	{exitRefused, "(append) some input was refused as a replay, a conflict or stale (freshness rules)"},
	{exitNotAccepted, "(scorecard) some ADR-035 acceptance criterion is not met; (run --fail-unless-pass) a verdict is not pass"},
	{exitDamaged, "the ledger is damaged or its stored data was altered: it serves no answer it cannot check"},
	{exitBusy, "the ledger is busy: another process held it for longer than --wait (LEDGER_WAIT, default 5s; 0 does not wait); the message names the holder"},
	{exitEmptyWindow, "(scorecard) the window holds no witness bundles: nothing was judged"},
}

// appDescription is the text of `ledger --help` below the usage line.
func appDescription() string {
	var b strings.Builder
	b.WriteString("Inspects VRF receipts, AVIR specifications and attestations, and RVWW witness bundles,\n" +
		"and keeps them in an append-only, tamper-evident log. `ledger help COMMAND [SUBCOMMAND]` for\n" +
		"a command's options; docs/CLI.md for every command, flag, environment variable and JSON shape.\n\n" +
		"Exit codes:\n")
	for _, c := range exitCodes {
		fmt.Fprintf(&b, "   %d  %s\n", c.code, c.meaning)
	}
	b.WriteString("   When inputs fail in several ways, the lowest of these codes is returned.")
	return b.String()
}

// Environment variables of the global settings.
const (
	envVerbose    = "LEDGER_VERBOSE"
	envNoProgress = "LEDGER_NO_PROGRESS"
)

// globalFlags are the flags before (or after) any command. Each global
// setting has a LEDGER_* environment variable too.
func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "verbose", Usage: "log progress and library messages (Pebble's included) to stderr, and a panic's stack", EnvVars: []string{envVerbose}},
		&cli.BoolFlag{Name: "no-progress", Usage: "no progress bars on stderr (they are shown only when stderr is a terminal)", EnvVars: []string{envNoProgress}},
		&cli.BoolFlag{Name: "version", Usage: "print the version (as ledger version does) and exit"},
		waitGlobalFlag(),
	}
}

// environmentNotes are the environment variables that are not a flag's
// (docs/CLI.md lists them beside the flags' own).
var environmentNotes = [][2]string{
	{"NO_COLOR", "when set to anything but the empty string, no colour (https://no-color.org); colour is used only on a terminal anyway"},
	{"TERM", "`dumb` turns colour off"},
}

// setupCommands applies the conventions to every command below a parent
// (named by path, "ledger key"): a flag error is a usage error (exit 2,
// one line, no help text); a command group run without a known
// subcommand is a usage error; no command lists a `help` subcommand of
// its own (`ledger help CMD SUB` and `CMD SUB --help` serve).
func setupCommands(cmds []*cli.Command, path string) {
	for _, cmd := range cmds {
		cmd.HideHelpCommand = true
		full := path + " " + cmd.Name
		cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			return usageErrorf("%s: %v", strings.TrimPrefix(full, "ledger "), err)
		}
		if len(cmd.Subcommands) > 0 {
			if cmd.Action == nil {
				cmd.Action = groupAction(full, cmd)
			}
			setupCommands(cmd.Subcommands, full)
		}
	}
}

// groupAction refuses a command group run without a known subcommand.
func groupAction(full string, cmd *cli.Command) cli.ActionFunc {
	return func(c *cli.Context) error {
		var names []string
		for _, s := range cmd.Subcommands {
			if !s.Hidden {
				names = append(names, s.Name)
			}
		}
		short := strings.TrimPrefix(full, "ledger ")
		if c.NArg() > 0 {
			return usageErrorf("%s: unknown subcommand %q: want %s (see ledger help %s)", short, c.Args().First(), strings.Join(names, ", "), short)
		}
		return usageErrorf("%s: missing subcommand: want %s (see ledger help %s)", short, strings.Join(names, ", "), short)
	}
}

// helpArgs rewrites `ledger [global flags] help CMD [SUB...]` as `ledger
// [global flags] CMD [SUB...] --help`, so that help reaches subcommands at
// any depth; `ledger help` alone shows the application's help. Other
// arguments are returned as they are.
func helpArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "--" {
		if takesValue(app.Flags, args[i]) && !strings.Contains(args[i], "=") {
			i++
		}
		i++
	}
	if i >= len(args) || (args[i] != "help" && args[i] != "h") {
		return args
	}
	out := slices.Clone(args[:i])
	out = append(out, args[i+1:]...)
	return append(out, "--help")
}

// reportPanic turns a recovered panic into one line on stderr (and the
// stack with --verbose or LEDGER_VERBOSE) and exit code 1.
func reportPanic(e *env, args []string, v any, stack []byte) int {
	_, _ = fmt.Fprintf(e.stderr, "ledger: internal error: %s (run with --verbose for details)\n", oneLine(fmt.Sprint(v)))
	if e.verbose || verboseRequested(args, e.lookupEnv) {
		_, _ = e.stderr.Write(stack)
	}
	return exitInternal
}

// verboseRequested reports whether --verbose or LEDGER_VERBOSE asked for
// details: the panic may have come before the flags were parsed.
func verboseRequested(args []string, getenv func(string) string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--verbose" || a == "-verbose" || a == "--verbose=true" || a == "-verbose=true" {
			return true
		}
	}
	switch strings.ToLower(getenv(envVerbose)) {
	case "1", "t", "true":
		return true
	}
	return false
}

// lookupEnv reads one environment variable (e.getenv, or the process's).
func (e *env) lookupEnv(name string) string {
	if e.getenv != nil {
		return e.getenv(name)
	}
	return os.Getenv(name)
}
