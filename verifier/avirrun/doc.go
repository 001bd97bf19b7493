// Package avirrun makes the ledger an AVIR verifier: it runs the
// benchmarks of an AVIR specification (avir-protocol-v1.md) in the Linux
// sandbox of verifier/sandbox, computes their statistics and verdicts as
// the reference implementation does, hashes the real environment, and
// signs the attestation. docs/AVIR-RUN.md is the user's page; this
// comment is the reader's map.
//
// # Use
//
//	spec, err := avir.ParseSpec(data)
//	r, err := sandbox.New(sandbox.Config{})
//	res, err := avirrun.Run(ctx, r, spec, avirrun.Options{Key: key, SpecSource: path})
//	// errors.Is(err, avirrun.ErrInvalid): res says which benchmark was not
//	// measured and why; nothing was signed.
//	// Otherwise res.Attestation.Bytes() is the signed attestation, over
//	// res.Spec (the specification, or with Options.BenchmarkID the
//	// specification reduced to that benchmark).
//
// # Where to start reading
//
//   - run.go: Run, Options, Result; deciding what is runnable, running
//     each benchmark, turning the driver's report into steps and values.
//   - driver.go: the shell driver that runs one benchmark's setup,
//     warm-up runs, measured runs and teardown in ONE sandbox (so they
//     share its working directory), its report protocol on file
//     descriptor 3, and the parsing of a run's last line into a number.
//   - attest.go: codec/avir's BuildAttestation computes statistics,
//     verdicts and hashes exactly as the reference; this package adds
//     each item's ledger_run object (command, timeout, values, sandbox),
//     writes nulls into the environment, recomputes the hashes it
//     changed, signs with avir.Sign and checks the result with
//     avir.VerifyReport against the specification before returning it.
//   - spec.go: the extension fields (command, timeout_seconds) and the
//     reduced specification of Options.BenchmarkID.
//   - env.go: DetectEnvironment.
//
// # Helpers written here rather than exported from codec/avir
//
// The chain hash (SHA-256 of spec_hash + env_hash + results_hash +
// timestamp), canonical_hash and the environment object with nulls are
// re-implemented in attest.go and env.go (a few lines each), because
// codec/avir keeps its own unexported and its builder writes the
// environment's container and python_version as strings only.
//
// This package owns turning a specification into measurements and a
// signed attestation. It must not touch the ledger, its files or keys
// (the signing key is passed in), the network, or the host's file system
// beyond reading /proc/meminfo, /sys/devices/system/cpu/online and the
// container markers; benchmark commands run only through the Runner it
// is given.
package avirrun
