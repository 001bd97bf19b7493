package vrfrun

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/proofledger/ledger/codec/vrf"
)

// The VRF specification's tier-1 checks, evaluated natively (no code runs)
// when ParseOptions.SpecChecks is set. A request lists them as
//
//	"checks": [{"name": "has_name", "constraint": "json_path:$.name exists"}, ...]
//
// at the top level or under "verification" (the top level wins, as for
// schema and constraints). "name" is optional; a check without one is
// named check_<n>, n being the number of details before it (as the
// reference names constraint_<n>). The constraint grammar (white space
// around the whole is ignored; " " stands for one or more spaces or tabs;
// spaces or tabs may also surround op; text holds no quote of its kind):
//
//	constraint = "json_parse"
//	           | "json_path:" path " exists"
//	           | "json_path:" path " equals " json
//	           | [ "json_path:" path " " ] "length" op int
//	           | "regex:" pattern
//	path       = "$" *( "." name | "[" index "]" | "['" text "']" | "[\"" text "\"]" )
//	name       = 1*( letter | digit | "_" | "-" )      ; letters and digits of any script
//	index      = 1*digit                               ; list position, from 0
//	op         = "<=" | "<" | ">=" | ">" | "==" | "!="
//	int        = 1*digit
//	json       = any JSON value (Python's json.loads syntax)
//	pattern    = a Go RE2 regular expression (not Python's re)
//
// What each form checks, "the output" being the value the reference's
// constraints see as `output` (output.content parsed as JSON when it is
// a string that parses, else as given):
//   - json_parse: pass when the output text (output.content when it is a
//     string, or output itself when it is a string) parses as JSON, or
//     when the output is given as a JSON value with no text to parse;
//     fail otherwise.
//   - exists: pass when the path leads to a value (null counts), fail
//     otherwise.
//   - equals: pass when the value at the path equals the JSON value:
//     numbers by value (1 equals 1.0), booleans only to booleans,
//     strings by code points, lists item by item, objects key by key in
//     any order; fail otherwise or when the path leads nowhere.
//   - length: Python's len() of the output (or of the value at the path):
//     code points of a string, items of a list or object, compared with
//     the integer; `length <= 1000` is the expr constraint
//     `len(output) <= 1000`. Error for a number, boolean or null.
//   - regex: pass when the pattern matches anywhere in the output text
//     (re.search-like); error when there is no text (the output was given
//     as a non-string JSON value).
//
// A malformed check is a request error naming the field.

// specCheck is one parsed check.
type specCheck struct {
	name string
	form string // "json_parse", "exists", "equals", "length", "regex"
	path []pathStep
	want value          // equals
	op   string         // length
	n    int64          // length
	re   *regexp.Regexp // regex
}

// pathStep is one step of a json_path: a dict key or a list index.
type pathStep struct {
	key   string
	index int
	isKey bool
}

var errCheckSyntax = errors.New("bad check")

// parseSpecChecks reads the checks list of a tier-1 request.
func (r *Request) parseSpecChecks(root, ver value) error {
	list, field := value{}, ""
	if v, ok := root.get("checks"); ok {
		list, field = v, "checks"
	} else if v, ok := ver.get("checks"); ok {
		list, field = v, "verification.checks"
	} else {
		return nil
	}
	if list.k != kList {
		return badField(field, "want a list of check objects, got %s", list.typeName())
	}
	before := len(r.schemaRes) + len(r.constraints)
	for i, item := range list.list {
		f := fmt.Sprintf("%s[%d]", field, i)
		if item.k != kDict {
			return badField(f, "want an object, got %s", item.typeName())
		}
		c, ok := item.get("constraint")
		if !ok {
			return badField(f+".constraint", "missing")
		}
		if c.k != kStr {
			return badField(f+".constraint", "want a string, got %s", c.typeName())
		}
		sc, err := parseCheck(c.s)
		if err != nil {
			return badField(f+".constraint", "%v", err)
		}
		sc.name = "check_" + strconv.Itoa(before+i)
		if n, ok := item.get("name"); ok {
			if n.k != kStr {
				return badField(f+".name", "want a string, got %s", n.typeName())
			}
			sc.name = n.s
		}
		r.checks = append(r.checks, sc)
	}
	return nil
}

