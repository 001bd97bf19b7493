// Package index will hold the projections derived only from the ledger's
// log: reputation per agent and signer, per-day scorecard rollups, chain
// links and time indexes. Each projection is a ledger.Projector written in
// the same Pebble batch as the event it comes from, under the x/ keyspace,
// and can be rebuilt from the log at any time.
//
// It must read documents only from ledger events and never write outside
// ledger.ProjectionPrefix. Not implemented yet (the projections issue).
package index
