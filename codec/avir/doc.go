// Package avir reads, verifies and builds documents of the AVIR protocol
// (AI-Verified Independent Replication, avir-protocol-v1.md): benchmark
// specifications and the signed attestations that report a verifier's
// replication of them.
//
// Where to start reading:
//
//   - spec.go: ParseSpec reads a specification in JSON or YAML (YAML 1.1
//     typed as the reference's PyYAML safe_load types it, see yaml.go),
//     validates it against the Appendix A.1 JSON Schema (schemas/, checked
//     with github.com/santhosh-tekuri/jsonschema/v6) and the semantic rules,
//     and computes the spec hash over the reference's normalized form.
//   - attestation.go: ParseAttestation reads an attestation in either form
//     (reference items named benchmark_id, spec-text items named id)
//     against the Appendix A.2 schema plus a typed reading of every field.
//   - verify.go: Verify recomputes every hash, the signature, each
//     benchmark verdict, the summary, the overall verdict and the level's
//     evidence, and names each disagreement in a codec.Finding.
//   - build.go, pynum.go: BuildAttestation and Sign write attestations
//     exactly as the reference does, down to Python's int-versus-float
//     arithmetic.
//
// Parse errors are *codec.MalformedError values listing every problem
// found, each with the dotted field path ("results.benchmarks[0].verdict")
// and the byte offset where it is known. Verification failures are
// []codec.Finding with stable snake_case codes.
//
// The package owns only the AVIR encodings. It must not touch the ledger,
// the disk or the network, and imports no package of this module other
// than codec and codec/canonjson. It keeps no package-level mutable
// state: compiled schemas live in a Parser the caller owns.
package avir