// parseCheck parses one constraint string of the grammar above.
func parseCheck(s string) (specCheck, error) {
	s = strings.Trim(s, " \t\r\n")
	var c specCheck
	switch {
	case s == "json_parse":
		c.form = "json_parse"
		return c, nil
	case strings.HasPrefix(s, "regex:"):
		re, err := regexp.Compile(s[len("regex:"):])
		if err != nil {
			return c, fmt.Errorf("%w: regex: %v", errCheckSyntax, err)
		}
		c.form, c.re = "regex", re
		return c, nil
	case strings.HasPrefix(s, "length"):
		return parseLength(c, s)
	case strings.HasPrefix(s, "json_path:"):
		rest := s[len("json_path:"):]
		path, n, err := parsePath(rest)
		if err != nil {
			return c, err
		}
		c.path = path
		pred := rest[n:]
		trimmed := strings.TrimLeft(pred, " \t")
		if len(trimmed) == len(pred) {
			return c, fmt.Errorf("%w: want exists, equals or length after the path %q", errCheckSyntax, rest[:n])
		}
		word, arg := trimmed, ""
		if i := strings.IndexAny(trimmed, " \t"); i >= 0 {
			word, arg = trimmed[:i], trimmed[i+1:]
		}
		switch word {
		case "exists":
			if strings.Trim(arg, " \t") != "" {
				return c, fmt.Errorf("%w: unexpected %q after exists", errCheckSyntax, arg)
			}
			c.form = "exists"
			return c, nil
		case "equals":
			v, err := parseText(strings.Trim(arg, " \t"))
			if err != nil {
				return c, fmt.Errorf("%w: equals: not a JSON value: %v", errCheckSyntax, err)
			}
			c.form, c.want = "equals", v
			return c, nil
		case "length":
			return parseLength(c, trimmed)
		}
		return c, fmt.Errorf("%w: want exists, equals or length after the path, got %q", errCheckSyntax, word)
	}
	return c, fmt.Errorf("%w: %q is not json_parse, json_path, length or regex", errCheckSyntax, clip(s, 40))
}

// parseLength parses `length <op> <int>`.
func parseLength(c specCheck, s string) (specCheck, error) {
	rest := strings.TrimPrefix(s, "length")
	if rest == "" || !strings.ContainsRune(" \t<>=!", rune(rest[0])) {
		return c, fmt.Errorf("%w: want `length <op> <integer>`", errCheckSyntax)
	}
	rest = strings.TrimLeft(rest, " \t")
	for _, op := range []string{"<=", ">=", "==", "!=", "<", ">"} {
		if strings.HasPrefix(rest, op) {
			num := strings.Trim(rest[len(op):], " \t")
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil || n < 0 || strings.HasPrefix(num, "+") {
				return c, fmt.Errorf("%w: length: %q is not a non-negative integer", errCheckSyntax, num)
			}
			c.form, c.op, c.n = "length", op, n
			return c, nil
		}
	}
	return c, fmt.Errorf("%w: length: want one of <= < >= > == != before the integer", errCheckSyntax)
}

// parsePath parses a json_path at the start of s and returns its steps
// and length in bytes.
func parsePath(s string) ([]pathStep, int, error) {
	if !strings.HasPrefix(s, "$") {
		return nil, 0, fmt.Errorf("%w: a json_path starts with $", errCheckSyntax)
	}
	var steps []pathStep
	i := 1
	for i < len(s) {
		switch s[i] {
		case '.':
			j := i + 1
			for j < len(s) {
				r, n := decodeWTF8(s[j:])
				if r != '_' && r != '-' && !isLetterOrDigit(r) {
					break
				}
				j += n
			}
			if j == i+1 {
				return nil, 0, fmt.Errorf("%w: json_path: empty name at byte %d", errCheckSyntax, i+1)
			}
			steps = append(steps, pathStep{key: s[i+1 : j], isKey: true})
			i = j
		case '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, 0, fmt.Errorf("%w: json_path: unclosed [ at byte %d", errCheckSyntax, i)
			}
			inner := s[i+1 : i+end]
			if len(inner) >= 2 && (inner[0] == '\'' || inner[0] == '"') {
				q := inner[0]
				// The closing quote must be followed by ']'.
				close := strings.IndexByte(s[i+2:], q)
				if close < 0 || i+2+close+1 >= len(s) || s[i+2+close+1] != ']' {
					return nil, 0, fmt.Errorf("%w: json_path: want %c...%c] at byte %d", errCheckSyntax, q, q, i)
				}
				steps = append(steps, pathStep{key: s[i+2 : i+2+close], isKey: true})
				i = i + 2 + close + 2
				continue
			}
			n, err := strconv.Atoi(inner)
			if err != nil || n < 0 || strings.HasPrefix(inner, "+") {
				return nil, 0, fmt.Errorf("%w: json_path: [%s] is not a list index or a quoted key", errCheckSyntax, inner)
			}
			steps = append(steps, pathStep{index: n})
			i += end + 1
		default:
			return steps, i, nil
		}
	}
	return steps, i, nil
}

