package vrfrun

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/proofledger/ledger/codec/canonjson"
)

// This file holds a JSON reader and writer that behave exactly like
// Python's json.loads and json.dumps, because the reference verifier reads
// request bodies with json.loads and hashes them with json.dumps. They
// differ from codec/canonjson on purpose: a request may hold duplicate keys
// (Python keeps the last value, at the first key's place), NaN, Infinity
// and -Infinity, and the hashes use json.dumps' default separators ", " and
// ": " rather than the compact ones receipts are signed with.

// kind is the Python type json.loads gives a JSON value.
type kind uint8

const (
	kNull  kind = iota // None
	kBool              // bool
	kInt               // int
	kFloat             // float
	kStr               // str
	kList              // list
	kDict              // dict
)

// value is one JSON value as Python holds it.
type value struct {
	k kind
	b bool
	// num is an int's decimal digits as Python's str(int) writes them.
	num string
	f   float64
	// s is a str's code points in generalized UTF-8 (WTF-8): lone
	// surrogates, which Python strings may hold, are kept as their
	// three-byte encoding.
	s    string
	list []value
	// keys and vals are a dict's items in Python's order: first
	// appearance of each key, last value given for it.
	keys []string
	vals []value
}

func pyNone() value             { return value{} }
func pyBool(b bool) value       { return value{k: kBool, b: b} }
func pyStrValue(s string) value { return value{k: kStr, s: s} }
func pyList(vs ...value) value  { return value{k: kList, list: vs} }
func pyInt(i int64) value       { return value{k: kInt, num: strconv.FormatInt(i, 10)} }

// pyDict builds a dict from alternating keys and values.
func pyDict(kv ...any) value {
	d := value{k: kDict}
	for i := 0; i+1 < len(kv); i += 2 {
		d.set(kv[i].(string), kv[i+1].(value))
	}
	return d
}

// typeName is Python's type(v).__name__.
func (v value) typeName() string {
	switch v.k {
	case kBool:
		return "bool"
	case kInt:
		return "int"
	case kFloat:
		return "float"
	case kStr:
		return "str"
	case kList:
		return "list"
	case kDict:
		return "dict"
	}
	return "NoneType"
}

// get returns a dict's item; ok is false when v is not a dict or has no
// such key (dict.get).
func (v value) get(key string) (value, bool) {
	if v.k != kDict {
		return value{}, false
	}
	for i, k := range v.keys {
		if k == key {
			return v.vals[i], true
		}
	}
	return value{}, false
}

// has reports whether a dict has key.
func (v value) has(key string) bool {
	_, ok := v.get(key)
	return ok
}

// set sets a dict item the way a Python dict does: a new key goes last, an
// existing key keeps its place and takes the new value.
func (v *value) set(key string, val value) {
	for i, k := range v.keys {
		if k == key {
			v.vals[i] = val
			return
		}
	}
	v.keys = append(v.keys, key)
	v.vals = append(v.vals, val)
}

// truthy is Python's bool(v).
func (v value) truthy() bool {
	switch v.k {
	case kBool:
		return v.b
	case kInt:
		return v.num != "0"
	case kFloat:
		return v.f != 0 // NaN is true, as in Python
	case kStr:
		return v.s != ""
	case kList:
		return len(v.list) > 0
	case kDict:
		return len(v.keys) > 0
	}
	return false
}

// equalsSmallInt is Python's v == n for n 0 or 1: ints, floats and bools
// compare by value, everything else is unequal.
func (v value) equalsSmallInt(n int) bool {
	switch v.k {
	case kBool:
		return (n == 1) == v.b
	case kInt:
		return v.num == strconv.Itoa(n)
	case kFloat:
		return v.f == float64(n)
	}
	return false
}

