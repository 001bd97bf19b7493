package attrs

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/proofledger/ledger/codec/avir"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/inspect"
	"github.com/proofledger/ledger/codec/rollback"
	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/codec/vrf"
)

// ErrInvalid is wrapped by every error about an attrs object that does not
// decode: a damaged or forged leaf, or a leaf of another format.
var ErrInvalid = errors.New("attrs: invalid leaf attributes")

// FieldError says which field of an attrs object is wrong and why. It
// wraps ErrInvalid.
type FieldError struct {
	// Field is the key ("verdict", "violations[2].code"), quoted when it
	// is an unknown key; empty when the object itself is wrong.
	Field string
	// Reason says what is wrong, for people.
	Reason string
}

// Error returns "attrs.<field>: <reason>".
func (e *FieldError) Error() string {
	if e.Field == "" {
		return "attrs: " + e.Reason
	}
	return "attrs." + e.Field + ": " + e.Reason
}

// Unwrap returns ErrInvalid.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func fieldErr(field, reason string) error { return &FieldError{Field: field, Reason: reason} }

// maxQuoted bounds the characters of a value or key an error quotes.
const maxQuoted = 40

// Receipt is what the index keeps of a VRF receipt.
type Receipt struct {
	// Verdict is vrf.VerdictPass, VerdictFail, VerdictPartial or
	// VerdictError, and is the one the counts give (Counts.ExpectedVerdict).
	Verdict string
	// Tier is the verification tier, 0 to 3.
	Tier int
	// Total, Passed, Failed and Errors are the results counts;
	// Total = Passed + Failed + Errors.
	Total, Passed, Failed, Errors int64
	// TaskType is the receipt's task type; "" when it names none (the key
	// is then absent: an empty task_type is not written).
	TaskType string
}

// Attestation is what the index keeps of an AVIR attestation.
type Attestation struct {
	// Verdict is VERIFIED, PARTIAL, FAILED, INVALID or INCONCLUSIVE.
	Verdict string
	// Level is the verification level, "L1" to "L4", or "" when the
	// attestation names none (the key is present either way).
	Level string
	// Passed and Total are results.summary's counts; Passed <= Total.
	Passed, Total int64
	// System and Version name the system under test.
	System, Version string
}

// Bundle is what the index keeps of an RVWW witness bundle: the header's
// figures and the governance evaluation made when it was appended.
type Bundle struct {
	// Outcome is the header's outcome byte; bytes outside the four defined
	// outcomes are legal and written "unknown(N)".
	Outcome rvww.Outcome
	// Mode is the header's governance_mode byte (any byte).
	Mode rvww.Mode
	// Policy is the header's policy hash (16 lowercase hex digits).
	Policy [8]byte
	// PolicyKnown says whether the hash named a known policy when the
	// bundle was appended: only then was the trace evaluated.
	PolicyKnown bool
	// CostMicrodollars, LatencyMS, Tokens, Retries and ToolCalls are the
	// header's totals, in the header's widths.
	CostMicrodollars, LatencyMS, Tokens uint32
	Retries, ToolCalls                  uint16
	// EvidenceComplete says whether the bundle has SPEC, DIFF and TEST_LOG.
	EvidenceComplete bool
	// Violations are the policy's violations when PolicyKnown (the key is
	// then present, possibly empty); empty and absent otherwise. Decode
	// reuses the slice's capacity.
	Violations []Violation
}

// Violation is one governance violation of a bundle.
type Violation struct {
	// Call is the index of the TRACE record that caused it, below the
	// bundle's ToolCalls.
	Call int
	// Code is governance.CodeDeniedTool, CodeCostBudgetExceeded or
	// CodeCallBudgetExceeded.
	Code string
	// Tool is that call's action.
	Tool string
}

// Rollback is what the index keeps of a rollback record.
type Rollback struct {
	// RestoredClean says whether the rollback restored a clean state.
	RestoredClean bool
}

