// Package admit decides what enters the log. It decodes and verifies each
// document (codec/inspect, with the registry's HMAC keys and policies),
// applies trust (unsigned documents, trusted signers), records the facts
// projections need in the leaf (index/attrs), and hands the store Entries
// in chain order. Its Rules run inside the store's sequencer, in sequence
// order: a receipt must continue its predecessor (once, at the next
// position, for the same agent) and a bundle or rollback links to its
// task's latest event. Rules.Entries is the one description of the keys
// those rules keep (chain/, next/, task/, agent/), for the writer, the
// audit and a rebuild; Rules.Version names that description, so that a
// ledger written under an earlier one rebuilds them. It also streams large
// appends (AppendStream), imports archives atomically (Import) and answers
// chain, task-history and agent-head questions (AgentHead: an agent's
// latest receipt, which `ledger run vrf --agent` continues).
//
// It must not open the store's Pebble database or know its key layout
// beyond its own keyspaces; it reads and writes through package ledger.
//
// Start reading at admit.go (Open, Append) and rules.go.
package admit
