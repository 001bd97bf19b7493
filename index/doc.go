// Package index holds the projections derived only from the ledger's log:
// reputation per agent, per signer and per task type (counts, first and
// last seen, time-decayed Bayesian score), VRF verdict counts per tier, AVIR
// attestation history per system and per verifier key, and the per-day
// witness-bundle rollups behind scorecards and trends (with per-bundle
// records for the partial days at a window's edges, rollback records and
// regression entries), and the investigation keyspaces: every event
// under each agent acting in it and under its subject (select.go: who the
// agents of each kind are; Events and Selection answer "everything agent X
// did" without scanning the log, and plug into ledger.Query as a
// Selector).
//
// Index is a ledger.Projector: every projection is written in the same
// Pebble batch as the event it comes from, under the x/ keyspace
// (ledger.ProjectionPrefix), and is computed from the event's leaf alone
// (ledger.Event.Attrs), so `ledger rebuild` reproduces it key for key.
// Queries read a Reader (a ledger.Snapshot); those under a policy or mode
// filter that the rollups cannot answer alone (the days a filter's bundles
// span, the bundles themselves for a filtered trend's regressions) are in
// filtered.go.
//
// The leaf attributes are typed: package index/attrs owns their format
// (leaf version 1) with a record per kind (attrs.Receipt, Attestation,
// Bundle with its Violations, Rollback), the encoder the ledger records
// (attrs.Of, from a document's inspect.Result) and strict decoders. Project
// decodes an event's attributes with them and returns an error naming the
// event's seq, its kind and the field (wrapping attrs.ErrInvalid) when they
// do not decode, so an append or a rebuild fails instead of projecting
// zeros.
//
// Every decoder of stored keys and values checks lengths and ranges and
// accepts only what the index writes (minimal varints, flags 0 or 1, no
// trailing bytes); anything else is an error wrapping ErrCorrupt that
// names the key (quoted, cut to 80 bytes), the field, its byte offset and
// the reason. Project (which reads aggregates back) and every query
// return these errors to their callers; no stored bytes make the package
// panic or read as zero.
//
// The package must not write outside x/, decode documents, or depend on
// anything above the ledger.
package index
