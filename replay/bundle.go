package replay

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/replay/testlog"
)

// SignatureStatus says what became of a document's signature.
type SignatureStatus string

// The signature statuses.
const (
	// SignatureNone: the document is not signed.
	SignatureNone SignatureStatus = "unsigned"
	// SignatureVerified: the signature verified.
	SignatureVerified SignatureStatus = "verified"
	// SignatureNotVerified: the document is signed and the signature did
	// not verify (no key verified a bundle's HMAC, or a receipt's or an
	// attestation's signature check failed).
	SignatureNotVerified SignatureStatus = "not_verified"
	// SignatureNotChecked: the document is signed and its signature could
	// not be checked: no key it could have been made with is known (a
	// bundle whose HMAC key id the caller has no secret for).
	SignatureNotChecked SignatureStatus = "not_checked"
)

// BundleOptions is what the caller knows of a bundle beyond its content.
type BundleOptions struct {
	// SignatureVerified reports that the bundle's HMAC verified (for
	// example: KeyID is b.VerifiedKey() after b.Verify(keys), and
	// SignatureVerified is KeyID != "").
	SignatureVerified bool
	// KeyID names the key that verified the HMAC.
	KeyID string
	// NotChecked, when SignatureVerified is false and the bundle is
	// signed, says why the signature could not be checked ("key hmac:…
	// not registered"): the report's status is then not_checked, with
	// KeyID and this reason, rather than not_verified.
	NotChecked string
	// Policy is the governance policy the ledger evaluated the bundle
	// against, or nil when the bundle's policy is unknown: the recorded
	// decisions are then shown but not recomputed, and no budget is
	// checked.
	Policy *governance.Policy
}

// BundleReport is the replay of one witness bundle. Its JSON form is the
// machine-readable report; WriteText renders it for people.
type BundleReport struct {
	Kind string `json:"kind"` // always "rvww"
	// ID is the bundle's identifier, task UUID "@" created_ns.
	ID        string `json:"id"`
	TaskID    string `json:"task_id"`
	TaskText  string `json:"task_text,omitempty"`
	CreatedAt string `json:"created_at"` // RFC 3339, UTC
	// Outcome is the claimed outcome; Mode the recorded governance mode.
	Outcome    string `json:"outcome"`
	Mode       string `json:"governance_mode"`
	PolicyHash string `json:"policy_hash"`
	Retries    uint16 `json:"retries"`

	Signature Signature `json:"signature"`
	// Policy is the policy the calls were judged by, nil when unknown.
	Policy *PolicyInfo `json:"policy"`

	// The sections, nil when absent. Text is as recorded (JSON replaces
	// bytes that are not UTF-8 with U+FFFD).
	Spec       *string `json:"spec"`
	Plan       *string `json:"plan"`
	Diff       *string `json:"diff"`
	TestLog    *string `json:"test_log"`
	Postmortem *string `json:"postmortem"`
	// Unknown lists the sections with tags ADR-035 does not define.
	Unknown []UnknownSection `json:"unknown_sections"`

	// Calls is the trace, one row per tool call.
	Calls []CallRow `json:"calls"`
	// Totals compares the header's totals with the trace's.
	Totals Totals `json:"totals"`
	// Violations and GovernanceFindings are codec/governance's evaluation
	// of the trace against Policy (empty when it is unknown).
	Violations         []governance.Violation `json:"violations"`
	GovernanceFindings []codec.Finding        `json:"governance_findings"`

	// Tests are the test log's counts; OutcomeCheck judges the claimed
	// outcome by them (and OutcomeReason says why).
	Tests         Tests   `json:"tests"`
	OutcomeCheck  Verdict `json:"outcome_check"`
	OutcomeReason string  `json:"outcome_reason"`
}

// Signature is a document's signature status and, when verified with a
// named key, the key's id.
type Signature struct {
	Status SignatureStatus `json:"status"`
	KeyID  string          `json:"key_id,omitempty"`
	// Detail says more where there is more to say (the signer of a
	// receipt, why a check failed).
	Detail string `json:"detail,omitempty"`
}

// PolicyInfo is the governance policy a bundle was judged by.
type PolicyInfo struct {
	Name                string   `json:"name"`
	Hash                string   `json:"hash"`
	Mode                string   `json:"mode"`
	Allow               []string `json:"allow"`
	Deny                []string `json:"deny"`
	MaxCostMicrodollars uint32   `json:"max_cost_microdollars"`
	MaxToolCalls        uint16   `json:"max_tool_calls"`
	// MatchesHeader reports whether the policy's hash is the one the
	// bundle's header records.
	MatchesHeader bool `json:"matches_header"`
}

// UnknownSection is a TLV section with an undefined tag.
type UnknownSection struct {
	Tag    string `json:"tag"` // "0x0100"
	Length int    `json:"length"`
}

