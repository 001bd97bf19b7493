// Package index holds the projections derived only from the ledger's log:
// reputation per agent, per signer and per task type (counts, first and
// last seen, time-decayed Bayesian score), VRF verdict counts per tier, AVIR
// attestation history per system and per verifier key, and the per-day
// witness-bundle rollups behind scorecards and trends (with per-bundle
// records for the partial days at a window's edges, rollback records and
// regression entries).
//
// Index is a ledger.Projector: every projection is written in the same
// Pebble batch as the event it comes from, under the x/ keyspace
// (ledger.ProjectionPrefix), and is computed from the event's leaf alone
// (ledger.Event.Attrs), so `ledger rebuild` reproduces it key for key.
// Queries read a Reader (a ledger.Snapshot).
//
// The package must not write outside x/, decode documents, or depend on
// anything above the ledger.
package index