// The closed sets of spellings.
var (
	receiptVerdicts     = []string{vrf.VerdictPass, vrf.VerdictFail, vrf.VerdictPartial, vrf.VerdictError}
	attestationVerdicts = []string{"VERIFIED", "PARTIAL", "FAILED", "INVALID", "INCONCLUSIVE"}
	levels              = []string{"", "L1", "L2", "L3", "L4"}
	violationCodes      = []string{governance.CodeDeniedTool, governance.CodeCostBudgetExceeded, governance.CodeCallBudgetExceeded}
)

// Keys of each kind, in the order Of writes them; a key's position is its
// bit in the decoders' seen sets.
var (
	receiptKeys     = []string{"verdict", "tier", "total", "passed", "failed", "errors", "task_type"}
	attestationKeys = []string{"verdict", "level", "passed", "total", "system", "version"}
	bundleKeys      = []string{"outcome", "mode", "policy", "policy_known", "cost", "latency_ms", "tokens", "retries", "tool_calls", "evidence_complete", "violations"}
	violationKeys   = []string{"call", "code", "tool"}
	rollbackKeys    = []string{"restored_clean"}
)

// Of returns the attrs object the ledger records for a decoded document:
// the facts of a receipt, an attestation, a bundle (with the governance
// evaluation in res) or a rollback record, and an empty object for other
// kinds.
func Of(res *inspect.Result) canonjson.Value {
	switch {
	case res.Receipt != nil:
		return ReceiptOf(res.Receipt).Value()
	case res.Attestation != nil:
		return AttestationOf(res.Attestation).Value()
	case res.Rollback != nil:
		return RollbackOf(res.Rollback).Value()
	case res.Bundle != nil:
		return BundleOf(res).Value()
	}
	return canonjson.MakeObject()
}

// ReceiptOf returns the attributes of a receipt.
func ReceiptOf(r *vrf.Receipt) Receipt {
	c := r.Counts()
	return Receipt{Verdict: r.Verdict(), Tier: r.Tier(), Total: c.Total, Passed: c.Passed, Failed: c.Failed, Errors: c.Errors, TaskType: r.TaskType()}
}

// AttestationOf returns the attributes of an attestation.
func AttestationOf(a *avir.Attestation) Attestation {
	passed, total, _ := a.PassRate()
	sys := a.System()
	return Attestation{Verdict: a.Verdict(), Level: a.Level(), Passed: passed, Total: total, System: sys.Name, Version: sys.Version}
}

// RollbackOf returns the attributes of a rollback record.
func RollbackOf(r *rollback.Rollback) Rollback { return Rollback{RestoredClean: r.RestoredClean} }

// BundleOf returns the attributes of the witness bundle of res, with the
// governance evaluation res holds (res.Policy, res.Violations).
func BundleOf(res *inspect.Result) Bundle {
	b := res.Bundle
	h := b.Header
	out := Bundle{
		Outcome: h.Outcome, Mode: h.Mode, Policy: h.PolicyHash, PolicyKnown: res.Policy != nil,
		CostMicrodollars: h.TotalCostMicrodollars, LatencyMS: h.TotalLatencyMS, Tokens: h.TotalTokens,
		Retries: h.RetryCount, ToolCalls: h.ToolCallCount, EvidenceComplete: b.EvidenceComplete(),
	}
	if out.PolicyKnown {
		out.Violations = make([]Violation, len(res.Violations))
		for i, v := range res.Violations {
			out.Violations[i] = Violation{Call: v.CallIndex, Code: v.Code, Tool: v.Tool}
		}
	}
	return out
}

type member = canonjson.Member

var (
	str  = canonjson.MakeString
	num  = canonjson.MakeInt
	flag = canonjson.MakeBool
)