// asFloat is Python's float(v) for a number (bool counts as int); ok is
// false for other types or an int too large for a float (OverflowError).
func (v value) asFloat() (float64, bool) {
	switch v.k {
	case kBool:
		if v.b {
			return 1, true
		}
		return 0, true
	case kFloat:
		return v.f, true
	case kInt:
		f, err := strconv.ParseFloat(v.num, 64)
		if err != nil || math.IsInf(f, 0) {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

// ---- reading ----

// maxDepth is the deepest nesting of lists and dicts accepted. CPython's
// json gives up (RecursionError) a little under 1000 levels; 900 keeps
// every value accepted here readable by the Python that evaluates it.
const maxDepth = 900

// maxIntDigits is CPython's default limit on the digits of an int read
// from text (sys.get_int_max_str_digits()); json.loads raises ValueError
// beyond it.
const maxIntDigits = 4300

// jsonError reports where and why JSON text could not be read.
type jsonError struct {
	// Offset is the byte offset of the problem in the text.
	Offset int
	// Reason says what is wrong there.
	Reason string
	// fatal marks what Python raises as something other than a
	// JSONDecodeError (too many int digits, too deep): for tier 1's
	// output.content the reference catches only JSONDecodeError.
	fatal bool
}

func (e *jsonError) Error() string { return fmt.Sprintf("offset %d: %s", e.Offset, e.Reason) }

type pyParser struct {
	data []byte
	pos  int
}

// parseBody reads a request body as the reference's HTTP handler does
// (json.loads of the raw bytes): UTF-8, a leading byte order mark skipped,
// encoded surrogates accepted (Python decodes with surrogatepass).
func parseBody(data []byte) (value, error) {
	if off, ok := validWTF8(data); !ok {
		return value{}, &jsonError{Offset: off, Reason: fmt.Sprintf("invalid UTF-8 byte 0x%02x", data[off])}
	}
	if len(data) >= 4 && (data[0] == 0 || data[1] == 0) {
		return value{}, &jsonError{Offset: 0, Reason: "UTF-16 and UTF-32 bodies are not accepted, only UTF-8"}
	}
	p := pyParser{data: data}
	if len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF {
		p.pos = 3
	}
	return p.document()
}

// parseText reads a Python str as json.loads(str) does. s is WTF-8; a
// leading U+FEFF is an error, as in Python.
func parseText(s string) (value, error) {
	if strings.HasPrefix(s, "\uFEFF") {
		return value{}, &jsonError{Offset: 0, Reason: "unexpected UTF-8 byte order mark"}
	}
	p := pyParser{data: []byte(s)}
	return p.document()
}

func (p *pyParser) document() (value, error) {
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return value{}, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return value{}, p.fail("extra data after the JSON value")
	}
	return v, nil
}

func (p *pyParser) fail(format string, args ...any) error {
	return &jsonError{Offset: p.pos, Reason: fmt.Sprintf(format, args...)}
}

func (p *pyParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *pyParser) hasPrefix(s string) bool {
	return strings.HasPrefix(string(p.data[p.pos:min(len(p.data), p.pos+len(s))]), s)
}

func (p *pyParser) value(depth int) (value, error) {
	if p.pos >= len(p.data) {
		return value{}, p.fail("expecting a value")
	}
	switch c := p.data[p.pos]; {
	case c == '{' || c == '[':
		if depth >= maxDepth {
			e := p.fail("nested deeper than %d levels", maxDepth).(*jsonError)
			e.fatal = true
			return value{}, e
		}
		if c == '{' {
			return p.object(depth + 1)
		}
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		return pyStrValue(s), err
	case c == 'n' && p.hasPrefix("null"):
		p.pos += 4
		return pyNone(), nil
	case c == 't' && p.hasPrefix("true"):
		p.pos += 4
		return pyBool(true), nil
	case c == 'f' && p.hasPrefix("false"):
		p.pos += 5
		return pyBool(false), nil
	case c == 'N' && p.hasPrefix("NaN"):
		p.pos += 3
		return value{k: kFloat, f: math.NaN()}, nil
	case c == 'I' && p.hasPrefix("Infinity"):
		p.pos += 8
		return value{k: kFloat, f: math.Inf(1)}, nil
	case c == '-' && p.hasPrefix("-Infinity"):
		p.pos += 9
		return value{k: kFloat, f: math.Inf(-1)}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return value{}, p.fail("expecting a value")
}

func (p *pyParser) object(depth int) (value, error) {
	p.pos++ // {
	d := value{k: kDict}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return d, nil
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return value{}, p.fail("expecting a property name in double quotes")
		}
		key, err := p.str()
		if err != nil {
			return value{}, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return value{}, p.fail("expecting ':' after a property name")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth)
		if err != nil {
			return value{}, err
		}
		d.set(key, v)
		p.skipSpace()
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.pos++
			return d, nil
		}
		if p.pos >= len(p.data) || p.data[p.pos] != ',' {
			return value{}, p.fail("expecting ',' or '}' in an object")
		}
		p.pos++
		p.skipSpace()
	}
}