func isLetterOrDigit(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 0x7F && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// lookup follows a path from v.
func lookup(v value, path []pathStep) (value, bool) {
	for _, st := range path {
		if st.isKey {
			next, ok := v.get(st.key)
			if !ok {
				return value{}, false
			}
			v = next
			continue
		}
		if v.k != kList || st.index >= len(v.list) {
			return value{}, false
		}
		v = v.list[st.index]
	}
	return v, true
}

// pathString writes a path back as $.a[0]['b c'].
func pathString(path []pathStep) string {
	var b strings.Builder
	b.WriteByte('$')
	for _, st := range path {
		switch {
		case !st.isKey:
			fmt.Fprintf(&b, "[%d]", st.index)
		case st.key != "" && strings.IndexFunc(st.key, func(r rune) bool { return r != '_' && r != '-' && !isLetterOrDigit(r) }) < 0:
			b.WriteString("." + st.key)
		case strings.Contains(st.key, "'"):
			b.WriteString(`["` + st.key + `"]`)
		default:
			b.WriteString("['" + st.key + "']")
		}
	}
	return b.String()
}

// jsonEqual is the equals check's equality.
func jsonEqual(a, b value) bool {
	an, aNum := a.asFloat()
	bn, bNum := b.asFloat()
	if a.k != kBool && b.k != kBool && aNum && bNum {
		if a.k == kInt && b.k == kInt {
			return a.num == b.num
		}
		return an == bn
	}
	if a.k != b.k {
		return false
	}
	switch a.k {
	case kNull:
		return true
	case kBool:
		return a.b == b.b
	case kStr:
		return a.s == b.s
	case kList:
		if len(a.list) != len(b.list) {
			return false
		}
		for i := range a.list {
			if !jsonEqual(a.list[i], b.list[i]) {
				return false
			}
		}
		return true
	case kDict:
		if len(a.keys) != len(b.keys) {
			return false
		}
		for i, k := range a.keys {
			bv, ok := b.get(k)
			if !ok || !jsonEqual(a.vals[i], bv) {
				return false
			}
		}
		return true
	}
	return false
}

// eval decides a check on the request's output.
func (c specCheck) eval(r *Request) checkResult {
	res := checkResult{name: c.name}
	pass := func() checkResult { res.status = vrf.StatusPass; return res }
	fail := func(format string, args ...any) checkResult {
		res.status, res.err = vrf.StatusFail, fmt.Sprintf(format, args...)
		return res
	}
	errorf := func(format string, args ...any) checkResult {
		res.status, res.err = vrf.StatusError, fmt.Sprintf(format, args...)
		return res
	}
	switch c.form {
	case "json_parse":
		if r.outputText == nil {
			return pass()
		}
		if _, err := parseText(*r.outputText); err != nil {
			return fail("output is not JSON: %v", err)
		}
		return pass()
	case "regex":
		if r.outputText == nil {
			return errorf("regex: the output is a %s, not text", r.output.typeName())
		}
		if c.re.MatchString(*r.outputText) {
			return pass()
		}
		return fail("no match for %s", c.re.String())
	}
	target, ok := lookup(r.output, c.path)
	where := pathString(c.path)
	switch c.form {
	case "exists":
		if !ok {
			return fail("no value at %s", where)
		}
		return pass()
	case "equals":
		if !ok {
			return fail("no value at %s", where)
		}
		if jsonEqual(target, c.want) {
			return pass()
		}
		return fail("got %s at %s, expected %s", clip(compactJSON(target), 200), where, clip(compactJSON(c.want), 200))
	case "length":
		if !ok {
			return fail("no value at %s", where)
		}
		var n int64
		switch target.k {
		case kStr:
			n = int64(pyLen(target.s))
		case kList:
			n = int64(len(target.list))
		case kDict:
			n = int64(len(target.keys))
		default:
			return errorf("object of type '%s' has no len()", target.typeName())
		}
		if compare(n, c.op, c.n) {
			return pass()
		}
		return fail("length %d at %s, want %s %d", n, where, c.op, c.n)
	}
	return errorf("unknown check form %q", c.form)
}

func compare(a int64, op string, b int64) bool {
	switch op {
	case "<=":
		return a <= b
	case "<":
		return a < b
	case ">=":
		return a >= b
	case ">":
		return a > b
	case "==":
		return a == b
	case "!=":
		return a != b
	}
	return false
}

func compactJSON(v value) string {
	return string(appendDumps(nil, v, dumpOpts{compact: true}))
}
