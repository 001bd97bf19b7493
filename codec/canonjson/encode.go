package canonjson

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Canonical returns v as Python writes it with
// json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=True).
func Canonical(v Value) []byte {
	return AppendCanonical(make([]byte, 0, 256), v)
}

// CanonicalUTF8 is Canonical with ensure_ascii=False: non-ASCII characters
// are written as raw UTF-8 instead of \uXXXX escapes (lone surrogates,
// which UTF-8 cannot hold, stay escaped). Some producers that follow the VRF
// spec text ("UTF-8 encoding") hash this form.
func CanonicalUTF8(v Value) []byte {
	return appendValue(make([]byte, 0, 256), v, false)
}

// AppendCanonical appends the canonical encoding of v to dst.
func AppendCanonical(dst []byte, v Value) []byte {
	return appendValue(dst, v, true)
}

func appendValue(dst []byte, v Value, ascii bool) []byte {
	switch v.typ {
	case Null:
		return append(dst, "null"...)
	case Bool:
		if v.b {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case Number:
		return appendNumber(dst, v.s)
	case String:
		return appendString(dst, v.s, ascii)
	case Array:
		dst = append(dst, '[')
		for i, e := range v.elems() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, e, ascii)
		}
		return append(dst, ']')
	case Object:
		dst = append(dst, '{')
		obj := v.members()
		if slices.IsSortedFunc(obj, cmpMember) {
			for i := range obj {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = appendString(dst, obj[i].Key, ascii)
				dst = append(dst, ':')
				dst = appendValue(dst, obj[i].Value, ascii)
			}
			return append(dst, '}')
		}
		var scratch [32]int32
		idx := scratch[:0]
		for i := range obj {
			idx = append(idx, int32(i))
		}
		ms := obj
		slices.SortFunc(idx, func(a, b int32) int { return strings.Compare(ms[a].Key, ms[b].Key) })
		for i, j := range idx {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, ms[j].Key, ascii)
			dst = append(dst, ':')
			dst = appendValue(dst, ms[j].Value, ascii)
		}
		return append(dst, '}')
	}
	return dst
}

func cmpMember(a, b Member) int { return strings.Compare(a.Key, b.Key) }

// Indent returns v as Python writes it with json.dumps(v, indent=2):
// members in document order, ", " never at line ends, ": " after keys,
// ensure_ascii=True. No trailing newline.
func Indent(v Value) []byte {
	return appendIndent(make([]byte, 0, 512), v, 0)
}

func appendIndent(dst []byte, v Value, depth int) []byte {
	newline := func(dst []byte, depth int) []byte {
		dst = append(dst, '\n')
		for i := 0; i < depth; i++ {
			dst = append(dst, ' ', ' ')
		}
		return dst
	}
	switch v.typ {
	case Array:
		if v.n == 0 {
			return append(dst, "[]"...)
		}
		dst = append(dst, '[')
		for i, e := range v.elems() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = newline(dst, depth+1)
			dst = appendIndent(dst, e, depth+1)
		}
		dst = newline(dst, depth)
		return append(dst, ']')
	case Object:
		if v.n == 0 {
			return append(dst, "{}"...)
		}
		dst = append(dst, '{')
		for i, m := range v.members() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = newline(dst, depth+1)
			dst = appendString(dst, m.Key, true)
			dst = append(dst, ':', ' ')
			dst = appendIndent(dst, m.Value, depth+1)
		}
		dst = newline(dst, depth)
		return append(dst, '}')
	}
	return AppendCanonical(dst, v)
}