// CallRow is one tool call of the trace.
type CallRow struct {
	Index int `json:"index"`
	// Tool is the record's action: the tool's name.
	Tool       string `json:"tool"`
	ArgsHash   string `json:"args_hash"`
	ResultHash string `json:"result_hash"`
	// Recorded is the policy decision the producer recorded; Recomputed
	// the one the policy gives (empty when the policy is unknown) and
	// Agrees whether they are the same (absent when unknown).
	Recorded   string `json:"recorded"`
	Recomputed string `json:"recomputed,omitempty"`
	Agrees     *bool  `json:"agrees,omitempty"`

	LatencyMS        uint32 `json:"latency_ms"`
	CostMicrodollars uint32 `json:"cost_microdollars"`
	Tokens           uint32 `json:"tokens"`
	// RunningCostMicrodollars is the saturating sum of the costs so far
	// and RunningCalls the number of calls so far, this one included;
	// OverCostBudget and OverCallBudget say they exceed the policy's
	// budgets (never set when the policy is unknown).
	RunningCostMicrodollars uint32 `json:"running_cost_microdollars"`
	RunningCalls            int    `json:"running_calls"`
	OverCostBudget          bool   `json:"over_cost_budget"`
	OverCallBudget          bool   `json:"over_call_budget"`
}

// Totals are the header's totals and the trace's saturating sums.
type Totals struct {
	HeaderCostMicrodollars uint32 `json:"header_cost_microdollars"`
	HeaderLatencyMS        uint32 `json:"header_latency_ms"`
	HeaderTokens           uint32 `json:"header_tokens"`
	TraceCostMicrodollars  uint32 `json:"trace_cost_microdollars"`
	TraceLatencyMS         uint32 `json:"trace_latency_ms"`
	TraceTokens            uint32 `json:"trace_tokens"`
	// Agree reports that all three pairs are equal.
	Agree bool `json:"agree"`
}

// Tests are the counts read from a test log.
type Tests struct {
	// Runner names the runners recognised ("pytest", "go test + jest"),
	// "" when none.
	Runner string `json:"runner"`
	testlog.Counts
	// Parts has the counts of each runner and the lines they came from.
	Parts []testlog.Part `json:"parts"`
}

