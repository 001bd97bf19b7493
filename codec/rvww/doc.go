// Package rvww reads, verifies and writes RVWW witness bundles (ADR-035):
// one binary record per agent task execution, made of a 64-byte
// little-endian header, TLV sections (SPEC, PLAN, TRACE, DIFF, TEST_LOG,
// POSTMORTEM, and unknown tags kept for forward compatibility) and, when the
// SIGNED flag is set, a trailing 32-byte HMAC-SHA256.
//
// Start with Decode, then Bundle.Verify and Bundle.Summary; Encode is the
// inverse of Decode and writes exactly what the reference builder
// (rvf-runtime witness.rs) writes.
//
// Decode is strict where the reference parser is lax: trailing bytes,
// truncation, duplicate known sections, counts and flags that disagree with
// the sections present, a TRACE that does not parse into whole records, a
// non-zero record pad byte and non-UTF-8 tool names are all malformed, each
// reported as a codec.Finding with the field name and byte offset. No length
// field can make Decode allocate more than a copy of its input.
//
// Verify checks what a well-formed bundle claims: the header totals against
// the trace, and the HMAC against the keys the caller supplies. A signed
// bundle is never reported valid without a key that verifies it. An unsigned
// bundle verifies (Signed reports false); a caller that requires signatures
// must check Signed itself, because stripping a signature and clearing the
// SIGNED flag yields a well-formed unsigned bundle.
//
// This package owns the RVWW wire format only. Governance policies and the
// evaluation of a trace against a policy live in codec/governance; this
// package must not import it (and it must not import this one): the ledger
// wires the two together, passing each ToolCall's Action, PolicyCheck and
// CostMicrodollars to governance.Evaluate. Like every codec package it never
// touches the disk, the network or the ledger.
package rvww
