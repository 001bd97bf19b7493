package canonjson

import (
	"fmt"
	"unicode/utf8"
	"unsafe"

	"github.com/proofledger/ledger/codec"
)

// MaxDepth is the deepest nesting of arrays and objects Parse accepts.
const MaxDepth = 512

// SyntaxError reports where and why JSON text could not be parsed. It wraps
// codec.ErrMalformed.
type SyntaxError struct {
	Offset int64
	Reason string
}

// Error returns "offset N: reason".
func (e *SyntaxError) Error() string { return fmt.Sprintf("offset %d: %s", e.Offset, e.Reason) }

// Unwrap returns codec.ErrMalformed.
func (e *SyntaxError) Unwrap() error { return codec.ErrMalformed }

// Finding returns the error as a codec.Finding with code "json_syntax".
func (e *SyntaxError) Finding() codec.Finding {
	return codec.Finding{Code: "json_syntax", Offset: e.Offset, Reason: e.Reason}
}

// Parse reads one JSON value, surrounded by optional whitespace, from data.
func Parse(data []byte) (Value, error) {
	p := parser{data: data, src: string(data)}
	return p.parse()
}

// Parser parses like Parse but keeps its work stacks from one call to the
// next, so that parsing many documents allocates only the values they
// hold. The zero Parser is ready to use; a Parser is not safe for
// concurrent use.
type Parser struct {
	mstack []Member
	vstack []Value
}

// Parse reads one JSON value, surrounded by optional whitespace, from data,
// exactly as the package-level Parse does.
func (ps *Parser) Parse(data []byte) (Value, error) {
	return ps.run(parser{data: data, src: string(data)})
}

// ParseString is Parse of the bytes of s. It saves the copy Parse makes:
// the strings of the result share s's memory.
func (ps *Parser) ParseString(s string) (Value, error) {
	return ps.run(parser{data: unsafe.Slice(unsafe.StringData(s), len(s)), src: s})
}

func (ps *Parser) run(p parser) (Value, error) {
	p.mstack, p.vstack = ps.mstack[:0], ps.vstack[:0]
	v, err := p.parse()
	if err != nil {
		// A value that completes clears its place on the stacks; an error
		// leaves entries that would keep this document alive.
		clear(p.mstack)
		clear(p.vstack)
	}
	ps.mstack, ps.vstack = p.mstack[:0], p.vstack[:0]
	return v, err
}

func (p *parser) parse() (Value, error) {
	data := p.data
	if len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF {
		p.pos = 3
	}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return Value{}, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return Value{}, p.errorf("extra data after the JSON value")
	}
	return v, nil
}

type parser struct {
	data   []byte
	src    string // data as one string: unescaped strings and numbers are substrings of it
	pos    int
	mstack []Member
	vstack []Value
}

func (p *parser) errorf(format string, args ...any) *SyntaxError {
	return &SyntaxError{Offset: int64(p.pos), Reason: fmt.Sprintf(format, args...)}
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (Value, error) {
	if p.pos >= len(p.data) {
		return Value{}, p.errorf("unexpected end of input, want a value")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		return Value{typ: String, s: s}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return Value{typ: Bool, b: true}, p.literal("true")
	case c == 'f':
		return Value{typ: Bool}, p.literal("false")
	case c == 'n':
		return Value{}, p.literal("null")
	case c == 'N' || c == 'I':
		return Value{}, p.errorf("NaN and Infinity are not JSON")
	default:
		return Value{}, p.errorf("unexpected %s, want a value", describeByte(c))
	}
}

func describeByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("character %q", rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func (p *parser) literal(word string) error {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return p.errorf("invalid literal, want %q", word)
	}
	p.pos += len(word)
	return nil
}

func (p *parser) object(depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, p.errorf("nesting deeper than %d", MaxDepth)
	}
	p.pos++ // '{'
	p.skipSpace()
	base := len(p.mstack)
	var seen map[string]struct{}
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return Value{typ: Object}, nil
	}
	for {
		if p.pos >= len(p.data) {
			return Value{}, p.errorf("unexpected end of input in object")
		}
		if p.data[p.pos] != '"' {
			return Value{}, p.errorf("unexpected %s, want a string key", describeByte(p.data[p.pos]))
		}
		keyAt := p.pos
		key, err := p.str()
		if err != nil {
			return Value{}, err
		}
		// Duplicate detection: linear for small objects, a map past 16 keys.
		members := p.mstack[base:]
		if seen == nil && len(members) >= 16 {
			seen = make(map[string]struct{}, 2*len(members))
			for _, m := range members {
				seen[m.Key] = struct{}{}
			}
		}
		dup := false
		if seen != nil {
			_, dup = seen[key]
			seen[key] = struct{}{}
		} else {
			for i := range members {
				if members[i].Key == key {
					dup = true
					break
				}
			}
		}
		if dup {
			return Value{}, &SyntaxError{Offset: int64(keyAt), Reason: fmt.Sprintf("duplicate key %q", key)}
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return Value{}, p.errorf("want ':' after object key")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth)
		if err != nil {
			return Value{}, err
		}
		p.mstack = append(p.mstack, Member{Key: key, Value: v})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return Value{}, p.errorf("unexpected end of input in object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case '}':
			p.pos++
			out := make([]Member, len(p.mstack)-base)
			copy(out, p.mstack[base:])
			clear(p.mstack[base:])
			p.mstack = p.mstack[:base]
			return objectValue(out), nil
		default:
			return Value{}, p.errorf("unexpected %s, want ',' or '}'", describeByte(p.data[p.pos]))
		}
	}
}