func (p *pyParser) array(depth int) (value, error) {
	p.pos++ // [
	l := value{k: kList}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return l, nil
	}
	for {
		v, err := p.value(depth)
		if err != nil {
			return value{}, err
		}
		l.list = append(l.list, v)
		p.skipSpace()
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			return l, nil
		}
		if p.pos >= len(p.data) || p.data[p.pos] != ',' {
			return value{}, p.fail("expecting ',' or ']' in an array")
		}
		p.pos++
		p.skipSpace()
	}
}

// number reads what CPython's number scanner reads:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?, a fraction or exponent
// that is not followed by digits being left for the caller.
func (p *pyParser) number() (value, error) {
	start := p.pos
	d := p.data
	i := p.pos
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return value{}, p.fail("expecting a value")
	}
	intEnd := i
	isFloat := false
	if i+1 < len(d) && d[i] == '.' && d[i+1] >= '0' && d[i+1] <= '9' {
		i += 2
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		isFloat = true
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		j := i + 1
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		if j < len(d) && d[j] >= '0' && d[j] <= '9' {
			for j < len(d) && d[j] >= '0' && d[j] <= '9' {
				j++
			}
			i = j
			isFloat = true
		}
	}
	lit := string(d[start:i])
	p.pos = i
	if isFloat {
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil && !math.IsInf(f, 0) && f != 0 {
			return value{}, &jsonError{Offset: start, Reason: fmt.Sprintf("bad number %q", lit)}
		}
		return value{k: kFloat, f: f}, nil
	}
	digits := lit
	neg := strings.HasPrefix(digits, "-")
	digits = strings.TrimPrefix(digits, "-")
	if len(digits) > maxIntDigits {
		return value{}, &jsonError{Offset: start, fatal: true,
			Reason: fmt.Sprintf("integer has %d digits, more than Python's limit of %d", intEnd-start, maxIntDigits)}
	}
	if neg && digits != "0" {
		digits = "-" + digits
	}
	return value{k: kInt, num: digits}, nil
}

// str reads a string literal into WTF-8, as CPython's strict scanner does:
// raw control characters are errors, \uXXXX pairs of surrogates combine,
// lone surrogates stay.
func (p *pyParser) str() (string, error) {
	p.pos++ // opening quote
	var b []byte
	d := p.data
	for {
		start := p.pos
		for p.pos < len(d) && d[p.pos] != '"' && d[p.pos] != '\\' && d[p.pos] >= 0x20 {
			p.pos++
		}
		b = append(b, d[start:p.pos]...)
		if p.pos >= len(d) {
			return "", p.fail("unterminated string")
		}
		switch c := d[p.pos]; {
		case c == '"':
			p.pos++
			return string(b), nil
		case c < 0x20:
			return "", p.fail("invalid control character 0x%02x in a string", c)
		}
		// backslash
		if p.pos+1 >= len(d) {
			return "", p.fail("unterminated string")
		}
		esc := d[p.pos+1]
		p.pos += 2
		switch esc {
		case '"', '\\', '/':
			b = append(b, esc)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(d, p.pos)
			if !ok {
				p.pos -= 2
				return "", p.fail("invalid \\uXXXX escape")
			}
			p.pos += 4
			if r >= 0xD800 && r <= 0xDBFF && p.pos+1 < len(d) && d[p.pos] == '\\' && d[p.pos+1] == 'u' {
				r2, ok := hex4(d, p.pos+2)
				if !ok {
					return "", p.fail("invalid \\uXXXX escape")
				}
				if r2 >= 0xDC00 && r2 <= 0xDFFF {
					r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
					p.pos += 6
				}
			}
			b = appendWTF8(b, r)
		default:
			p.pos -= 2
			return "", p.fail("invalid escape %q", string([]byte{'\\', esc}))
		}
	}
}

