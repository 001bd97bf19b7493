// Package audit is the full audit of a ledger: package ledger's Audit
// (documents against their leaves, leaves and every stored tree hash
// against the tree recomputed from them, every signed checkpoint, links,
// and the derived entries recomputed into a scratch store and compared key
// by key) with what only the layers above the store know: admission's
// re-verification of every document's signature or HMAC and of the facts
// its leaf records (admit.Ledger.AuditVerifier, with the registered HMAC
// keys and policies), and the index's projections, recomputed and
// compared with the stored ones.
//
// It composes those packages and owns nothing of its own: no key, no
// format, no state. It must not open the store's Pebble database (package
// ledger does) nor print anything (cmd/ledger does).
package audit
