// Package inspect tells the kind of a document from its bytes and runs the
// matching codec over it: decode, verify, and for witness bundles the
// governance evaluation of the trace against the bundle's policy. It gives
// one Result shape for every kind, which the CLI prints and the ledger's
// append path reads.
//
// It owns kind detection and the wiring between codecs (rvww and
// governance know nothing of each other). It does no I/O beyond what its
// caller hands it and must not import the ledger or anything above codec.
package inspect
