// Package registry keeps the settings a ledger checks documents with: the
// HMAC keys that verify witness bundles (secrets, kept by the store in
// 0600 files outside Pebble), the governance policies bundles are
// evaluated against (the three ADR-035 defaults, always known, and the
// ones registered, kept as store settings), and the trusted signers (a
// setting: while there are none, any Ed25519 signer is admitted). It
// resolves a policy given by hash or name. It knows nothing of the log; the admission layer (package
// admit) reads it, the CLI manages it. It must not import admit or
// anything above.
package registry
