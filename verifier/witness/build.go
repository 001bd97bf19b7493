package witness

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/rvww"
)

// Parts are the contents of one witness bundle.
type Parts struct {
	// TaskID is the header's task_id. All zero means "none given": Build
	// then generates a random (version 4) UUID and reports it in
	// Result.TaskID. Give the same id to every attempt of one task.
	TaskID [16]byte
	// Created is the bundle's creation time (created_ns). The zero time
	// means "now", read from Options.Now.
	Created time.Time
	// Outcome is the task outcome. Mind that its zero value is
	// OutcomeSolved.
	Outcome rvww.Outcome
	// Policy is the governance policy the calls are recorded under
	// (required). Its mode is the header's governance_mode and its hash
	// the header's policy_hash.
	Policy *governance.Policy
	// RetryCount is the header's retry_count.
	RetryCount uint16
	// Spec, Plan, Diff, TestLog and Postmortem are the sections' contents.
	// A nil slice leaves the section out; a non-nil empty slice writes an
	// empty section.
	Spec, Plan, Diff, TestLog, Postmortem []byte
	// Calls are the tool calls, in the order they were made. The TRACE
	// section is written when there is at least one.
	Calls []Call
	// TraceInput names the trace in errors about a call, as ParseTrace's
	// input argument does; "" names it "trace".
	TraceInput string
}

// Options are how Build signs and where it takes what Parts leave open.
type Options struct {
	// Key is the raw HMAC-SHA256 key to sign with; nil writes an unsigned
	// bundle. An empty non-nil key is refused.
	Key []byte
	// Now returns the creation time when Parts.Created is zero; nil means
	// time.Now.
	Now func() time.Time
	// Rand is read for a generated task id; nil means crypto/rand.
	Rand io.Reader
	// Logger receives one debug record per bundle built; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Result is a built bundle and what recording its calls found.
type Result struct {
	// Bundle is the encoded witness bundle.
	Bundle []byte
	// TaskID and CreatedNS are the header's task_id and created_ns, given
	// or generated.
	TaskID    [16]byte
	CreatedNS uint64
	// Violations are the policy violations the calls commit, in trace
	// order: exactly what codec/inspect reports for Bundle when it knows
	// the policy. They are recorded, not refused (see the package
	// comment).
	Violations []governance.Violation
}

// Build records p's calls under p's policy and encodes the bundle as the
// reference builder (rvf-runtime WitnessBuilder) does: each call's
// policy_check is the policy's decision for its tool; the header carries
// the policy's hash and mode, the saturating sums of cost, latency and
// tokens, tool_call_count, the flags of the sections present, section_count
// and total_bundle_size (signature included); sections follow in the order
// SPEC, PLAN, TRACE, DIFF, TEST_LOG, POSTMORTEM; and with opts.Key the
// HMAC-SHA256 of everything before it closes the bundle.
//
// A call whose recorded decision differs from the policy's, an unusable
// tool name, more than 65535 calls, an unknown outcome, a missing policy or
// one with an unknown mode, or a creation time outside the u64 nanosecond
// range is an *InputError. Violations of the policy are not errors: they
// are returned in Result.Violations.
func Build(p Parts, opts Options) (*Result, error) {
	if p.Policy == nil {
		return nil, &InputError{Field: "policy", Reason: "missing: a bundle records its calls under a policy"}
	}
	pol := *p.Policy
	if !pol.Mode.Known() {
		return nil, &InputError{Field: "policy.mode", Reason: fmt.Sprintf("%s is not restricted, approved or autonomous", pol.Mode)}
	}
	if !p.Outcome.Known() {
		return nil, &InputError{Field: "outcome", Reason: fmt.Sprintf("%s is not solved, failed, skipped or errored", p.Outcome)}
	}
	if opts.Key != nil && len(opts.Key) == 0 {
		return nil, &InputError{Field: "key", Reason: "empty HMAC key"}
	}
	calls, govCalls, err := record(&p, pol)
	if err != nil {
		return nil, err
	}
	// Evaluate's Findings are empty: record wrote the policy's own
	// decisions, and the header carries the policy's mode.
	ev := governance.Evaluate(pol, uint8(pol.Mode), govCalls)

	taskID := p.TaskID
	if taskID == ([16]byte{}) {
		r := opts.Rand
		if r == nil {
			r = rand.Reader
		}
		u, err := uuid.NewRandomFromReader(r)
		if err != nil {
			return nil, fmt.Errorf("witness: generate task id: %w", err)
		}
		taskID = u
	}
	created := p.Created
	if created.IsZero() {
		now := opts.Now
		if now == nil {
			now = time.Now
		}
		created = now()
	}
	createdNS, err := unixNano(created)
	if err != nil {
		return nil, err
	}

	b := &rvww.Bundle{
		Header: rvww.Header{
			TaskID:     taskID,
			PolicyHash: pol.Hash(),
			CreatedNS:  createdNS,
			Outcome:    p.Outcome,
			Mode:       rvww.Mode(pol.Mode),
			RetryCount: p.RetryCount,
		},
		Spec: p.Spec, HasSpec: p.Spec != nil,
		Plan: p.Plan, HasPlan: p.Plan != nil,
		Diff: p.Diff, HasDiff: p.Diff != nil,
		TestLog: p.TestLog, HasTestLog: p.TestLog != nil,
		Postmortem: p.Postmortem, HasPostmortem: p.Postmortem != nil,
		Calls: calls,
	}
	out, err := rvww.Encode(b, opts.Key)
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}

	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log.LogAttrs(context.Background(), slog.LevelDebug, "witness bundle built",
		slog.String("task_id", uuid.UUID(taskID).String()),
		slog.Uint64("created_ns", createdNS),
		slog.String("policy", pol.HashString()),
		slog.String("outcome", p.Outcome.String()),
		slog.Int("tool_calls", len(calls)),
		slog.Int("violations", len(ev.Violations)),
		slog.Bool("signed", opts.Key != nil),
		slog.Int("bytes", len(out)))
	return &Result{Bundle: out, TaskID: taskID, CreatedNS: createdNS, Violations: ev.Violations}, nil
}