// Value returns the attrs object of r.
func (r Receipt) Value() canonjson.Value {
	ms := []member{
		{Key: "verdict", Value: str(r.Verdict)},
		{Key: "tier", Value: num(int64(r.Tier))},
		{Key: "total", Value: num(r.Total)},
		{Key: "passed", Value: num(r.Passed)},
		{Key: "failed", Value: num(r.Failed)},
		{Key: "errors", Value: num(r.Errors)},
	}
	if r.TaskType != "" {
		ms = append(ms, member{Key: "task_type", Value: str(r.TaskType)})
	}
	return canonjson.MakeObject(ms...)
}

// Value returns the attrs object of a.
func (a Attestation) Value() canonjson.Value {
	return canonjson.MakeObject(
		member{Key: "verdict", Value: str(a.Verdict)},
		member{Key: "level", Value: str(a.Level)},
		member{Key: "passed", Value: num(a.Passed)},
		member{Key: "total", Value: num(a.Total)},
		member{Key: "system", Value: str(a.System)},
		member{Key: "version", Value: str(a.Version)},
	)
}

// Value returns the attrs object of b.
func (b Bundle) Value() canonjson.Value {
	ms := []member{
		{Key: "outcome", Value: str(b.Outcome.String())},
		{Key: "mode", Value: num(int64(b.Mode))},
		{Key: "policy", Value: str(hex.EncodeToString(b.Policy[:]))},
		{Key: "policy_known", Value: flag(b.PolicyKnown)},
		{Key: "cost", Value: num(int64(b.CostMicrodollars))},
		{Key: "latency_ms", Value: num(int64(b.LatencyMS))},
		{Key: "tokens", Value: num(int64(b.Tokens))},
		{Key: "retries", Value: num(int64(b.Retries))},
		{Key: "tool_calls", Value: num(int64(b.ToolCalls))},
		{Key: "evidence_complete", Value: flag(b.EvidenceComplete)},
	}
	if b.PolicyKnown {
		vs := make([]canonjson.Value, len(b.Violations))
		for i, v := range b.Violations {
			vs[i] = canonjson.MakeObject(
				member{Key: "call", Value: num(int64(v.Call))},
				member{Key: "code", Value: str(v.Code)},
				member{Key: "tool", Value: str(v.Tool)},
			)
		}
		ms = append(ms, member{Key: "violations", Value: canonjson.MakeArray(vs...)})
	}
	return canonjson.MakeObject(ms...)
}

// Value returns the attrs object of r.
func (r Rollback) Value() canonjson.Value {
	return canonjson.MakeObject(member{Key: "restored_clean", Value: flag(r.RestoredClean)})
}

// Decode reads the attrs object of a receipt into r.
func (r *Receipt) Decode(v canonjson.Value) error {
	*r = Receipt{}
	if err := isObject(v); err != nil {
		return err
	}
	var seen uint32
	for _, m := range v.Members() {
		var bit int
		var reason string
		switch m.Key {
		case "verdict":
			bit = 0
			r.Verdict, reason = oneOf(m.Value, receiptVerdicts)
		case "tier":
			bit = 1
			var n uint64
			n, reason = count(m.Value, 3)
			r.Tier = int(n)
		case "total":
			bit = 2
			r.Total, reason = count64(m.Value)
		case "passed":
			bit = 3
			r.Passed, reason = count64(m.Value)
		case "failed":
			bit = 4
			r.Failed, reason = count64(m.Value)
		case "errors":
			bit = 5
			r.Errors, reason = count64(m.Value)
		case "task_type":
			bit = 6
			if r.TaskType, reason = text(m.Value); reason == "" && r.TaskType == "" {
				reason = "empty (a receipt without a task type has no task_type)"
			}
		default:
			return unknownKey("", m.Key, receiptKeys)
		}
		if reason = mark(&seen, bit, reason); reason != "" {
			return fieldErr(m.Key, reason)
		}
	}
	if k := missing(seen, 1<<6-1, receiptKeys); k != "" {
		return fieldErr(k, "missing")
	}
	if r.Passed > r.Total || r.Failed > r.Total-r.Passed || r.Errors != r.Total-r.Passed-r.Failed {
		return fieldErr("total", fmt.Sprintf("%d, but passed %d + failed %d + errors %d differ", r.Total, r.Passed, r.Failed, r.Errors))
	}
	c := vrf.Counts{Total: r.Total, Passed: r.Passed, Failed: r.Failed, Errors: r.Errors}
	if want := c.ExpectedVerdict(); r.Verdict != want {
		return fieldErr("verdict", fmt.Sprintf("%q, but the counts (%d passed, %d failed, %d errors) give %q", r.Verdict, r.Passed, r.Failed, r.Errors, want))
	}
	return nil
}