func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// appendWTF8 appends r in UTF-8, surrogates included (as Python's
// surrogatepass encodes them).
func appendWTF8(b []byte, r rune) []byte {
	if r >= 0xD800 && r <= 0xDFFF {
		return append(b, 0xED, byte(0xA0|(r>>6)&0x1F), byte(0x80|r&0x3F))
	}
	return utf8.AppendRune(b, r)
}

// decodeWTF8 returns the code point at the start of s and its length,
// decoding encoded surrogates too; (utf8.RuneError, 1) for a byte that
// starts no sequence.
func decodeWTF8(s string) (rune, int) {
	if len(s) >= 3 && s[0] == 0xED && s[1] >= 0xA0 && s[1] <= 0xBF && s[2] >= 0x80 && s[2] <= 0xBF {
		return 0xD000 | rune(s[1]&0x3F)<<6 | rune(s[2]&0x3F), 3
	}
	return utf8.DecodeRuneInString(s)
}

// validWTF8 reports whether b is UTF-8 with encoded surrogates allowed,
// and otherwise the offset of the first bad byte.
func validWTF8(b []byte) (int, bool) {
	s := string(b)
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := decodeWTF8(s[i:])
		if r == utf8.RuneError && n == 1 {
			return i, false
		}
		i += n
	}
	return 0, true
}

// hasSurrogate reports whether a WTF-8 string holds a lone surrogate, which
// Python cannot encode to UTF-8.
func hasSurrogate(s string) bool {
	for i := 0; i < len(s); {
		r, n := decodeWTF8(s[i:])
		if r >= 0xD800 && r <= 0xDFFF {
			return true
		}
		i += n
	}
	return false
}

// pyLen is Python's len() of a str: its code points.
func pyLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		_, w := decodeWTF8(s[i:])
		i += w
		n++
	}
	return n
}

// ---- writing ----

// dumpOpts selects a json.dumps flavour. ensure_ascii is always on.
type dumpOpts struct {
	sortKeys bool
	// compact uses the separators "," and ":" instead of Python's
	// defaults ", " and ": ".
	compact bool
}

// dumps is json.dumps(v, sort_keys=...) with the default separators and
// ensure_ascii; the reference hashes what it returns.
func dumps(v value, sortKeys bool) string {
	return string(appendDumps(nil, v, dumpOpts{sortKeys: sortKeys}))
}

func appendDumps(dst []byte, v value, o dumpOpts) []byte {
	itemSep, keySep := ", ", ": "
	if o.compact {
		itemSep, keySep = ",", ":"
	}
	switch v.k {
	case kNull:
		return append(dst, "null"...)
	case kBool:
		if v.b {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case kInt:
		return append(dst, v.num...)
	case kFloat:
		switch {
		case math.IsNaN(v.f):
			return append(dst, "NaN"...)
		case math.IsInf(v.f, 1):
			return append(dst, "Infinity"...)
		case math.IsInf(v.f, -1):
			return append(dst, "-Infinity"...)
		}
		return canonjson.AppendFloat(dst, v.f)
	case kStr:
		return appendJSONString(dst, v.s)
	case kList:
		dst = append(dst, '[')
		for i, e := range v.list {
			if i > 0 {
				dst = append(dst, itemSep...)
			}
			dst = appendDumps(dst, e, o)
		}
		return append(dst, ']')
	case kDict:
		idx := make([]int, len(v.keys))
		for i := range idx {
			idx[i] = i
		}
		if o.sortKeys {
			// WTF-8 byte order is code point order, Python's str order.
			slices.SortFunc(idx, func(a, b int) int { return strings.Compare(v.keys[a], v.keys[b]) })
		}
		dst = append(dst, '{')
		for n, i := range idx {
			if n > 0 {
				dst = append(dst, itemSep...)
			}
			dst = appendJSONString(dst, v.keys[i])
			dst = append(dst, keySep...)
			dst = appendDumps(dst, v.vals[i], o)
		}
		return append(dst, '}')
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as json.dumps does with ensure_ascii: printable
// ASCII as is except '"' and '\\', the short escapes \n \r \t \b \f, and
// every other code point as \uXXXX (a surrogate pair above U+FFFF).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7F {
			if c == '"' || c == '\\' {
				dst = append(dst, '\\')
			}
			dst = append(dst, c)
			i++
			continue
		}
		switch c {
		case '\n':
			dst = append(dst, '\\', 'n')
			i++
			continue
		case '\r':
			dst = append(dst, '\\', 'r')
			i++
			continue
		case '\t':
			dst = append(dst, '\\', 't')
			i++
			continue
		case '\b':
			dst = append(dst, '\\', 'b')
			i++
			continue
		case '\f':
			dst = append(dst, '\\', 'f')
			i++
			continue
		}
		r, n := decodeWTF8(s[i:])
		i += n
		if r > 0xFFFF {
			r -= 0x10000
			dst = appendU4(dst, 0xD800+(r>>10))
			dst = appendU4(dst, 0xDC00+(r&0x3FF))
			continue
		}
		dst = appendU4(dst, r)
	}
	return append(dst, '"')
}

