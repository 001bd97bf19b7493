// Command ledger is the command-line interface of the ledger: inspecting
// documents now, and every ledger operation as it lands. It parses flags
// (urfave/cli/v2), reads inputs, calls the library packages and prints
// their results; it holds no logic of its own that a library caller would
// need.
//
// The conventions every command follows live in conventions.go (global
// flags and their LEDGER_* environment variables, usage errors: exit 2 and
// one line at every level, `ledger help CMD SUB`, a panic as one line),
// term.go (terminals and colour, never with NO_COLOR), progress.go
// (progress bars on a terminal's stderr), version.go, completion.go
// (bash, zsh and fish scripts) and jsonout.go (--json shapes). clidoc.go
// generates docs/CLI.md from the command definitions; TestCLIDoc keeps it
// current (-update rewrites it).
//
// Lines of text printed with fmt.Fprint* do not check the write's error
// (`_, _ = fmt.Fprintf`): on a closed pipe the process ends with SIGPIPE
// anyway. Output a program reads (--json lines, raw documents, checkpoints
// and proofs) is checked, and a failed write fails the command.
//
// Exit codes (also in `ledger --help` and docs/CLI.md):
//
//	0  success: every input valid (or appended)
//	1  internal error
//	2  usage error
//	3  some input could not be read or parsed, or fails its schema
//	4  some input failed verification (signature, hash, recomputed verdict, governance); (audit) a divergence;
//	   (run avir) a benchmark could not be measured: verdict INVALID, nothing signed
//	5  (append) some input was refused as a replay or conflict
//	6  (scorecard) some ADR-035 acceptance criterion is not met; (run --fail-unless-pass) a verdict is not pass
//	7  the ledger is damaged or its stored data was altered
//	8  the ledger is busy: another process held it for longer than --wait
//	   (LEDGER_WAIT, default 5s; 0 does not wait); the message names the
//	   holder from DIR/lock.info
//	9  (scorecard) the window holds no witness bundles: nothing was judged
//
// When inputs fail in several ways the lowest failure code is returned.
package main