// Decode reads the attrs object of an attestation into a.
func (a *Attestation) Decode(v canonjson.Value) error {
	*a = Attestation{}
	if err := isObject(v); err != nil {
		return err
	}
	var seen uint32
	for _, m := range v.Members() {
		var bit int
		var reason string
		switch m.Key {
		case "verdict":
			bit = 0
			a.Verdict, reason = oneOf(m.Value, attestationVerdicts)
		case "level":
			bit = 1
			a.Level, reason = oneOf(m.Value, levels)
		case "passed":
			bit = 2
			a.Passed, reason = count64(m.Value)
		case "total":
			bit = 3
			a.Total, reason = count64(m.Value)
		case "system":
			bit = 4
			a.System, reason = text(m.Value)
		case "version":
			bit = 5
			a.Version, reason = text(m.Value)
		default:
			return unknownKey("", m.Key, attestationKeys)
		}
		if reason = mark(&seen, bit, reason); reason != "" {
			return fieldErr(m.Key, reason)
		}
	}
	if k := missing(seen, 1<<6-1, attestationKeys); k != "" {
		return fieldErr(k, "missing")
	}
	if a.Passed > a.Total {
		return fieldErr("passed", fmt.Sprintf("%d, more than total %d", a.Passed, a.Total))
	}
	return nil
}

// Decode reads the attrs object of a witness bundle into b, reusing the
// capacity of b.Violations.
func (b *Bundle) Decode(v canonjson.Value) error {
	*b = Bundle{Violations: b.Violations[:0]}
	if err := isObject(v); err != nil {
		return err
	}
	var seen uint32
	var violations canonjson.Value
	for _, m := range v.Members() {
		var bit int
		var reason string
		var n uint64
		switch m.Key {
		case "outcome":
			bit = 0
			b.Outcome, reason = outcome(m.Value)
		case "mode":
			bit = 1
			n, reason = count(m.Value, math.MaxUint8)
			b.Mode = rvww.Mode(n)
		case "policy":
			bit = 2
			reason = policyHash(m.Value, &b.Policy)
		case "policy_known":
			bit = 3
			b.PolicyKnown, reason = boolean(m.Value)
		case "cost":
			bit = 4
			n, reason = count(m.Value, math.MaxUint32)
			b.CostMicrodollars = uint32(n)
		case "latency_ms":
			bit = 5
			n, reason = count(m.Value, math.MaxUint32)
			b.LatencyMS = uint32(n)
		case "tokens":
			bit = 6
			n, reason = count(m.Value, math.MaxUint32)
			b.Tokens = uint32(n)
		case "retries":
			bit = 7
			n, reason = count(m.Value, math.MaxUint16)
			b.Retries = uint16(n)
		case "tool_calls":
			bit = 8
			n, reason = count(m.Value, math.MaxUint16)
			b.ToolCalls = uint16(n)
		case "evidence_complete":
			bit = 9
			b.EvidenceComplete, reason = boolean(m.Value)
		case "violations":
			bit = 10
			violations = m.Value
			if violations.Type() != canonjson.Array {
				reason = "want an array, got " + violations.Type().String()
			}
		default:
			return unknownKey("", m.Key, bundleKeys)
		}
		if reason = mark(&seen, bit, reason); reason != "" {
			return fieldErr(m.Key, reason)
		}
	}
	if k := missing(seen, 1<<10-1, bundleKeys); k != "" {
		return fieldErr(k, "missing")
	}
	hasViolations := seen&(1<<10) != 0
	switch {
	case b.PolicyKnown && !hasViolations:
		return fieldErr("violations", "missing (policy_known is true: the trace was evaluated)")
	case !b.PolicyKnown && hasViolations:
		return fieldErr("violations", "present, but policy_known is false (the trace was not evaluated)")
	}
	for i, e := range violations.Elems() {
		b.Violations = append(b.Violations, Violation{})
		if err := b.Violations[i].decode(e, i, b.ToolCalls); err != nil {
			return err
		}
	}
	return nil
}

