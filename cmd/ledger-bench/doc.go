// Command ledger-bench measures the ledger: verified durable ingest, replay
// checks, lookups, inclusion proofs, bytes on disk, projection queries and
// rebuilds, each figure beside a limit measured in the same run (package
// internal/bench, which `ledger-bench --help` describes figure by figure).
// `make bench` builds it to bin/ledger-bench and runs it through
// scripts/bench.sh.
//
// It owns the command line only: it parses flags (urfave/cli/v2), calls
// bench.Run and maps errors to exit codes; it must hold no measurement of
// its own. It is a binary of its own so that the ledger binary (cmd/ledger)
// links neither the harness nor the corpus generator; cmd/ledger must not
// import it or internal/bench.
//
// Exit codes: 0 success, 1 internal error, 2 usage error.
package main
