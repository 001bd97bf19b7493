// Package codec holds what every document codec shares: the document kinds,
// the two error classes callers branch on (ErrMalformed for input that cannot
// be read or fails its schema, ErrInvalid for input that reads but fails
// verification), the Finding type that names each problem, and the Summary
// that the ledger and the CLI read from any decoded document.
//
// The codecs themselves live in sub-packages:
//
//   - codec/canonjson: Python-compatible canonical JSON (the hashing basis of
//     VRF receipts and AVIR attestations)
//   - codec/vrf: VRF receipts, both the spec-text and the reference form
//   - codec/avir: AVIR specifications and attestations
//   - codec/rvww: RVWW binary witness bundles
//   - codec/governance: ADR-035 governance policies and trace evaluation
//   - codec/keys: Ed25519 and HMAC key files
//   - codec/inspect: kind detection and one report shape for all kinds
//
// This package and its sub-packages are pure: they never touch the ledger,
// the disk (except codec/keys reading key files it is handed) or the network,
// and they never depend on any other package of this module.
package codec
