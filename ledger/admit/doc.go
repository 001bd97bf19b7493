// Package admit decides what enters the log. It decodes and verifies each
// document (codec/inspect, with the registry's HMAC keys and policies),
// applies trust (unsigned documents, trusted signers), records the facts
// projections need in the leaf (index/attrs), and hands the store Entries
// in chain order. Its Rules run inside the store's sequencer, in sequence
// order: a receipt must continue its predecessor (once, at the next
// position, for the same agent) and a bundle or rollback links to its
// task's latest event. Rules.Entries is the one description of the keys
// those rules keep (chain/, next/, task/; agent-chain/: the first receipt
// of each of an agent's chains; agent/: an agent's receipts, the last its
// latest), for the writer, the audit and a rebuild (Rules.DerivedVersion
// names that description, so that a ledger written under an earlier one
// rebuilds them). It also streams large appends (AppendStream), exports
// archives with the ledger's settings (Export: HMAC keys by key id, never
// their secrets) and imports them atomically (Import, restoring the
// settings and asking for the keys' secrets before anything is written),
// answers chain, agent-chain, task-history and agent-head questions
// (AgentHead: an agent's latest receipt, which `ledger run vrf --agent`
// continues), resolves what `get` and `prove` take (Resolve: a sequence
// number, an id, a task UUID, a unique id or digest prefix), and names the
// agent a refused document is attributed to in the store's refusal
// journal (only documents that verified and were trusted are attributed;
// Options.Submitter names who offered them).
//
// It must not open the store's Pebble database or know its key layout
// beyond its own keyspaces; it reads and writes through package ledger.
//
// Start reading at admit.go (Open, Append) and rules.go.
package admit
