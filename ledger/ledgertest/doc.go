// Package ledgertest generates deterministic, realistic corpora of the
// documents the ledger records, for tests, benchmarks and the demo: signed
// VRF receipt chains, HMAC-signed RVWW witness bundles and signed AVIR
// attestations (optionally with their AVIR specifications).
//
// A Config fixes everything: the same Config yields byte-identical
// documents, keys and arrival times on every machine and at any degree of
// parallelism. All randomness comes from math/rand/v2 PCG generators seeded
// from Config.Seed; keys are derived from the seed; every time is derived
// from Config.Start, Config.Span and the seed, never from the clock.
//
// Generate returns a whole Corpus in memory. Stream hands documents to a
// callback one at a time, in the same order, holding only a bounded window
// of them: use it for corpora of a million documents. Both build documents
// on several goroutines (Config.Workers) and deliver them in order.
//
// The documents come in a valid append order (a receipt after the receipt
// it continues), with non-decreasing arrival times, and every one of them
// verifies with the corpus keys (see Keys): receipts are signed by one of
// several verifier keys, bundles with the HMAC key, attestations with the
// AVIR key. Bundles record the policy decisions their governance policy
// makes, so they are clean except for a configurable fraction that breaks
// the policy on purpose (a denied tool under the restricted policy, a cost
// or call budget overrun); such bundles are valid documents whose
// violations the ledger records.
//
// This package owns document generation only. It uses the codec packages
// to build and sign documents and must not import package ledger, so that
// the ledger's own tests can use it. Start reading at config.go (Config,
// Keys) and generate.go (Generate, Stream); receipts.go, bundles.go,
// attestations.go and text.go build each kind.
package ledgertest
