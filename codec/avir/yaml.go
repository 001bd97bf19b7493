package avir

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// The reference loads YAML specifications with PyYAML's safe_load, which
// follows YAML 1.1: plain scalars are typed by the regular expressions
// below (PyYAML's resolver.py), not by go.yaml.in/yaml/v3's YAML 1.2
// rules. `1e3` is a string, `1.0e+3` a float, `yes`/`on` are booleans,
// `010` is octal 8, `1:30` is the sexagesimal int 90, `2025-01-15` is a
// date. These are immutable tables.
var (
	yamlBoolRE  = regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`)
	yamlFloatRE = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	yamlIntRE   = regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	yamlNullRE  = regexp.MustCompile(`^(?:~|null|Null|NULL|)$`)
	yamlTimeRE  = regexp.MustCompile(`^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$`)
	// Python's float() grammar, for explicitly tagged !!float scalars
	// (after PyYAML removed underscores and the sign).
	pyFloatRE = regexp.MustCompile(`^(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$`)
)

// maxIntDigits mirrors Python's default int_max_str_digits (3.11+): int()
// refuses longer decimal strings, and so do we, for every base.
const maxIntDigits = 4300

// yamlDoc is a YAML specification converted to the JSON value the
// reference would hash, with what the conversion learned on the way.
type yamlDoc struct {
	value    canonjson.Value
	offs     offsets
	facts    []codec.Fact
	findings []codec.Finding
}

// parseYAML reads one YAML document as PyYAML's safe_load would and
// converts it to a canonjson.Value. Findings are YAML syntax errors
// ("yaml_syntax") and values safe_load or json.dumps cannot carry
// ("malformed"); when there are findings the value is unusable.
func parseYAML(data []byte) (doc yamlDoc) {
	lines := lineStarts(data)
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := decodeYAML(dec, &root); err != nil {
		if errors.Is(err, io.EOF) {
			// An empty stream: safe_load returns None.
			return yamlDoc{value: canonjson.MakeNull(), offs: offsets{"": 0}}
		}
		return yamlDoc{findings: []codec.Finding{yamlSyntax(err, lines)}}
	}
	var extra yaml.Node
	switch err := decodeYAML(dec, &extra); {
	case err == nil:
		return yamlDoc{findings: []codec.Finding{{
			Code: "yaml_syntax", Offset: nodeOffset(&extra, data, lines),
			Reason: "expected a single document in the stream, found another",
		}}}
	case !errors.Is(err, io.EOF):
		return yamlDoc{findings: []codec.Finding{yamlSyntax(err, lines)}}
	}
	c := yamlConv{data: data, lines: lines, offs: offsets{}, budget: 2*len(data) + 64, active: map[*yaml.Node]bool{}}
	v := c.node(&root, 0)
	return yamlDoc{value: v, offs: c.offs, facts: c.facts, findings: c.findings}
}

// decodeYAML runs the third-party parser, turning a panic inside it into
// an error: no input may crash the caller.
func decodeYAML(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: parser failure: %v", r)
		}
	}()
	return dec.Decode(n)
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

func yamlSyntax(err error, lines []int) codec.Finding {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	off := int64(codec.NoOffset)
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		if n, e := strconv.Atoi(m[1]); e == nil && n >= 1 && n <= len(lines) {
			off = int64(lines[n-1])
		}
	}
	return codec.Finding{Code: "yaml_syntax", Offset: off, Reason: msg}
}

// lineStarts returns the byte offset at which each line begins.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// nodeOffset converts a node's 1-based line and (rune) column to a byte
// offset.
func nodeOffset(n *yaml.Node, data []byte, lines []int) int64 {
	if n.Line < 1 || n.Line > len(lines) || n.Column < 1 {
		return codec.NoOffset
	}
	off := lines[n.Line-1]
	for col := 1; col < n.Column && off < len(data) && data[off] != '\n'; col++ {
		_, size := utf8.DecodeRune(data[off:])
		off += size
	}
	return int64(off)
}

type yamlConv struct {
	data     []byte
	lines    []int
	offs     offsets
	facts    []codec.Fact
	findings []codec.Finding
	// budget bounds the number of values built, so that aliases cannot
	// expand a small text into a huge value ("billion laughs").
	budget int
	active map[*yaml.Node]bool // anchors being expanded, to stop alias cycles
	stack  path                // the path of the value being converted
}

func (c *yamlConv) fail(n *yaml.Node, format string, args ...any) canonjson.Value {
	c.findings = append(c.findings, codec.Malformed(c.stack.String(), nodeOffset(n, c.data, c.lines), format, args...))
	return canonjson.MakeNull()
}

// child converts n as the value at key (a string) or index (an int) of
// the value being converted.
func (c *yamlConv) child(n *yaml.Node, e pathElem, depth int) canonjson.Value {
	c.stack = append(c.stack, e)
	v := c.node(n, depth+1)
	c.stack = c.stack[:len(c.stack)-1]
	return v
}

func (c *yamlConv) node(n *yaml.Node, depth int) canonjson.Value {
	if len(c.findings) > 0 && c.budget <= 0 {
		return canonjson.MakeNull()
	}
	if depth > canonjson.MaxDepth {
		return c.fail(n, "nesting deeper than %d", canonjson.MaxDepth)
	}
	if c.budget--; c.budget < 0 {
		return c.fail(n, "aliases expand the document beyond %d values", 2*len(c.data)+64)
	}
	if len(c.stack) <= maxOffsetDepth {
		c.offs.record(c.stack, nodeOffset(n, c.data, c.lines))
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return canonjson.MakeNull()
		}
		return c.node(n.Content[0], depth)
	case yaml.AliasNode:
		if n.Alias == nil {
			return c.fail(n, "alias *%s names no anchor", n.Value)
		}
		if c.active[n.Alias] {
			return c.fail(n, "alias *%s refers to a value that contains it", n.Value)
		}
		c.active[n.Alias] = true
		v := c.node(n.Alias, depth+1)
		delete(c.active, n.Alias)
		return v
	case yaml.SequenceNode:
		if n.Style&yaml.TaggedStyle != 0 && n.Tag != "!!seq" {
			return c.fail(n, "YAML tag %s is not supported (safe_load output would not be JSON)", n.Tag)
		}
		elems := make([]canonjson.Value, 0, len(n.Content))
		for i, e := range n.Content {
			elems = append(elems, c.child(e, pathElem{index: i, isIdx: true}, depth))
		}
		return canonjson.MakeArray(elems...)
	case yaml.MappingNode:
		if n.Style&yaml.TaggedStyle != 0 && n.Tag != "!!map" {
			return c.fail(n, "YAML tag %s is not supported (safe_load output would not be JSON)", n.Tag)
		}
		return c.mapping(n, depth)
	case yaml.ScalarNode:
		return c.scalar(n)
	}
	return c.fail(n, "unexpected YAML node")
}

// mapping builds an object as PyYAML's construct_mapping does after
// flatten_mapping: merged ("<<") pairs first, later pairs override earlier
// ones, and a key keeps the position of its first appearance. Unlike
// PyYAML, a key written twice in the same mapping is rejected: two readers
// must not see two documents.
func (c *yamlConv) mapping(n *yaml.Node, depth int) canonjson.Value {
	if len(n.Content)%2 != 0 {
		return c.fail(n, "mapping with an odd number of nodes")
	}
	type pair struct {
		key string
		val canonjson.Value
	}
	var merged, own []pair
	ownSeen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if kn.Kind == yaml.ScalarNode && kn.Value == "<<" && isPlain(kn) {
			// Merge: a mapping, or a sequence of mappings whose earlier
			// entries win over later ones.
			srcs := []*yaml.Node{vn}
			if target := deref(vn); target != nil && target.Kind == yaml.SequenceNode {
				srcs = nil
				for j := len(target.Content) - 1; j >= 0; j-- {
					srcs = append(srcs, target.Content[j])
				}
			}
			for _, src := range srcs {
				m := c.node(src, depth+1)
				if m.Type() != canonjson.Object {
					return c.fail(vn, "merge key << wants a mapping or a list of mappings")
				}
				for _, mm := range m.Members() {
					merged = append(merged, pair{mm.Key, mm.Value})
				}
			}
			continue
		}
		key, ok := c.key(kn)
		if !ok {
			continue
		}
		if ownSeen[key] {
			c.stack = append(c.stack, pathElem{key: key})
			c.fail(kn, "duplicate mapping key %q", key)
			c.stack = c.stack[:len(c.stack)-1]
			continue
		}
		ownSeen[key] = true
		own = append(own, pair{key, c.child(vn, pathElem{key: key}, depth)})
	}
	members := make([]canonjson.Member, 0, len(merged)+len(own))
	pos := map[string]int{}
	for _, pr := range append(merged, own...) {
		if i, ok := pos[pr.key]; ok {
			members[i].Value = pr.val
			continue
		}
		pos[pr.key] = len(members)
		members = append(members, canonjson.Member{Key: pr.key, Value: pr.val})
	}
	return canonjson.MakeObject(members...)
}

// deref follows aliases to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	return n
}

func isPlain(n *yaml.Node) bool {
	return n.Style&(yaml.TaggedStyle|yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
}

// key returns a mapping key, which must construct to a Python str:
// json.dumps would turn other keys into strings of its own choosing (True
// becomes "true") or fail while sorting mixed types.
func (c *yamlConv) key(kn *yaml.Node) (string, bool) {
	if kn.Kind != yaml.ScalarNode {
		c.fail(kn, "mapping key must be a string, got a YAML %s", kindName(kn.Kind))
		return "", false
	}
	if tag := scalarTag(kn); tag != "!!str" {
		c.fail(kn, "mapping key %q must be a string, YAML 1.1 reads it as %s", kn.Value, strings.TrimPrefix(tag, "!!"))
		return "", false
	}
	return kn.Value, true
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "sequence"
	case yaml.MappingNode:
		return "mapping"
	case yaml.AliasNode:
		return "alias"
	}
	return "node"
}

// scalarTag returns the tag PyYAML gives a scalar: its explicit tag, str
// for quoted and block scalars, and the YAML 1.1 implicit resolution for
// plain ones.
func scalarTag(n *yaml.Node) string {
	if n.Style&yaml.TaggedStyle != 0 {
		return n.Tag
	}
	if !isPlain(n) {
		return "!!str"
	}
	v := n.Value
	switch {
	case yamlBoolRE.MatchString(v):
		return "!!bool"
	case yamlFloatRE.MatchString(v):
		return "!!float"
	case yamlIntRE.MatchString(v):
		return "!!int"
	case v == "<<":
		return "!!merge"
	case yamlNullRE.MatchString(v):
		return "!!null"
	case yamlTimeRE.MatchString(v):
		return "!!timestamp"
	case v == "=":
		return "!!value"
	}
	return "!!str"
}

func (c *yamlConv) scalar(n *yaml.Node) canonjson.Value {
	switch tag := scalarTag(n); tag {
	case "!!str":
		return canonjson.MakeString(n.Value)
	case "!!null":
		return canonjson.MakeNull()
	case "!!bool":
		switch strings.ToLower(n.Value) {
		case "yes", "true", "on":
			return canonjson.MakeBool(true)
		case "no", "false", "off":
			return canonjson.MakeBool(false)
		}
		return c.fail(n, "%q is not a YAML boolean", n.Value)
	case "!!int":
		i, err := pyYAMLInt(n.Value)
		if err != nil {
			return c.fail(n, "%v", err)
		}
		return canonjson.MakeBigInt(i)
	case "!!float":
		f, err := pyYAMLFloat(n.Value)
		if err != nil {
			return c.fail(n, "%v", err)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return c.fail(n, "non-finite float %s has no JSON form", n.Value)
		}
		return canonjson.MakeFloat(f)
	case "!!timestamp":
		if !yamlTimeRE.MatchString(n.Value) {
			return c.fail(n, "%q is not a YAML timestamp", n.Value)
		}
		c.facts = append(c.facts, codec.Fact{
			Label: "yaml timestamp",
			Value: fmt.Sprintf("%s: %s kept as a string (PyYAML makes it a date, which the reference's json.dumps cannot hash)", c.stack, n.Value),
		})
		return canonjson.MakeString(n.Value)
	default:
		return c.fail(n, "YAML tag %s is not supported (safe_load output would not be JSON)", tag)
	}
}

// pyYAMLInt is PyYAML's construct_yaml_int.
func pyYAMLInt(text string) (*big.Int, error) {
	v := strings.ReplaceAll(text, "_", "")
	neg := false
	if v != "" && (v[0] == '-' || v[0] == '+') {
		neg = v[0] == '-'
		v = v[1:]
	}
	if len(v) > maxIntDigits {
		return nil, fmt.Errorf("integer %.20s... has more than %d digits", text, maxIntDigits)
	}
	out := new(big.Int)
	ok := true
	switch {
	case v == "":
		ok = false
	case v == "0":
	case strings.HasPrefix(v, "0b"):
		_, ok = out.SetString(v[2:], 2)
	case strings.HasPrefix(v, "0x"):
		_, ok = out.SetString(v[2:], 16)
	case v[0] == '0':
		_, ok = out.SetString(v, 8)
	case strings.Contains(v, ":"):
		base := big.NewInt(1)
		parts := strings.Split(v, ":")
		for i := len(parts) - 1; i >= 0 && ok; i-- {
			d, good := new(big.Int).SetString(parts[i], 10)
			ok = good && parts[i] != "" && isDigits(parts[i])
			if ok {
				out.Add(out, d.Mul(d, base))
				base.Mul(base, big.NewInt(60))
			}
		}
	default:
		ok = isDigits(v)
		if ok {
			_, ok = out.SetString(v, 10)
		}
	}
	if !ok {
		return nil, fmt.Errorf("%q is not a YAML integer", text)
	}
	if neg {
		out.Neg(out)
	}
	return out, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// pyYAMLFloat is PyYAML's construct_yaml_float.
func pyYAMLFloat(text string) (float64, error) {
	v := strings.ToLower(strings.ReplaceAll(text, "_", ""))
	sign := 1.0
	if v != "" && (v[0] == '-' || v[0] == '+') {
		if v[0] == '-' {
			sign = -1
		}
		v = v[1:]
	}
	bad := fmt.Errorf("%q is not a YAML float", text)
	switch {
	case v == ".inf":
		return sign * math.Inf(1), nil
	case v == ".nan":
		return math.NaN(), nil
	case strings.Contains(v, ":"):
		parts := strings.Split(v, ":")
		total, base := 0.0, 1.0
		for i := len(parts) - 1; i >= 0; i-- {
			if !pyFloatRE.MatchString(parts[i]) {
				return 0, bad
			}
			d, err := strconv.ParseFloat(parts[i], 64)
			if err != nil && !math.IsInf(d, 0) {
				return 0, bad
			}
			total += d * base
			base *= 60
		}
		return sign * total, nil
	}
	if !pyFloatRE.MatchString(v) {
		return 0, bad
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, bad
	}
	return sign * f, nil
}
