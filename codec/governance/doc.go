// Package governance holds the ADR-035 governance policies (the restricted,
// approved and autonomous defaults and custom policies read from policy
// files), the policy hash that RVWW witness bundles carry in their header,
// and the evaluation of a bundle's tool-call trace against a policy.
//
// Start with Policy (Check, Hash), then Evaluate; ParsePolicy and
// Policy.MarshalJSON read and write policy files.
//
// The rules follow the reference builder (rvf-runtime witness.rs): the deny
// list is checked first, then the mode's rule (restricted: allow list only;
// approved: every call Confirmed; autonomous: every call Allowed), then the
// cost and call-count budgets after each call. Where the reference repeats a
// budget violation after every later call, Evaluate reports it once, at the
// call that first broke the budget.
//
// This package owns policies and their evaluation only. It must not import
// codec/rvww (nor rvww this package): Evaluate takes its own Call type and
// the ledger wires the two together. Like every codec package it never
// touches the disk, the network or the ledger.
package governance
