// Command ledger is the command-line interface of the ledger: inspecting
// documents now, and every ledger operation as it lands. It parses flags
// (urfave/cli/v2), reads inputs, calls the library packages and prints
// their results; it holds no logic of its own that a library caller would
// need.
//
// Lines of text printed with fmt.Fprint* do not check the write's error
// (`_, _ = fmt.Fprintf`): on a closed pipe the process ends with SIGPIPE
// anyway. Output a program reads (--json lines, raw documents, checkpoints
// and proofs) is checked, and a failed write fails the command.
//
// Exit codes (also in `ledger --help`):
//
//	0  success: every input valid (or appended)
//	1  internal error
//	2  usage error
//	3  some input could not be read or parsed, or fails its schema
//	4  some input failed verification (signature, hash, recomputed verdict, governance);
//	   (run avir) a benchmark could not be measured: verdict INVALID, nothing signed
//	5  (append) some input was refused as a replay or conflict
//	6  (scorecard) some ADR-035 acceptance criterion is not met; (run --fail-unless-pass) a verdict is not pass
//
// When inputs fail in several ways the lowest of 3 and 4 is returned.
package main
