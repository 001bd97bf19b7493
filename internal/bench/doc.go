// Package bench is the benchmark harness behind cmd/ledger-bench (and
// `make bench`): it generates deterministic corpora (package
// ledger/ledgertest), drives the ledger through its public API (package
// ledger, ledger/admit, index, scorecard) and measures verified durable
// ingest, replay checks, lookups, inclusion proofs, bytes on disk, the
// full audit (ledger/audit), projection queries and rebuilds, and (verifier/vrfrun in
// verifier/sandbox) the sandbox's cost per VRF test and verification
// throughput, each figure beside a limit measured in the same run on the
// same machine. Run performs one run and prints the
// report (and writes it as JSON); Description says what every figure and
// its limit measure.
//
// It owns the report's figures, their limits and the report and JSON
// formats (docs/BENCHMARKS.md). Its limits that need Pebble keep bare
// Pebble stores of their own, opened with ledger.PebbleOptions and filled
// with the same data the figure works on, read through the public API.
// It must not know the ledger's store format or key layout, never opens a
// ledger's own Pebble store, and writes nothing outside its work
// directory. Only commands and tests import it: the ledger binary must not
// link it (nor, through it, the corpus generator).
package bench
