package witness

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/rvww"
)

// InputError reports one malformed input to the builder: which input (a
// file name, or empty for a single value such as the task id), where in it
// (1-based line and byte column, 0 when not known), which field, and why.
// It wraps codec.ErrMalformed and, when set, the error that caused it.
type InputError struct {
	// Input names the input: the name the caller gave (usually a file
	// name), or "" for a single value.
	Input string
	// Line and Column locate the problem, both from 1; 0 when unknown.
	Line, Column int
	// Field is the field at fault: a trace line's key ("args_hash"), a
	// policy file's path ("allow[2]"), a parameter ("task_id"), or "".
	Field string
	// Reason says what is wrong, for people.
	Reason string
	// Err is the underlying error, or nil.
	Err error
}

// Error returns "input:line:column: field: reason", leaving out the parts
// that are unknown.
func (e *InputError) Error() string {
	var b strings.Builder
	if e.Input != "" {
		b.WriteString(e.Input)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
			if e.Column > 0 {
				b.WriteString(":" + strconv.Itoa(e.Column))
			}
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		b.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns codec.ErrMalformed and, when set, Err.
func (e *InputError) Unwrap() []error {
	if e.Err != nil {
		return []error{codec.ErrMalformed, e.Err}
	}
	return []error{codec.ErrMalformed}
}

// ParseTaskID reads a task id written as a UUID (8-4-4-4-12 hex digits) or
// as 32 hex digits, in either case. The nil UUID is refused: Parts uses the
// all-zero id to mean "generate one".
func ParseTaskID(s string) ([16]byte, error) {
	var id [16]byte
	bad := func(reason string) ([16]byte, error) {
		return [16]byte{}, &InputError{Field: "task_id", Reason: reason}
	}
	switch len(s) {
	case 36:
		u, err := uuid.Parse(s)
		if err != nil {
			return bad(fmt.Sprintf("%q is not a UUID (8-4-4-4-12 hex digits)", s))
		}
		id = u
	case 32:
		if _, err := hex.Decode(id[:], []byte(s)); err != nil {
			return bad(fmt.Sprintf("%q is not 32 hex digits", s))
		}
	default:
		return bad(fmt.Sprintf("want a UUID (36 characters) or 32 hex digits, got %d characters", len(s)))
	}
	if id == ([16]byte{}) {
		return bad("the nil UUID is not a task id")
	}
	return id, nil
}

// ParseOutcome reads an outcome name: "solved", "failed", "skipped" or
// "errored" (ADR-035 section 2).
func ParseOutcome(s string) (rvww.Outcome, error) {
	for o := rvww.OutcomeSolved; o <= rvww.OutcomeErrored; o++ {
		if s == o.String() {
			return o, nil
		}
	}
	return 0, &InputError{Field: "outcome", Reason: fmt.Sprintf("want solved, failed, skipped or errored, got %q", s)}
}

// DefaultPolicy returns the ADR-035 default policy named "restricted",
// "approved" or "autonomous".
func DefaultPolicy(name string) (governance.Policy, bool) {
	m, ok := governance.ParseMode(name)
	if !ok {
		return governance.Policy{}, false
	}
	return governance.Defaults()[m], true
}

// ParsePolicy reads a policy file (JSON or YAML, see
// governance.ParsePolicy). A malformed file is an *InputError naming input
// and, for the first problem, its line, column and field; the full list of
// problems is in the wrapped *codec.MalformedError.
func ParsePolicy(input string, data []byte) (governance.Policy, error) {
	p, err := governance.ParsePolicy(data)
	if err == nil {
		return p, nil
	}
	ie := &InputError{Input: input, Reason: err.Error(), Err: err}
	var me *codec.MalformedError
	if errors.As(err, &me) && len(me.Findings) > 0 {
		f := me.Findings[0]
		ie.Field, ie.Reason = f.Field, f.Reason
		if n := len(me.Findings) - 1; n > 0 {
			ie.Reason += fmt.Sprintf(" (and %d more problems)", n)
		}
		if f.Offset >= 0 && f.Offset <= int64(len(data)) {
			ie.Line, ie.Column = lineColumn(data, int(f.Offset))
		}
	}
	return governance.Policy{}, ie
}

// lineColumn converts a byte offset in data to a 1-based line and byte
// column.
func lineColumn(data []byte, off int) (line, column int) {
	before := data[:off]
	line = 1 + bytes.Count(before, []byte{'\n'})
	return line, off - (bytes.LastIndexByte(before, '\n') + 1) + 1
}