// Bundle replays a decoded witness bundle. It reads only b and opts, so
// the same arguments always give the same report. It fails only on
// arguments that contradict each other: a nil bundle, or a verified
// signature claimed for an unsigned bundle.
func Bundle(b *rvww.Bundle, opts BundleOptions) (*BundleReport, error) {
	if b == nil {
		return nil, errors.New("replay: nil bundle")
	}
	if opts.SignatureVerified && !b.Signed() {
		return nil, fmt.Errorf("replay: bundle %s: the signature is said to have verified, but the bundle is unsigned", b.ID())
	}
	h := &b.Header
	r := &BundleReport{
		Kind:               string(codec.KindRVWW),
		ID:                 b.ID(),
		TaskID:             b.TaskUUID(),
		TaskText:           b.TaskText(),
		CreatedAt:          b.CreatedAt().Format(time.RFC3339Nano),
		Outcome:            b.OutcomeName(),
		Mode:               b.ModeName(),
		PolicyHash:         hex.EncodeToString(h.PolicyHash[:]),
		Retries:            h.RetryCount,
		Spec:               section(b.HasSpec, b.Spec),
		Plan:               section(b.HasPlan, b.Plan),
		Diff:               section(b.HasDiff, b.Diff),
		TestLog:            section(b.HasTestLog, b.TestLog),
		Postmortem:         section(b.HasPostmortem, b.Postmortem),
		Unknown:            []UnknownSection{},
		Calls:              make([]CallRow, 0, len(b.Calls)),
		Violations:         []governance.Violation{},
		GovernanceFindings: []codec.Finding{},
	}
	switch {
	case !b.Signed():
		r.Signature = Signature{Status: SignatureNone}
	case opts.SignatureVerified:
		r.Signature = Signature{Status: SignatureVerified, KeyID: opts.KeyID}
	case opts.NotChecked != "":
		r.Signature = Signature{Status: SignatureNotChecked, KeyID: opts.KeyID, Detail: opts.NotChecked}
	default:
		r.Signature = Signature{Status: SignatureNotVerified, Detail: "no supplied key verified it"}
	}
	for _, u := range b.Unknown {
		r.Unknown = append(r.Unknown, UnknownSection{Tag: fmt.Sprintf("0x%04x", u.Tag), Length: len(u.Value)})
	}

	p := opts.Policy
	if p != nil {
		r.Policy = &PolicyInfo{
			Name: p.Name, Hash: p.HashString(), Mode: p.Mode.String(),
			Allow: nonNil(p.Allow), Deny: nonNil(p.Deny),
			MaxCostMicrodollars: p.MaxCostMicrodollars, MaxToolCalls: p.MaxToolCalls,
			MatchesHeader: p.Hash() == h.PolicyHash,
		}
	}
	var running uint32
	for i := range b.Calls {
		c := &b.Calls[i]
		running = satAdd32(running, c.CostMicrodollars)
		row := CallRow{
			Index: c.Index, Tool: c.Action,
			ArgsHash: hex.EncodeToString(c.ArgsHash[:]), ResultHash: hex.EncodeToString(c.ResultHash[:]),
			Recorded:  c.PolicyCheck.String(),
			LatencyMS: c.LatencyMS, CostMicrodollars: c.CostMicrodollars, Tokens: c.Tokens,
			RunningCostMicrodollars: running, RunningCalls: i + 1,
		}
		if p != nil {
			d := p.Check(c.Action)
			row.Recomputed = d.String()
			row.Agrees = boolPtr(uint8(d) == uint8(c.PolicyCheck))
			row.OverCostBudget = running > p.MaxCostMicrodollars
			row.OverCallBudget = i+1 > int(p.MaxToolCalls)
		}
		r.Calls = append(r.Calls, row)
	}
	if p != nil {
		calls := make([]governance.Call, len(b.Calls))
		for i, c := range b.Calls {
			calls[i] = governance.Call{Index: c.Index, Action: c.Action, Recorded: uint8(c.PolicyCheck), CostMicrodollars: c.CostMicrodollars}
		}
		ev := governance.Evaluate(*p, uint8(h.Mode), calls)
		r.Violations = append(r.Violations, ev.Violations...)
		r.GovernanceFindings = append(r.GovernanceFindings, ev.Findings...)
	}

	cost, latency, tokens := b.TraceTotals()
	r.Totals = Totals{
		HeaderCostMicrodollars: h.TotalCostMicrodollars, HeaderLatencyMS: h.TotalLatencyMS, HeaderTokens: h.TotalTokens,
		TraceCostMicrodollars: cost, TraceLatencyMS: latency, TraceTokens: tokens,
		Agree: cost == h.TotalCostMicrodollars && latency == h.TotalLatencyMS && tokens == h.TotalTokens,
	}

	var s testlog.Summary
	if b.HasTestLog {
		s = testlog.Parse(b.TestLog)
	}
	r.Tests = Tests{Runner: s.Runner(), Counts: s.Counts, Parts: nonNil(s.Parts)}
	oc := CheckOutcome(h.Outcome, s)
	if !b.HasTestLog && h.Outcome.Known() {
		oc.Reason = "the bundle has no TEST_LOG section"
	}
	r.OutcomeCheck, r.OutcomeReason = oc.Verdict, oc.Reason
	return r, nil
}

func section(has bool, b []byte) *string {
	if !has {
		return nil
	}
	s := string(b)
	return &s
}

// nonNil returns s, or an empty slice for nil, so that JSON says [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func satAdd32(a, b uint32) uint32 {
	if s := a + b; s >= a {
		return s
	}
	return ^uint32(0)
}