// appendNumber writes a number literal the way Python prints the int or
// float it parses to.
func appendNumber(dst []byte, lit string) []byte {
	isInt := true
	for i := 0; i < len(lit); i++ {
		if c := lit[i]; c == '.' || c == 'e' || c == 'E' {
			isInt = false
			break
		}
	}
	if isInt {
		// JSON forbids leading zeros, so the literal is already Python's
		// str(int) except for "-0".
		if lit == "-0" {
			return append(dst, '0')
		}
		return append(dst, lit...)
	}
	if isReprFloat(lit) {
		return append(dst, lit...)
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !math.IsInf(f, 0) {
		// Unreachable for literals that passed the parser; keep the text.
		return append(dst, lit...)
	}
	return AppendFloat(dst, f)
}

// isReprFloat reports whether a float literal is already what Python's
// repr prints for the value it denotes, so it can be copied unchanged: a
// plain decimal "[-]I.F" without exponent, with 1 to 15 significant
// digits, no redundant zeros (I has no leading zero unless it is "0"; F
// has no trailing zero unless it is "0"), inside repr's positional range
// [1e-4, 1e16). Decimals of at most 15 significant digits map to distinct
// doubles (DBL_DIG), so the shortest round-trip string of the double is
// the literal itself.
func isReprFloat(lit string) bool {
	s := lit
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	dot := -1
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.':
			if dot >= 0 {
				return false
			}
			dot = i
		case c < '0' || c > '9':
			return false
		}
	}
	if dot <= 0 || dot == len(s)-1 {
		return false
	}
	intPart, frac := s[:dot], s[dot+1:]
	if len(frac) > 1 && frac[len(frac)-1] == '0' {
		return false
	}
	if intPart == "0" {
		// 0.F: positional only down to 1e-4, i.e. at most 3 leading zeros.
		z := 0
		for z < len(frac) && frac[z] == '0' {
			z++
		}
		if z == len(frac) {
			return len(frac) == 1 && lit[0] != '-' // "0.0"; "-0.0" is also repr but rare
		}
		return z <= 3 && len(frac)-z <= 15
	}
	if intPart[0] == '0' || len(intPart) > 16 {
		return false
	}
	sig := len(intPart) + len(frac)
	if frac == "0" {
		sig = len(intPart)
		for sig > 1 && intPart[sig-1] == '0' {
			sig--
		}
	}
	return sig <= 15
}

// FormatFloat returns Python's repr of f (which json.dumps uses), with
// json.dumps' spelling of the non-finite values: "Infinity", "-Infinity",
// "NaN".
func FormatFloat(f float64) string { return string(AppendFloat(nil, f)) }

// AppendFloat appends FormatFloat(f) to dst.
//
// Python prints the shortest digit string that round-trips (as Go's
// strconv does with precision -1), in positional notation when the decimal
// exponent is in [-4, 16) and in scientific notation otherwise, with ".0"
// added to integral values and at least two exponent digits.
func AppendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64) // [-]d[.ddd]e±dd
	if e[0] == '-' {
		dst = append(dst, '-')
		e = e[1:]
	}
	ei := 0
	for e[ei] != 'e' {
		ei++
	}
	mant, expPart := e[:ei], e[ei+1:]
	digits := make([]byte, 0, len(mant))
	for _, c := range mant {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	exp, _ := strconv.Atoi(string(expPart))
	decpt := exp + 1 // value = 0.DIGITS × 10^decpt
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			dst = append(dst, '0', '.')
			for i := 0; i < -decpt; i++ {
				dst = append(dst, '0')
			}
			return append(dst, digits...)
		case decpt >= len(digits):
			dst = append(dst, digits...)
			for i := len(digits); i < decpt; i++ {
				dst = append(dst, '0')
			}
			return append(dst, '.', '0')
		default:
			dst = append(dst, digits[:decpt]...)
			dst = append(dst, '.')
			return append(dst, digits[decpt:]...)
		}
	}
	dst = append(dst, digits[0])
	if len(digits) > 1 {
		dst = append(dst, '.')
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'e')
	if exp < 0 {
		dst = append(dst, '-')
		exp = -exp
	} else {
		dst = append(dst, '+')
	}
	if exp < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, int64(exp), 10)
}

const hexDigits = "0123456789abcdef"

// appendString writes s (WTF-8) as a JSON string, with ensure_ascii=True
// when ascii is set and ensure_ascii=False otherwise.
func appendString(dst []byte, s string, ascii bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && (c < 0x7f || (!ascii && c == 0x7f)) {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		if c < 0x80 {
			switch c {
			case '"':
				dst = append(dst, '\\', '"')
			case '\\':
				dst = append(dst, '\\', '\\')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = appendU(dst, rune(c))
			}
			i++
			start = i
			continue
		}
		r, size := decodeWTF8(s[i:])
		if !ascii && (r < 0xD800 || r >= 0xE000) && !(r == utf8.RuneError && size == 1) {
			dst = utf8.AppendRune(dst, r)
			i += size
			start = i
			continue
		}
		if r >= 0x10000 {
			r -= 0x10000
			dst = appendU(dst, 0xD800+(r>>10))
			dst = appendU(dst, 0xDC00+(r&0x3FF))
		} else {
			dst = appendU(dst, r)
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendU(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u',
		hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}
