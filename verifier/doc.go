// Package verifier will run VRF test suites and checks and AVIR benchmarks in
// a Linux sandbox, sign the resulting receipt or attestation and append it.
// Not implemented yet.
package verifier
