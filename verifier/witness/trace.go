package witness

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/rvww"
)

// Call is one tool call to record: what a trace line says.
type Call struct {
	// Tool is the tool's name, written as the record's action; it is the
	// name the policy judges.
	Tool string
	// ArgsHash and ResultHash are the record's 8 opaque bytes each.
	ArgsHash, ResultHash [8]byte
	// LatencyMS, CostMicrodollars and Tokens are the call's own figures.
	LatencyMS, CostMicrodollars, Tokens uint32
	// Recorded is the decision the producer recorded for the call; it
	// means something only when HasRecorded is set.
	Recorded    governance.Decision
	HasRecorded bool
	// Line is the call's 1-based line in the trace input, or 0 for a call
	// that ParseTrace did not read.
	Line int
}

// The keys of a trace line.
const (
	keyTool        = "tool"
	keyArgs        = "args"
	keyArgsHash    = "args_hash"
	keyResult      = "result"
	keyResultHash  = "result_hash"
	keyLatency     = "latency_ms"
	keyCost        = "cost_microdollars"
	keyTokens      = "tokens"
	keyPolicyCheck = "policy_check"
)

const knownKeys = "tool, args, args_hash, result, result_hash, latency_ms, cost_microdollars, tokens, policy_check"

// ParseTrace reads a trace in JSON Lines, one tool call per line, in call
// order (the package comment gives the format). input names the trace in
// errors. Blank lines are skipped; a line may end in "\r\n".
//
// The first malformed line stops the parse with an *InputError naming
// input, the line, the field and the reason: invalid JSON (with the
// column), a line that is not an object, an unknown or duplicate key, a
// missing or unusable tool name, both a value and its hash, a hash that is
// not 16 hex digits, a figure that is not an integer from 0 to 4294967295,
// an unknown policy_check, or more than 65535 calls.
func ParseTrace(input string, data []byte) ([]Call, error) {
	var calls []Call
	var ps canonjson.Parser
	for lineNo, rest := 1, data; len(rest) > 0; lineNo++ {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(bytes.Trim(line, " \t")) == 0 {
			continue
		}
		if len(calls) == rvww.MaxToolCalls {
			return nil, &InputError{Input: input, Line: lineNo,
				Reason: fmt.Sprintf("more than %d tool calls: tool_call_count is a u16", rvww.MaxToolCalls)}
		}
		c, err := parseLine(&ps, line)
		if err != nil {
			err.Input, err.Line = input, lineNo
			return nil, err
		}
		c.Line = lineNo
		calls = append(calls, c)
	}
	return calls, nil
}

// parseLine reads one non-blank trace line. The error it returns has no
// Input or Line yet.
func parseLine(ps *canonjson.Parser, line []byte) (Call, *InputError) {
	var c Call
	v, err := ps.Parse(line)
	if err != nil {
		ie := &InputError{Reason: "invalid JSON: " + err.Error(), Err: err}
		var se *canonjson.SyntaxError
		if errors.As(err, &se) {
			ie.Column, ie.Reason = int(se.Offset)+1, "invalid JSON: "+se.Reason
		}
		return c, ie
	}
	if v.Type() != canonjson.Object {
		return c, &InputError{Reason: "want a JSON object, got " + v.Type().String()}
	}
	bad := func(field, format string, args ...any) (Call, *InputError) {
		return Call{}, &InputError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	hasTool := false
	var hashed [2]string // the key that set ArgsHash and ResultHash
	for _, m := range v.Members() {
		switch m.Key {
		case keyTool:
			s, ok := m.Value.Str()
			if !ok {
				return bad(m.Key, "want a string, got %s", m.Value.Type())
			}
			if reason := checkTool(s); reason != "" {
				return bad(m.Key, "%s", reason)
			}
			c.Tool, hasTool = s, true
		case keyArgs, keyArgsHash, keyResult, keyResultHash:
			slot, dst := 0, &c.ArgsHash
			if m.Key == keyResult || m.Key == keyResultHash {
				slot, dst = 1, &c.ResultHash
			}
			if hashed[slot] != "" {
				return bad(m.Key, "give %s or %s, not both", hashed[slot], m.Key)
			}
			hashed[slot] = m.Key
			if m.Key == keyArgs || m.Key == keyResult {
				*dst = valueHash(m.Value)
				continue
			}
			s, ok := m.Value.Str()
			if !ok {
				return bad(m.Key, "want a string of 16 hex digits, got %s", m.Value.Type())
			}
			if len(s) != 2*len(dst) {
				return bad(m.Key, "want 16 hex digits, got %d characters", len(s))
			}
			if _, err := hex.Decode(dst[:], []byte(s)); err != nil {
				return bad(m.Key, "want 16 hex digits, got %q", s)
			}
		case keyLatency, keyCost, keyTokens:
			n, reason := uint32Of(m.Value)
			if reason != "" {
				return bad(m.Key, "%s", reason)
			}
			switch m.Key {
			case keyLatency:
				c.LatencyMS = n
			case keyCost:
				c.CostMicrodollars = n
			default:
				c.Tokens = n
			}
		case keyPolicyCheck:
			s, ok := m.Value.Str()
			d, known := decisionNamed(s)
			if !ok || !known {
				return bad(m.Key, "want \"allowed\", \"denied\" or \"confirmed\", got %s", describe(m.Value))
			}
			c.Recorded, c.HasRecorded = d, true
		default:
			return bad("", "unknown key %q (a trace line has %s)", m.Key, knownKeys)
		}
	}
	if !hasTool {
		return bad(keyTool, "missing: every call names its tool")
	}
	return c, nil
}

// valueHash returns the 8 bytes a trace line's "args" or "result" value is
// recorded as: the first 8 bytes of SHA-256 over the value's canonical JSON
// (Python's json.dumps(value, sort_keys=True, separators=(",", ":"))).
func valueHash(v canonjson.Value) [8]byte {
	sum := sha256.Sum256(canonjson.Canonical(v))
	return [8]byte(sum[:8])
}

// checkTool returns why tool cannot be a record's action, or "".
func checkTool(tool string) string {
	switch {
	case tool == "":
		return "empty tool name"
	case len(tool) > rvww.MaxActionLen:
		return fmt.Sprintf("tool name is %d bytes, at most %d fit action_len", len(tool), rvww.MaxActionLen)
	case !utf8.ValidString(tool):
		return "tool name is not valid Unicode (a lone surrogate escape?)"
	}
	return ""
}

// uint32Of reads a JSON integer from 0 to 4294967295, or says why not.
func uint32Of(v canonjson.Value) (uint32, string) {
	if !v.IsInt() {
		return 0, "want an integer from 0 to 4294967295, got " + describe(v)
	}
	n, err := strconv.ParseUint(v.Literal(), 10, 32)
	if err != nil {
		return 0, "want an integer from 0 to 4294967295, got " + v.Literal()
	}
	return uint32(n), ""
}

func decisionNamed(s string) (governance.Decision, bool) {
	for d := governance.Allowed; d <= governance.Confirmed; d++ {
		if s == d.String() {
			return d, true
		}
	}
	return 0, false
}

// describe names a JSON value in an error: a number's literal, a short
// string quoted, otherwise its type.
func describe(v canonjson.Value) string {
	switch v.Type() {
	case canonjson.Number:
		return v.Literal()
	case canonjson.String:
		s, _ := v.Str()
		if len(s) <= 40 {
			return strconv.Quote(s)
		}
		return "a string of " + strconv.Itoa(len(s)) + " bytes"
	}
	return v.Type().String()
}
