package governance

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// MaxPolicySize is the largest policy file ParsePolicy reads. Real policies
// are a few hundred bytes; the bound keeps a hostile file from making the
// YAML parser do unbounded work.
const MaxPolicySize = 1 << 20

// The policy file's fields.
const (
	fieldName     = "name"
	fieldMode     = "mode"
	fieldAllow    = "allow"
	fieldDeny     = "deny"
	fieldMaxCost  = "max_cost_microdollars"
	fieldMaxCalls = "max_tool_calls"
)

const knownFields = "name, mode, allow, deny, max_cost_microdollars, max_tool_calls"

// ParsePolicy reads a policy file, JSON or YAML:
//
//	{
//	  "name": "read-only-small",          // optional label, not hashed
//	  "mode": "restricted",               // or 0, 1, 2
//	  "allow": ["Read", "Grep"],          // optional, default []
//	  "deny": ["Bash"],                   // optional, default []
//	  "max_cost_microdollars": 5000,      // 0..4294967295
//	  "max_tool_calls": 10                // 0..65535
//	}
//
// A file whose first non-blank character is '{' is read as JSON (strictly,
// with codec/canonjson: duplicate keys are rejected); anything else as a
// single YAML document (aliases, merge keys, duplicate keys, non-decimal
// integers and unquoted non-string tool names are rejected). In both, an
// unknown key, a wrong type, an out-of-range number or a missing required
// field is an error, and so is a tool name that is empty, not valid UTF-8,
// holds a control character, or holds '+', '-' or '|': those characters
// separate tools in the policy hash input, so allowing them would let two
// different policies share one hash.
//
// Errors are a *codec.MalformedError listing every problem with its field
// path ("allow[2]") and, for YAML and JSON syntax errors, its byte offset.
func ParsePolicy(data []byte) (Policy, error) {
	if len(data) > MaxPolicySize {
		return Policy{}, codec.AsMalformed([]codec.Finding{codec.Malformed("", codec.NoOffset,
			"policy file is %d bytes, more than the %d accepted", len(data), MaxPolicySize)})
	}
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return parseJSONPolicy(data)
	}
	return parseYAMLPolicy(data)
}

