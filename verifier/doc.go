// Package verifier is the home of the verifier engine: it runs submitted
// work in a Linux sandbox and signs what it finds, as the documents the
// ledger keeps. The work is in its sub-packages:
//
//   - verifier/sandbox runs a command in namespaces with limits (no
//     network, private file system, its own PID namespace);
//   - verifier/vrfrun decides VRF verification requests as the reference
//     verifier does and signs the receipt;
//   - verifier/avirrun runs AVIR benchmarks and signs the attestation;
//   - verifier/witness builds RVWW witness bundles from their parts.
//
// None of them opens a ledger: the CLI appends what they sign through the
// ordinary admission path (ledger/admit), so a verifier's receipt is
// checked like any other document. Submitted code runs only inside the
// sandbox, never in the process that holds the ledger's keys.
package verifier
