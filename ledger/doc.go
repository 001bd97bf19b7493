// Package ledger is the store: an append-only, tamper-evident event log
// that only stores. Every entry it is given becomes an event with a dense
// sequence number, its original bytes and a leaf of an RFC 6962 Merkle
// tree whose stored hashes live in the same Pebble store. One sequencer
// group-commits batches; a batch's callers are answered after its WAL sync
// and the write of its signed checkpoint to the checkpoint log kept outside
// Pebble, and the batch is published (size, signed checkpoint, the
// snapshot readers read through) only after that log's sync too (the
// invariants are at the top of sequencer.go). It checks the store against what it signed when it
// opens, checks what it serves, produces inclusion and consistency proofs,
// exports, audits and rebuilds.
//
// It owns the on-disk format (docs/FORMAT.md), identity (replay and
// conflict detection), the log key, settings and secrets storage, and the
// directory's concurrency between processes: the writer lock (lock.go)
// and the read copies readers beside a writer read (copies.go); the
// refusal journal (refusals.go): every refused entry is recorded, with
// the agent and submitter its caller names, in the batch that refused it,
// bounded to the newest records, with per-agent counts by reason; it is
// not evidence (no leaf, no projection, no audit). It records which
// versions of the Rules' and Projectors' layouts the derived entries are
// complete for (derived.go) and rebuilds those of an older layout. Log
// queries can be narrowed by an index's Selector; FindPrefix finds events
// by a prefix of their identity or digest. It knows
// nothing of what documents say: admission (decoding, trust, receipt
// chains, task histories) is package ledger/admit, plugged in as Rules run
// in sequence order; the registries of keys and policies are package
// ledger/registry; projections plug in as Projectors written in the
// event's own batch. Checkpoint, proof and leaf formats are package proof,
// which needs no storage. It must not import index, admit, registry,
// scorecard, replay, verifier or cmd.
//
// Start reading at entry.go (what goes in), sequencer.go (how) and read.go
// (what comes out).
package ledger
