// Package replay replays proof documents deterministically: it walks what
// a decoded document records, recomputes what can be recomputed from the
// document alone, and reports claim beside recomputation, as text for a
// terminal and as JSON.
//
// Where to start reading:
//
//   - bundle.go: Bundle replays an RVWW witness bundle (ADR-035 section 5):
//     signature status, spec and plan, the trace one tool call at a time
//     with the recorded policy decision beside the one codec/governance
//     recomputes and the running cost and call count against the policy's
//     budgets, the diff, the test log, and the outcome check.
//   - outcome.go: CheckOutcome judges a bundle's claimed outcome against
//     the test counts of its TEST_LOG (matches, contradicts or
//     inconclusive); the table of rules is at the top of the file.
//   - testlog (sub-package): recognises test runners' summary lines and
//     adds up their counts.
//   - receipt.go, attestation.go: Receipt re-verifies a VRF receipt and
//     Attestation recomputes an AVIR attestation's verdicts, each listing
//     claim, recomputed value and agreement field by field.
//   - text.go: the text rendering (untrusted text is made inert for a
//     terminal; colour only when the caller asks).
//
// Every report is a plain value: the same input gives the same bytes, in
// either rendering (no clock, no map iteration, no environment). The
// caller decides colour (from the terminal and NO_COLOR) and passes what
// only it knows: whether a bundle's signature verified and under which key,
// and the policy the ledger evaluated it against.
//
// This package owns replay of documents and test-log reading. It takes
// documents already decoded by the codec packages and must not touch the
// store: it does not import the ledger or the index, opens no file and
// writes nothing but the io.Writer it is handed. Chain and standing checks
// that need the ledger belong to its caller.
package replay