// UnmarshalJSON reads a JSON policy file as ParsePolicy does.
func (p *Policy) UnmarshalJSON(data []byte) error {
	q, err := parseJSONPolicy(data)
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// MarshalJSON writes the policy in the policy file form ParsePolicy reads,
// indented by two spaces and ending in a newline: name (when set), mode by
// name, allow, deny, then the two budgets. It fails for a policy that
// ParsePolicy would reject (an undefined mode or an invalid tool name).
func (p Policy) MarshalJSON() ([]byte, error) {
	if !p.Mode.Known() {
		return nil, fmt.Errorf("governance: policy mode %s is not restricted, approved or autonomous", p.Mode)
	}
	if reason := checkText(p.Name); reason != "" {
		return nil, fmt.Errorf("governance: policy name: %s", reason)
	}
	tools := func(field string, list []string) (canonjson.Value, error) {
		elems := make([]canonjson.Value, len(list))
		for i, t := range list {
			if reason := checkTool(t); reason != "" {
				return canonjson.Value{}, fmt.Errorf("governance: %s[%d]: %s", field, i, reason)
			}
			elems[i] = canonjson.MakeString(t)
		}
		return canonjson.MakeArray(elems...), nil
	}
	allow, err := tools(fieldAllow, p.Allow)
	if err != nil {
		return nil, err
	}
	deny, err := tools(fieldDeny, p.Deny)
	if err != nil {
		return nil, err
	}
	var ms []canonjson.Member
	if p.Name != "" {
		ms = append(ms, canonjson.Member{Key: fieldName, Value: canonjson.MakeString(p.Name)})
	}
	ms = append(ms,
		canonjson.Member{Key: fieldMode, Value: canonjson.MakeString(p.Mode.String())},
		canonjson.Member{Key: fieldAllow, Value: allow},
		canonjson.Member{Key: fieldDeny, Value: deny},
		canonjson.Member{Key: fieldMaxCost, Value: canonjson.MakeUint(uint64(p.MaxCostMicrodollars))},
		canonjson.Member{Key: fieldMaxCalls, Value: canonjson.MakeUint(uint64(p.MaxToolCalls))},
	)
	return append(canonjson.Indent(canonjson.MakeObject(ms...)), '\n'), nil
}

// node is a parsed policy document, JSON or YAML, reduced to what the schema
// check needs.
type node struct {
	kind    string // "null", "boolean", "integer", "float", "string", "array", "object", or a YAML tag
	text    string // string content or number literal
	elems   []node
	members []member
	offset  int64
}

type member struct {
	key       string
	keyOffset int64
	val       node
}

// maxTreeDepth bounds how deep the converters descend; the schema needs two
// levels, deeper values only need their kind for a type error.
const maxTreeDepth = 4

func parseJSONPolicy(data []byte) (Policy, error) {
	v, err := canonjson.Parse(data)
	if err != nil {
		var se *canonjson.SyntaxError
		if errors.As(err, &se) {
			return Policy{}, codec.AsMalformed([]codec.Finding{se.Finding()})
		}
		return Policy{}, codec.AsMalformed([]codec.Finding{codec.Malformed("", codec.NoOffset, "%v", err)})
	}
	return fromTree(fromJSON(v, 0))
}

func fromJSON(v canonjson.Value, depth int) node {
	n := node{offset: codec.NoOffset}
	switch v.Type() {
	case canonjson.Null:
		n.kind = "null"
	case canonjson.Bool:
		n.kind = "boolean"
	case canonjson.Number:
		n.kind, n.text = "float", v.Literal()
		if v.IsInt() {
			n.kind = "integer"
		}
	case canonjson.String:
		n.kind, n.text = "string", mustStr(v)
	case canonjson.Array:
		n.kind = "array"
		if depth < maxTreeDepth {
			for _, e := range v.Elems() {
				n.elems = append(n.elems, fromJSON(e, depth+1))
			}
		}
	case canonjson.Object:
		n.kind = "object"
		if depth < maxTreeDepth {
			for _, m := range v.Members() {
				n.members = append(n.members, member{key: m.Key, keyOffset: codec.NoOffset, val: fromJSON(m.Value, depth+1)})
			}
		}
	}
	return n
}

func mustStr(v canonjson.Value) string {
	s, _ := v.Str()
	return s
}

func parseYAMLPolicy(data []byte) (Policy, error) {
	lines := lineStarts(data)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return Policy{}, codec.AsMalformed([]codec.Finding{codec.Malformed("", 0, "empty policy file")})
		}
		return Policy{}, codec.AsMalformed([]codec.Finding{yamlSyntax(err, lines)})
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		off := int64(codec.NoOffset)
		if err == nil {
			off = lines.offset(data, extra.Line, extra.Column)
		}
		return Policy{}, codec.AsMalformed([]codec.Finding{codec.Malformed("", off, "more than one YAML document")})
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return Policy{}, codec.AsMalformed([]codec.Finding{codec.Malformed("", 0, "empty policy file")})
	}
	y := yamlConv{data: data, lines: lines}
	root := y.convert(doc.Content[0], "", 0)
	p, err := fromTree(root)
	if len(y.findings) > 0 {
		fs := y.findings
		if err != nil {
			fs = append(fs, codec.FindingsOf(err)...)
		}
		return Policy{}, codec.AsMalformed(fs)
	}
	return p, err
}

// yamlSyntax turns a yaml error into a finding, at the start of the line
// the message names.
func yamlSyntax(err error, lines lineIndex) codec.Finding {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	off := int64(codec.NoOffset)
	if i := strings.Index(msg, "line "); i >= 0 {
		rest := msg[i+len("line "):]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if n, err := strconv.Atoi(rest[:j]); err == nil && n >= 1 && n <= len(lines) {
			off = int64(lines[n-1])
		}
	}
	return codec.Finding{Code: "yaml_syntax", Offset: off, Reason: msg}
}