func (x *Violation) decode(v canonjson.Value, i int, toolCalls uint16) error {
	var path string // built only for an error
	p := func() string {
		if path == "" {
			path = "violations[" + strconv.Itoa(i) + "]"
		}
		return path
	}
	if v.Type() != canonjson.Object {
		return fieldErr(p(), "want an object, got "+v.Type().String())
	}
	var seen uint32
	for _, m := range v.Members() {
		var bit int
		var reason string
		switch m.Key {
		case "call":
			bit = 0
			var n uint64
			if n, reason = count(m.Value, math.MaxUint16); reason == "" && n >= uint64(toolCalls) {
				reason = fmt.Sprintf("%d, but the bundle has %d tool calls", n, toolCalls)
			}
			x.Call = int(n)
		case "code":
			bit = 1
			x.Code, reason = oneOf(m.Value, violationCodes)
		case "tool":
			bit = 2
			x.Tool, reason = text(m.Value)
		default:
			return unknownKey(p(), m.Key, violationKeys)
		}
		if reason = mark(&seen, bit, reason); reason != "" {
			return fieldErr(join(p(), m.Key), reason)
		}
	}
	if k := missing(seen, 1<<3-1, violationKeys); k != "" {
		return fieldErr(join(p(), k), "missing")
	}
	return nil
}

// Decode reads the attrs object of a rollback record into r.
func (r *Rollback) Decode(v canonjson.Value) error {
	*r = Rollback{}
	if err := isObject(v); err != nil {
		return err
	}
	var seen uint32
	for _, m := range v.Members() {
		if m.Key != "restored_clean" {
			return unknownKey("", m.Key, rollbackKeys)
		}
		var reason string
		r.RestoredClean, reason = boolean(m.Value)
		if reason = mark(&seen, 0, reason); reason != "" {
			return fieldErr(m.Key, reason)
		}
	}
	if k := missing(seen, 1, rollbackKeys); k != "" {
		return fieldErr(k, "missing")
	}
	return nil
}

// join names field key of the object at path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func isObject(v canonjson.Value) error {
	if v.Type() != canonjson.Object {
		return fieldErr("", "want an object, got "+v.Type().String())
	}
	return nil
}

// mark records a key (its bit) as read, or returns what is wrong: the
// reason its value did not decode, or its repetition.
func mark(seen *uint32, bit int, reason string) string {
	if reason != "" {
		return reason
	}
	if *seen&(1<<bit) != 0 {
		return "repeated"
	}
	*seen |= 1 << bit
	return ""
}

// missing returns the first key of want (as bits of keys) not in seen, or
// "" when none is missing.
func missing(seen, want uint32, keys []string) string {
	if m := want &^ seen; m != 0 {
		return keys[bits.TrailingZeros32(m)]
	}
	return ""
}

func unknownKey(path, key string, keys []string) error {
	return fieldErr(join(path, fmt.Sprintf("%.*q", maxQuoted, key)), "unknown key (leaf version 1 has "+strings.Join(keys, ", ")+")")
}