func (p *parser) array(depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, p.errorf("nesting deeper than %d", MaxDepth)
	}
	p.pos++ // '['
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return Value{typ: Array}, nil
	}
	base := len(p.vstack)
	for {
		v, err := p.value(depth)
		if err != nil {
			return Value{}, err
		}
		p.vstack = append(p.vstack, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return Value{}, p.errorf("unexpected end of input in array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case ']':
			p.pos++
			out := make([]Value, len(p.vstack)-base)
			copy(out, p.vstack[base:])
			clear(p.vstack[base:])
			p.vstack = p.vstack[:base]
			return arrayValue(out), nil
		default:
			return Value{}, p.errorf("unexpected %s, want ',' or ']'", describeByte(p.data[p.pos]))
		}
	}
}

func (p *parser) number() (Value, error) {
	start := p.pos
	d := p.data
	i := p.pos
	if i < len(d) && d[i] == '-' {
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
		p.pos = i
		if i < len(d) && (d[i] == 'I' || d[i] == 'N') {
			return Value{}, p.errorf("NaN and Infinity are not JSON")
		}
		return Value{}, p.errorf("invalid number: want a digit")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return Value{}, p.errorf("invalid number: want a digit after '.'")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return Value{}, p.errorf("invalid number: want a digit in the exponent")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	p.pos = i
	return Value{typ: Number, s: p.src[start:i]}, nil
}

// validNumber reports whether s is exactly one JSON number literal.
func validNumber(s string) bool {
	if s == "" {
		return false
	}
	p := parser{data: []byte(s), src: s}
	if _, err := p.number(); err != nil {
		return false
	}
	return p.pos == len(s)
}

// str reads a string starting at the opening quote and returns its content
// in WTF-8.
func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	d := p.data
	// Fast path: no escapes, ASCII or valid UTF-8, no control characters.
	i := start
	for i < len(d) {
		c := d[i]
		if c == '"' {
			s := p.src[start:i]
			p.pos = i + 1
			return s, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(d[i:])
		if r == utf8.RuneError && size <= 1 {
			p.pos = i
			return "", p.errorf("invalid UTF-8 in string")
		}
		i += size
	}
	buf := make([]byte, 0, i-start+16)
	buf = append(buf, d[start:i]...)
	for {
		if i >= len(d) {
			p.pos = i
			return "", p.errorf("unterminated string")
		}
		c := d[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return string(buf), nil
		case c < 0x20:
			p.pos = i
			return "", p.errorf("invalid control character 0x%02x in string", c)
		case c == '\\':
			if i+1 >= len(d) {
				p.pos = i
				return "", p.errorf("unterminated escape")
			}
			e := d[i+1]
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
				i += 2
			case 'b':
				buf = append(buf, '\b')
				i += 2
			case 'f':
				buf = append(buf, '\f')
				i += 2
			case 'n':
				buf = append(buf, '\n')
				i += 2
			case 'r':
				buf = append(buf, '\r')
				i += 2
			case 't':
				buf = append(buf, '\t')
				i += 2
			case 'u':
				r, ok := hex4(d, i+2)
				if !ok {
					p.pos = i
					return "", p.errorf("invalid \\u escape")
				}
				i += 6
				if r >= 0xD800 && r < 0xDC00 && i+1 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
					if lo, ok := hex4(d, i+2); ok && lo >= 0xDC00 && lo < 0xE000 {
						r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
						i += 6
					}
				}
				buf = appendWTF8(buf, r)
			default:
				p.pos = i
				return "", p.errorf("invalid escape %s", describeByte(e))
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size <= 1 {
				p.pos = i
				return "", p.errorf("invalid UTF-8 in string")
			}
			buf = append(buf, d[i:i+size]...)
			i += size
		}
	}
}

func hex4(d []byte, at int) (rune, bool) {
	if at+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[at : at+4] {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// appendWTF8 appends r in UTF-8, encoding surrogate code points as three
// bytes (which utf8.AppendRune would replace with U+FFFD).
func appendWTF8(buf []byte, r rune) []byte {
	if r >= 0xD800 && r < 0xE000 {
		return append(buf, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return utf8.AppendRune(buf, r)
}

// decodeWTF8 decodes one code point from s, accepting three-byte surrogate
// encodings. Invalid bytes decode as U+FFFD with size 1.
func decodeWTF8(s string) (rune, int) {
	if len(s) >= 3 && s[0] == 0xED && s[1] >= 0xA0 && s[1] <= 0xBF && s[2]&0xC0 == 0x80 {
		return rune(s[0]&0x0F)<<12 | rune(s[1]&0x3F)<<6 | rune(s[2]&0x3F), 3
	}
	return utf8.DecodeRuneInString(s)
}
