// Package scorecard will compute ADR-035 scorecards, acceptance criteria and
// cost-to-outcome trends from the index's rollups. It reads projections and
// never writes to the ledger. Not implemented yet (the projections issue).
package scorecard
