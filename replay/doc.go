// Package replay will replay a witness bundle deterministically, re-verify
// and audit the whole log, and rebuild projections. It reads the ledger and
// rewrites only projections. Not implemented yet.
package replay