func appendU4(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}

// ---- Python's str() and repr() ----

// pyStr is Python's str(v).
func pyStr(v value) string {
	if v.k == kStr {
		return v.s
	}
	return pyRepr(v)
}

// pyRepr is Python's repr(v).
func pyRepr(v value) string {
	return string(appendRepr(nil, v))
}

func appendRepr(dst []byte, v value) []byte {
	switch v.k {
	case kNull:
		return append(dst, "None"...)
	case kBool:
		if v.b {
			return append(dst, "True"...)
		}
		return append(dst, "False"...)
	case kInt:
		return append(dst, v.num...)
	case kFloat:
		return append(dst, pyFloatRepr(v.f)...)
	case kStr:
		return appendStrRepr(dst, v.s)
	case kList:
		dst = append(dst, '[')
		for i, e := range v.list {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendRepr(dst, e)
		}
		return append(dst, ']')
	case kDict:
		dst = append(dst, '{')
		for i, k := range v.keys {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendStrRepr(dst, k)
			dst = append(dst, ": "...)
			dst = appendRepr(dst, v.vals[i])
		}
		return append(dst, '}')
	}
	return dst
}

// pyFloatRepr is Python's repr(float).
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return canonjson.FormatFloat(f)
}

// appendStrRepr writes Python's repr of a str: single quotes unless the
// string holds a single quote and no double quote; \\, the quote, \t \n \r
// escaped; other non-printable code points as \xHH, \uHHHH or
// \UHHHHHHHH; printable non-ASCII kept.
func appendStrRepr(dst []byte, s string) []byte {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	dst = append(dst, quote)
	for i := 0; i < len(s); {
		r, n := decodeWTF8(s[i:])
		raw := s[i : i+n]
		i += n
		switch {
		case r == rune(quote) || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r == '\t':
			dst = append(dst, '\\', 't')
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r < 0x20 || r == 0x7F:
			dst = append(dst, '\\', 'x', hexDigits[r>>4], hexDigits[r&0xF])
		case r < 0x7F:
			dst = append(dst, byte(r))
		case pyPrintable(r) && !(r == utf8.RuneError && n == 1):
			dst = append(dst, raw...)
		case r <= 0xFF:
			dst = append(dst, '\\', 'x', hexDigits[r>>4], hexDigits[r&0xF])
		case r <= 0xFFFF:
			dst = append(dst, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
		default:
			dst = append(dst, '\\', 'U')
			for sh := 28; sh >= 0; sh -= 4 {
				dst = append(dst, hexDigits[r>>uint(sh)&0xF])
			}
		}
	}
	return append(dst, quote)
}

// pyPrintable is Python's str.isprintable for one code point: letters,
// marks, numbers, punctuation, symbols and the ASCII space (Go's
// unicode.IsPrint is the same definition, from Go's Unicode tables).
func pyPrintable(r rune) bool { return unicode.IsPrint(r) }