type lineIndex []int

func lineStarts(data []byte) lineIndex {
	starts := lineIndex{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// offset converts a 1-based YAML line and column (in characters) to a byte
// offset, or NoOffset when they do not fit data.
func (l lineIndex) offset(data []byte, line, column int) int64 {
	if line < 1 || line > len(l) || column < 1 {
		return codec.NoOffset
	}
	off := l[line-1]
	for c := 1; c < column && off < len(data); c++ {
		_, n := utf8.DecodeRune(data[off:])
		off += n
	}
	return int64(off)
}

type yamlConv struct {
	data     []byte
	lines    lineIndex
	findings []codec.Finding
}

func (y *yamlConv) add(field string, n *yaml.Node, format string, args ...any) {
	y.findings = append(y.findings, codec.Malformed(field, y.lines.offset(y.data, n.Line, n.Column), format, args...))
}

func (y *yamlConv) convert(n *yaml.Node, path string, depth int) node {
	out := node{offset: y.lines.offset(y.data, n.Line, n.Column)}
	switch n.Kind {
	case yaml.AliasNode:
		y.add(path, n, "YAML aliases are not accepted in policy files")
		out.kind = "" // reported; the schema check skips it
	case yaml.ScalarNode:
		switch tag := n.ShortTag(); tag {
		case "!!str":
			out.kind, out.text = "string", n.Value
		case "!!int":
			out.kind, out.text = "integer", n.Value
		case "!!float":
			out.kind, out.text = "float", n.Value
		case "!!bool":
			out.kind, out.text = "boolean", n.Value
		case "!!null":
			out.kind = "null"
		default:
			out.kind = "YAML " + tag
		}
	case yaml.SequenceNode:
		out.kind = "array"
		if depth < maxTreeDepth {
			for i, e := range n.Content {
				out.elems = append(out.elems, y.convert(e, fmt.Sprintf("%s[%d]", path, i), depth+1))
			}
		}
	case yaml.MappingNode:
		out.kind = "object"
		if depth >= maxTreeDepth {
			break
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				y.add(path, k, "keys must be plain strings, got %s", describeYAMLKey(k))
				continue
			}
			field := joinPath(path, k.Value)
			if seen[k.Value] {
				y.add(field, k, "duplicate key %q", k.Value)
				continue
			}
			seen[k.Value] = true
			out.members = append(out.members, member{key: k.Value, keyOffset: y.lines.offset(y.data, k.Line, k.Column), val: y.convert(v, field, depth+1)})
		}
	default:
		out.kind = "YAML node"
	}
	return out
}

func describeYAMLKey(k *yaml.Node) string {
	switch k.Kind {
	case yaml.AliasNode:
		return "an alias"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.MappingNode:
		return "a mapping"
	}
	if k.ShortTag() == "!!merge" {
		return "a merge key (<<)"
	}
	return fmt.Sprintf("%s %q", k.ShortTag(), k.Value)
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fromTree checks a parsed document against the policy file schema.
func fromTree(root node) (Policy, error) {
	var fs []codec.Finding
	bad := func(field string, n node, format string, args ...any) {
		fs = append(fs, codec.Malformed(field, n.offset, format, args...))
	}
	if root.kind != "object" {
		bad("", root, "want an object (mapping) of policy fields, got %s", root.kind)
		return Policy{}, codec.AsMalformed(fs)
	}
	var p Policy
	seen := map[string]bool{}
	for _, m := range root.members {
		seen[m.key] = true
		v := m.val
		if v.kind == "" {
			continue // already reported by the YAML reader
		}
		switch m.key {
		case fieldName:
			if v.kind != "string" {
				bad(m.key, v, "want string, got %s", v.kind)
			} else if reason := checkText(v.text); reason != "" {
				bad(m.key, v, "%s", reason)
			} else {
				p.Name = v.text
			}
		case fieldMode:
			switch v.kind {
			case "string":
				mode, ok := ParseMode(v.text)
				if !ok {
					bad(m.key, v, `want "restricted", "approved" or "autonomous", got %q`, v.text)
				}
				p.Mode = mode
			case "integer":
				n, ok := parseUint(v.text, uint64(ModeAutonomous))
				if !ok {
					bad(m.key, v, "want 0 (restricted), 1 (approved) or 2 (autonomous), got %s", v.text)
				}
				p.Mode = Mode(n)
			default:
				bad(m.key, v, "want a mode name or 0, 1 or 2, got %s", v.kind)
			}
		case fieldAllow, fieldDeny:
			if v.kind != "array" {
				bad(m.key, v, "want array of tool names, got %s", v.kind)
				continue
			}
			var list []string
			for i, e := range v.elems {
				field := fmt.Sprintf("%s[%d]", m.key, i)
				if e.kind == "" {
					continue
				}
				if e.kind != "string" {
					bad(field, e, "want string, got %s", e.kind)
					continue
				}
				if reason := checkTool(e.text); reason != "" {
					bad(field, e, "%s", reason)
					continue
				}
				list = append(list, e.text)
			}
			if m.key == fieldAllow {
				p.Allow = list
			} else {
				p.Deny = list
			}
		case fieldMaxCost:
			n, ok := integerField(m.key, v, math.MaxUint32, bad)
			if ok {
				p.MaxCostMicrodollars = uint32(n)
			}
		case fieldMaxCalls:
			n, ok := integerField(m.key, v, math.MaxUint16, bad)
			if ok {
				p.MaxToolCalls = uint16(n)
			}
		default:
			fs = append(fs, codec.Malformed(m.key, m.keyOffset, "unknown field (known: %s)", knownFields))
		}
	}
	for _, f := range []string{fieldMode, fieldMaxCost, fieldMaxCalls} {
		if !seen[f] {
			fs = append(fs, codec.Malformed(f, codec.NoOffset, "required field is missing"))
		}
	}
	if len(fs) > 0 {
		return Policy{}, codec.AsMalformed(fs)
	}
	return p, nil
}

func integerField(field string, v node, max uint64, bad func(string, node, string, ...any)) (uint64, bool) {
	if v.kind != "integer" {
		bad(field, v, "want integer 0..%d, got %s", max, describeValue(v))
		return 0, false
	}
	n, ok := parseUint(v.text, max)
	if !ok {
		bad(field, v, "want integer 0..%d, got %s", max, v.text)
	}
	return n, ok
}

func describeValue(v node) string {
	switch v.kind {
	case "float", "boolean":
		return v.kind + " " + v.text
	case "string":
		return "string " + strconv.Quote(v.text)
	}
	return v.kind
}

// parseUint reads a decimal integer literal ("-0" counts as 0, as Python
// reads it) no larger than max.
func parseUint(lit string, max uint64) (uint64, bool) {
	if lit == "-0" {
		return 0, true
	}
	if lit == "" || len(lit) > 20 {
		return 0, false
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] < '0' || lit[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(lit, 10, 64)
	if err != nil || n > max {
		return 0, false
	}
	return n, true
}

// checkText returns why s is not acceptable text (a name or a tool), or "".
func checkText(s string) string {
	if !utf8.ValidString(s) {
		return "not valid UTF-8 (a lone surrogate escape?)"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Sprintf("contains the control character %U", r)
		}
	}
	return ""
}

// checkTool returns why a tool name is not acceptable, or "".
func checkTool(t string) string {
	if t == "" {
		return "empty tool name"
	}
	if reason := checkText(t); reason != "" {
		return reason
	}
	if i := strings.IndexAny(t, "+-|"); i >= 0 {
		return fmt.Sprintf("tool name %q contains %q, which separates tools in the policy hash input and would make the hash ambiguous", t, t[i])
	}
	return ""
}
