// Package proof checks what the ledger publishes, without the ledger: signed
// checkpoints (C2SP tlog-checkpoint), inclusion proofs (C2SP tlog-proof with
// the event's Merkle leaf as extra data), consistency proofs
// (ledger.consistency-proof@v1), and the Merkle leaf itself (Leaf, its
// canonical JSON encoding and its RFC 6962 hash). It also holds a streaming
// root builder (TreeBuilder) for code that recomputes a tree root while it
// reads the log in order.
//
// Auditors, witnesses and clients import this package alone; the ledger
// uses it to write the same bytes. The byte formats are described in
// docs/FORMAT.md ("Merkle leaf", "Checkpoints", "Proofs"); a test keeps the
// worked examples there in step with Leaf.Encode.
//
// Every parser here is strict: it accepts exactly what the ledger writes
// (canonical decimals, strict base64, no carriage returns, a canonical
// leaf), refuses input larger than MaxProofSize, and quotes at most a few
// dozen bytes of an offending line in its error. Errors wrap ErrMalformed
// (the input does not parse), ErrInvalid (it parses but does not verify) or
// ErrVerifierKey (the verifier key is unusable).
//
// The package owns these formats only. It must not import storage
// (Pebble), the ledger package, cmd, or anything above codec: its imports
// are the standard library, golang.org/x/mod/sumdb/note and tlog, codec
// (for codec.Kind) and codec/canonjson.
//
// Start reading at leaf.go (the leaf) and inclusion.go (Verify).
package proof
