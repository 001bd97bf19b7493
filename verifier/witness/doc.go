// Package witness builds RVWW witness bundles (ADR-035) from their parts,
// so that a CI pipeline without the Rust reference (rvf-runtime) can
// produce them: spec, plan, a trace of tool calls, diff, test log and
// postmortem (each optional), the outcome, the governance policy, the task
// id, the creation time, the retry count, and an optional HMAC key. The
// bytes it writes are those the reference's WitnessBuilder writes for the
// same parts; the command `ledger witness build` calls it.
//
// Start with ParseTrace (the trace file), ParseTaskID, ParseOutcome and
// DefaultPolicy or ParsePolicy (the flags), then Build. Every malformed
// input is an *InputError naming the input, line, column and field; it
// wraps codec.ErrMalformed.
//
// # Trace format
//
// The trace is JSON Lines: one JSON object per line, one line per tool
// call, in call order; blank lines are skipped. Example:
//
//	{"tool":"Read","args":{"path":"src/pager.rs"},"result_hash":"7031e48d5d70d47b","latency_ms":40,"cost_microdollars":120,"tokens":600}
//	{"tool":"Bash","args":"cargo test","result":{"exit":0},"latency_ms":2100,"policy_check":"allowed"}
//
// Keys (any other key is an error, so a misspelt figure cannot silently
// record 0):
//   - "tool" (required): the tool name, written as the record's action.
//     It is what the policy judges, so it must be the bare tool name
//     ("Bash", not "Bash: cargo test"). Non-empty, at most 65535 bytes.
//   - "args" or "args_hash", "result" or "result_hash" (each optional, at
//     most one of a pair): the record's two 8-byte hashes. A "*_hash" is
//     the 8 bytes themselves as 16 hex digits. An "args" or "result" value
//     is any JSON value, recorded as the first 8 bytes of SHA-256 over its
//     canonical JSON, i.e. Python's
//     json.dumps(value, sort_keys=True, separators=(",", ":")) with the
//     default ensure_ascii (codec/canonjson), so a producer in any language
//     can recompute it; a string value is hashed with its quotes. Absent:
//     8 zero bytes.
//   - "latency_ms", "cost_microdollars", "tokens" (optional, default 0):
//     integers from 0 to 4294967295.
//   - "policy_check" (optional): "allowed", "denied" or "confirmed", the
//     decision the producer recorded. When present it must equal the
//     policy's decision for the tool, or Build fails naming the line.
//
// # Policy enforcement (ADR-035 section 3.5)
//
// Build checks each call at record time as the section lists, and as the
// reference's record_tool_call does: the deny list first, then the mode's
// rule (restricted: allow list only; approved: Confirmed; autonomous:
// Allowed), and after each call the cumulative cost and the call count
// against the budgets; all violations are recorded. Where the section
// leaves room:
//   - Every call is recorded, denied ones included, with policy_check
//     Denied. "Always blocks" is the decision written for the call; the
//     builder records calls already made, and dropping one would erase the
//     evidence of the unsafe action (the reference records it too).
//   - Violations (denied_tool, cost_budget_exceeded,
//     call_budget_exceeded) are computed by governance.Evaluate and
//     returned in Result.Violations, so they are exactly what codec/inspect
//     reports for the bundle. A budget violation is reported once, at the
//     call that broke the budget (the reference repeats it after every
//     later call).
//   - Violations do not stop the build and do not change the outcome: the
//     outcome says what the tests said, and the scorecard counts
//     violations from the ledger's governance check of the trace, which
//     finds the same ones. A caller that must fail on a violation checks
//     Result.Violations.
//   - A trace line whose policy_check differs from the policy's decision
//     is an error: the bundle would carry a decision the policy did not
//     make.
//   - Rollbacks (autonomous mode's "automatic rollback on violation") are
//     not part of the bundle format and are not recorded.
//
// A bundle built under a custom policy (a policy file) names it only by
// hash: codec/inspect evaluates its trace once that policy is known to it
// (inspect.Options.Policies, `ledger policy add`).
//
// This package owns turning parts into bundle bytes. The wire format is
// codec/rvww's (Encode) and the policies and their evaluation are
// codec/governance's; it reads no files, keys or ledger state itself:
// callers pass the bytes in.
package witness