func typeReason(want string, v canonjson.Value) string {
	if v.Type() == canonjson.Number {
		return fmt.Sprintf("want %s, got %.*s", want, maxQuoted, v.Literal())
	}
	return "want " + want + ", got " + v.Type().String()
}

func text(v canonjson.Value) (string, string) {
	s, ok := v.Str()
	if !ok {
		return "", typeReason("a string", v)
	}
	return s, ""
}

func boolean(v canonjson.Value) (bool, string) {
	b, ok := v.Bool()
	if !ok {
		return false, typeReason("a boolean", v)
	}
	return b, ""
}

// oneOf reads a string from a closed set.
func oneOf(v canonjson.Value, set []string) (string, string) {
	s, reason := text(v)
	if reason != "" {
		return "", reason
	}
	for _, x := range set {
		if s == x {
			return s, ""
		}
	}
	return "", fmt.Sprintf("want one of %s, got %.*q", quoteAll(set), maxQuoted, s)
}

func quoteAll(set []string) string {
	q := make([]string, len(set))
	for i, s := range set {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// count reads a non-negative integer no larger than max.
func count(v canonjson.Value, max uint64) (uint64, string) {
	if n, ok := digits(v.Literal()); ok && n <= max {
		return n, ""
	}
	if !v.IsInt() {
		return 0, typeReason("an integer", v)
	}
	n, ok := v.Int64()
	switch {
	case !ok:
		return 0, fmt.Sprintf("integer %.*s out of range", maxQuoted, v.Literal())
	case n < 0:
		return 0, fmt.Sprintf("want a non-negative integer, got %d", n)
	case uint64(n) > max:
		return 0, fmt.Sprintf("want at most %d, got %d", max, n)
	}
	return uint64(n), ""
}

// digits reads a number literal of 1 to 19 decimal digits (the JSON
// grammar rules out leading zeros), which cannot overflow a uint64: the
// fast path of count.
func digits(lit string) (uint64, bool) {
	if len(lit) == 0 || len(lit) > 19 {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(lit); i++ {
		c := lit[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + uint64(c)
	}
	return n, true
}

func count64(v canonjson.Value) (int64, string) {
	n, reason := count(v, math.MaxInt64)
	return int64(n), reason
}

// outcome reads a bundle outcome as rvww.Outcome.String writes it.
func outcome(v canonjson.Value) (rvww.Outcome, string) {
	s, reason := text(v)
	if reason != "" {
		return 0, reason
	}
	switch s {
	case "solved":
		return rvww.OutcomeSolved, ""
	case "failed":
		return rvww.OutcomeFailed, ""
	case "skipped":
		return rvww.OutcomeSkipped, ""
	case "errored":
		return rvww.OutcomeErrored, ""
	}
	if d, ok := strings.CutPrefix(s, "unknown("); ok {
		if d, ok = strings.CutSuffix(d, ")"); ok {
			if n, err := strconv.Atoi(d); err == nil && n > int(rvww.OutcomeErrored) && n <= math.MaxUint8 && strconv.Itoa(n) == d {
				return rvww.Outcome(n), ""
			}
		}
	}
	return 0, fmt.Sprintf(`want "solved", "failed", "skipped", "errored" or "unknown(N)" for a byte N from 4 to 255, got %.*q`, maxQuoted, s)
}

// policyHash reads 16 lowercase hex digits into dst.
func policyHash(v canonjson.Value, dst *[8]byte) string {
	s, reason := text(v)
	if reason != "" {
		return reason
	}
	if len(s) != 2*len(dst) {
		return fmt.Sprintf("want 16 lowercase hex digits, got %.*q", maxQuoted, s)
	}
	for i := range dst {
		hi, ok1 := unhex(s[2*i])
		lo, ok2 := unhex(s[2*i+1])
		if !ok1 || !ok2 {
			return fmt.Sprintf("want 16 lowercase hex digits, got %q", s)
		}
		dst[i] = hi<<4 | lo
	}
	return ""
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