// record turns p's calls into trace records, each with the policy's
// decision for its tool (ADR-035 section 3.5, steps 1 and 2), and into the
// calls governance.Evaluate replays for the budgets (steps 3 to 5).
func record(p *Parts, pol governance.Policy) ([]rvww.ToolCall, []governance.Call, error) {
	if len(p.Calls) > rvww.MaxToolCalls {
		c := &p.Calls[rvww.MaxToolCalls]
		return nil, nil, p.callError(rvww.MaxToolCalls, c, "",
			fmt.Sprintf("more than %d tool calls: tool_call_count is a u16", rvww.MaxToolCalls))
	}
	calls := make([]rvww.ToolCall, len(p.Calls))
	govCalls := make([]governance.Call, len(p.Calls))
	for i := range p.Calls {
		c := &p.Calls[i]
		if reason := checkTool(c.Tool); reason != "" {
			return nil, nil, p.callError(i, c, keyTool, reason)
		}
		d := pol.Check(c.Tool)
		if c.HasRecorded && c.Recorded != d {
			return nil, nil, p.callError(i, c, keyPolicyCheck,
				fmt.Sprintf("recorded %s, but policy %s decides %s for %q", c.Recorded, policyLabel(pol), d, c.Tool))
		}
		calls[i] = rvww.ToolCall{
			Action:           c.Tool,
			PolicyCheck:      rvww.PolicyCheck(d),
			ArgsHash:         c.ArgsHash,
			ResultHash:       c.ResultHash,
			LatencyMS:        c.LatencyMS,
			CostMicrodollars: c.CostMicrodollars,
			Tokens:           c.Tokens,
		}
		govCalls[i] = governance.Call{Index: i, Action: c.Tool, Recorded: uint8(d), CostMicrodollars: c.CostMicrodollars}
	}
	return calls, govCalls, nil
}

// callError names call i: by its line when ParseTrace read it, otherwise
// by its index ("calls[3].policy_check").
func (p *Parts) callError(i int, c *Call, field, reason string) *InputError {
	input := p.TraceInput
	if input == "" {
		input = "trace"
	}
	if c.Line > 0 {
		return &InputError{Input: input, Line: c.Line, Field: field, Reason: reason}
	}
	f := "calls[" + strconv.Itoa(i) + "]"
	if field != "" {
		f += "." + field
	}
	return &InputError{Input: input, Field: f, Reason: reason}
}

func policyLabel(p governance.Policy) string {
	if p.Name != "" {
		return strconv.Quote(p.Name)
	}
	return p.HashString()
}

// unixNano returns t as UNIX nanoseconds in a u64, or an error for times
// before 1970 or after the year 2554.
func unixNano(t time.Time) (uint64, error) {
	sec, nsec := t.Unix(), uint64(t.Nanosecond())
	if sec < 0 || uint64(sec) > (math.MaxUint64-nsec)/1e9 {
		return 0, &InputError{Field: "created", Reason: fmt.Sprintf("%s does not fit created_ns (u64 nanoseconds since 1970)", t.UTC().Format(time.RFC3339Nano))}
	}
	return uint64(sec)*1e9 + nsec, nil
}
