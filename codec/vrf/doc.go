// Package vrf reads, verifies and issues VRF (Verification Receipt Format
// v1.0) receipts in both encodings found in the wild: the form the
// specification text describes (FormSpec: a "task" object, hashes named
// specification/output/tests, signer_id often base64) and the form the
// reference ClawBizarre verify server emits (FormReference: top-level
// task_id/task_type, hashes input_hash/output_hash/suite_hash/
// environment_hash/algorithm, signer_id "ed25519:<hex>").
//
// Where to start reading:
//
//   - Parse (parse.go) turns bytes into a *Receipt. It enforces every MUST
//     of the specification's Conformance section and reports all schema
//     problems at once as a *codec.MalformedError whose findings carry the
//     dotted field path ("results.details[2].status") and the byte offset
//     of the offending value.
//   - (*Receipt).Verify (verify.go) checks what a well-formed receipt
//     claims: result counts against the details, the verdict against the
//     counts (the reference rule), the content hash against the canonical
//     JSON of the receipt, and the Ed25519 signature.
//   - Sign and Draft (sign.go) issue receipts in the reference form, which
//     the reference verifier accepts unchanged.
//
// Hashing uses codec/canonjson, the Python-compatible canonical JSON
// encoder: content_hash is the lowercase hex SHA-256 of
// json.dumps(receipt without "signature", sort_keys=True,
// separators=(",", ":")) and the Ed25519 message is that 64-character hex
// string. A receipt hashed with ensure_ascii=False (the specification text
// only says "UTF-8 encoding") is accepted too, and the Summary says which
// canonicalization matched.
//
// This package owns the VRF receipt format only. It must not touch the
// ledger, the disk or the network, and it imports no package of this module
// other than codec and codec/canonjson.
package vrf