// WriteJSON writes the report as one line of JSON.
func (r *BundleReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteText writes the report for people: a heading, the spec and plan,
// the trace as a table, the diff, the test log, the postmortem, and the
// test counts with the outcome check. Text from the bundle is made inert
// for a terminal and shown behind a "| " gutter.
func (r *BundleReport) WriteText(w io.Writer, o TextOptions) error {
	t := newTextWriter(w, o)
	t.printf("%s %s\n", t.paint(sgrBold, "witness bundle"), r.ID)
	task := r.TaskID
	if r.TaskText != "" {
		task += " (text: " + r.TaskText + ")"
	}
	t.field("task", task)
	t.field("created", r.CreatedAt)
	t.field("claimed outcome", r.Outcome)
	t.field("governance mode", r.Mode)
	t.field("policy", r.policyLine())
	t.field("signature", r.signatureLine())
	t.field("retries", strconv.Itoa(int(r.Retries)))
	for _, u := range r.Unknown {
		t.field("unknown section", fmt.Sprintf("tag %s, %d bytes (ignored)", u.Tag, u.Length))
	}

	t.block("spec", r.Spec, nil)
	t.block("plan", r.Plan, nil)
	r.writeTrace(t)
	t.block("diff", r.Diff, diffColor)
	t.block("test log", r.TestLog, nil)
	if r.Postmortem != nil {
		t.block("postmortem", r.Postmortem, nil)
	}

	t.printf("\n%s\n", t.paint(sgrBold, "tests"))
	if r.Tests.Runner == "" {
		t.field("runner", "none recognised")
	} else {
		for _, p := range r.Tests.Parts {
			where := fmt.Sprintf("line %d", p.FirstLine)
			if p.LastLine != p.FirstLine {
				where = fmt.Sprintf("lines %d-%d", p.FirstLine, p.LastLine)
			}
			unit := ""
			if p.Unit != testlog.UnitTests {
				unit = ", counting " + p.Unit
			}
			t.field("runner", fmt.Sprintf("%s: %s (%s%s)", p.Runner, p.Counts, where, unit))
		}
		t.field("counts", r.Tests.Counts.String())
	}
	t.printf("  %-17s claimed %s: %s (%s)\n", "outcome check", inert(r.Outcome, false),
		t.paint(verdictColor(r.OutcomeCheck), string(r.OutcomeCheck)), inert(r.OutcomeReason, false))
	return t.err
}

func (r *BundleReport) policyLine() string {
	p := r.Policy
	if p == nil {
		return fmt.Sprintf("unknown (hash %s): decisions not recomputed, budgets not checked", r.PolicyHash)
	}
	name := p.Name
	if name == "" {
		name = "(unnamed)"
	}
	s := fmt.Sprintf("%s %s, %s mode, budget %s and %d calls", name, p.Hash, p.Mode,
		dollars(uint64(p.MaxCostMicrodollars)), p.MaxToolCalls)
	if !p.MatchesHeader {
		s += fmt.Sprintf("; the bundle's header names policy %s", r.PolicyHash)
	}
	return s
}

func (r *BundleReport) signatureLine() string {
	switch r.Signature.Status {
	case SignatureNone:
		return "none (unsigned bundle)"
	case SignatureVerified:
		if r.Signature.KeyID == "" {
			return "HMAC-SHA256, verified"
		}
		return fmt.Sprintf("HMAC-SHA256, verified with key %q", r.Signature.KeyID)
	case SignatureNotChecked:
		return "HMAC-SHA256, signature not checked: " + r.Signature.Detail
	}
	return "HMAC-SHA256, NOT verified: " + r.Signature.Detail
}

func (r *BundleReport) writeTrace(t *textWriter) {
	t.printf("\n%s\n", t.paint(sgrBold, fmt.Sprintf("trace: %d tool calls", len(r.Calls))))
	if len(r.Calls) > 0 {
		header := []string{"#", "tool", "recorded", "policy says", "agrees", "latency ms", "cost µ$", "tokens", "running cost", "calls"}
		rows := make([][]cell, 0, len(r.Calls))
		for _, c := range r.Calls {
			recomputed := c.Recomputed
			if recomputed == "" {
				recomputed = "?"
			}
			running := cell{text: strconv.FormatUint(uint64(c.RunningCostMicrodollars), 10)}
			calls := cell{text: strconv.Itoa(c.RunningCalls)}
			if p := r.Policy; p != nil {
				running.text += "/" + strconv.FormatUint(uint64(p.MaxCostMicrodollars), 10)
				calls.text += "/" + strconv.Itoa(int(p.MaxToolCalls))
			}
			if c.OverCostBudget {
				running = cell{text: running.text + " OVER", sgr: sgrRed}
			}
			if c.OverCallBudget {
				calls = cell{text: calls.text + " OVER", sgr: sgrRed}
			}
			rows = append(rows, []cell{
				{text: strconv.Itoa(c.Index)}, plain(c.Tool), {text: c.Recorded}, {text: recomputed}, yesNo(c.Agrees),
				{text: strconv.FormatUint(uint64(c.LatencyMS), 10)},
				{text: strconv.FormatUint(uint64(c.CostMicrodollars), 10)},
				{text: strconv.FormatUint(uint64(c.Tokens), 10)},
				running, calls,
			})
		}
		t.table(header, rows)
	}
	tt := r.Totals
	agree := "the header agrees"
	if !tt.Agree {
		agree = fmt.Sprintf("the HEADER DISAGREES: cost %d, latency %d ms, tokens %d", tt.HeaderCostMicrodollars, tt.HeaderLatencyMS, tt.HeaderTokens)
	}
	t.printf("  totals: cost %d µ$ (%s), latency %d ms, tokens %d; %s\n",
		tt.TraceCostMicrodollars, dollars(uint64(tt.TraceCostMicrodollars)), tt.TraceLatencyMS, tt.TraceTokens, agree)
	if r.Policy == nil {
		return
	}
	if len(r.Violations) == 0 {
		t.printf("  violations: none\n")
	}
	for _, v := range r.Violations {
		t.printf("  violation: %s: %s\n", t.paint(sgrRed, v.Code), inert(v.Reason, false))
	}
	if len(r.GovernanceFindings) == 0 {
		t.printf("  governance record: consistent with the policy\n")
	}
	for _, f := range r.GovernanceFindings {
		t.printf("  governance finding: %s: %s\n", t.paint(sgrRed, f.Code), inert(f.String(), false))
	}
}
