// Package ledger is the append-only event log: every accepted document
// becomes an event with a dense sequence number, its original bytes, its
// links (receipt chains, task history) and a leaf of an RFC 6962 Merkle tree
// whose stored hashes live in the same Pebble store. Appends go through one
// sequencer that group-commits batches with a synchronous write before any
// append is acknowledged; each batch also writes a signed checkpoint
// (C2SP tlog-checkpoint). The package produces and checks inclusion and
// consistency proofs (golang.org/x/mod/sumdb/tlog and sumdb/note).
//
// It owns the on-disk format (keys and event encoding, see
// docs/FORMAT.md), replay detection on document identities, the rules that
// admit a document (trust, chains), and the checkpoint key. It reads
// documents only through the codec packages and must not import index,
// scorecard, replay, verifier or cmd: projections plug in through the
// Projector interface and are written in the event's own batch.
//
// Start reading at ledger.go (Open, Append) and sequencer.go.
package ledger
