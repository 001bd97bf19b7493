// Package canonjson reads JSON into a Value that remembers what Python's
// json module would see (document key order, whether each number is an int
// or a float by its literal, strings as code points including lone
// surrogates) and writes it back exactly as Python writes it:
//
//	json.dumps(obj, sort_keys=True, separators=(",", ":"))  // Canonical
//	json.dumps(obj, indent=2)                              // Indent
//
// both with the default ensure_ascii=True. VRF content hashes and AVIR
// component hashes are SHA-256 over Canonical output, so this package is the
// ground truth of interoperability with the reference implementations.
//
// Parsing is stricter than Python in three documented ways: duplicate object
// keys are rejected (Python silently keeps the last, which lets two readers
// see two different documents under one signature), the non-standard
// literals NaN, Infinity and -Infinity are rejected, and nesting deeper than
// MaxDepth is rejected. A UTF-8 byte order mark before the value is skipped,
// as Python's json.loads does for bytes.
//
// This package owns JSON text only; it knows nothing of receipts or
// attestations and must not import any other package of this module except
// codec.
package canonjson

import (
	"math"
	"math/big"
	"strconv"
	"unsafe"
)

// Type is the JSON type of a Value.
type Type uint8

// The JSON types.
const (
	Null Type = iota
	Bool
	Number
	String
	Array
	Object
)

var typeNames = [...]string{"null", "boolean", "number", "string", "array", "object"}

// String returns the JSON name of t ("null", "boolean", "number", ...).
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "unknown"
}

// Value is one parsed JSON value. The zero Value is JSON null.
//
// Strings hold their code points in generalized UTF-8 (WTF-8): valid UTF-8
// for every well-formed string, with a lone surrogate escape such as
// "\ud800" kept as its three-byte encoding so that it round-trips the way
// Python keeps it. Numbers hold their literal text.
type Value struct {
	s    string         // string content, or number literal
	kids unsafe.Pointer // first element of the []Value (array) or []Member (object) holding the children
	n    uint32         // number of children
	typ  Type
	b    bool
}

// A Value is 32 bytes and a Member 48: parsing a document copies many of
// them, so the children are one pointer and a count rather than two slice
// headers. elems and members rebuild the slices without allocating.

func arrayValue(es []Value) Value {
	if len(es) == 0 {
		return Value{typ: Array}
	}
	return Value{typ: Array, kids: unsafe.Pointer(unsafe.SliceData(es)), n: uint32(len(es))}
}

func objectValue(ms []Member) Value {
	if len(ms) == 0 {
		return Value{typ: Object}
	}
	return Value{typ: Object, kids: unsafe.Pointer(unsafe.SliceData(ms)), n: uint32(len(ms))}
}

func (v Value) elems() []Value {
	if v.typ != Array || v.n == 0 {
		return nil
	}
	return unsafe.Slice((*Value)(v.kids), v.n)
}

func (v Value) members() []Member {
	if v.typ != Object || v.n == 0 {
		return nil
	}
	return unsafe.Slice((*Member)(v.kids), v.n)
}

// Member is one key/value pair of an object, in document order.
type Member struct {
	Key   string
	Value Value
}

// MakeNull returns JSON null.
func MakeNull() Value { return Value{} }

// MakeBool returns a JSON boolean.
func MakeBool(b bool) Value { return Value{typ: Bool, b: b} }

// MakeString returns a JSON string holding s.
func MakeString(s string) Value { return Value{typ: String, s: s} }

// MakeInt returns a JSON integer.
func MakeInt(i int64) Value { return Value{typ: Number, s: strconv.FormatInt(i, 10)} }

// MakeUint returns a JSON integer.
func MakeUint(i uint64) Value { return Value{typ: Number, s: strconv.FormatUint(i, 10)} }

// MakeBigInt returns a JSON integer of any size.
func MakeBigInt(i *big.Int) Value { return Value{typ: Number, s: i.String()} }

// MakeFloat returns a JSON float, written as Python's repr writes it. A
// float that happens to be integral stays a float ("1.0").
func MakeFloat(f float64) Value { return Value{typ: Number, s: FormatFloat(f)} }

// MakeNumber returns a number from a JSON number literal, which must be
// valid JSON number syntax; its int/float nature follows the literal.
func MakeNumber(literal string) (Value, bool) {
	if !validNumber(literal) {
		return Value{}, false
	}
	return Value{typ: Number, s: literal}, true
}

// MakeArray returns a JSON array of elems.
func MakeArray(elems ...Value) Value { return arrayValue(elems) }

// MakeObject returns a JSON object with members in the given order. Keys
// must be unique; the encoders do not check.
func MakeObject(members ...Member) Value { return objectValue(members) }

// Type returns v's JSON type.
func (v Value) Type() Type { return v.typ }

// IsNull reports whether v is JSON null.
func (v Value) IsNull() bool { return v.typ == Null }

// Bool returns a boolean's value.
func (v Value) Bool() (b, ok bool) { return v.b, v.typ == Bool }

// Str returns a string's content.
func (v Value) Str() (string, bool) {
	if v.typ != String {
		return "", false
	}
	return v.s, true
}

// Literal returns a number's literal text as it appeared in the input (or
// as the constructor wrote it).
func (v Value) Literal() string {
	if v.typ != Number {
		return ""
	}
	return v.s
}

// IsInt reports whether v is a number written as an integer literal (no
// fraction, no exponent): what Python's json module reads as int.
func (v Value) IsInt() bool {
	if v.typ != Number {
		return false
	}
	for i := 0; i < len(v.s); i++ {
		switch v.s[i] {
		case '.', 'e', 'E':
			return false
		}
	}
	return true
}

// IsFloat reports whether v is a number Python would read as float.
func (v Value) IsFloat() bool { return v.typ == Number && !v.IsInt() }

// Int64 returns an integer number's value; ok is false for floats, for
// non-numbers and for integers outside the int64 range.
func (v Value) Int64() (int64, bool) {
	if !v.IsInt() {
		return 0, false
	}
	i, err := strconv.ParseInt(v.s, 10, 64)
	if err != nil {
		return 0, false
	}
	return i, true
}

// BigInt returns an integer number's exact value.
func (v Value) BigInt() (*big.Int, bool) {
	if !v.IsInt() {
		return nil, false
	}
	return new(big.Int).SetString(v.s, 10)
}

// Float64 returns a number's value as Python's float() would compute it:
// floats that overflow become ±Inf, integers convert to the nearest float.
func (v Value) Float64() (float64, bool) {
	if v.typ != Number {
		return 0, false
	}
	f, err := strconv.ParseFloat(v.s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// Len returns the number of elements of an array or members of an object.
func (v Value) Len() int {
	if v.typ == Array || v.typ == Object {
		return int(v.n)
	}
	return 0
}

// Elems returns an array's elements. The slice must not be modified.
func (v Value) Elems() []Value {
	return v.elems()
}

// Members returns an object's members in document order. The slice must
// not be modified.
func (v Value) Members() []Member {
	return v.members()
}

// Get returns the member of an object named key.
func (v Value) Get(key string) (Value, bool) {
	if v.typ != Object {
		return Value{}, false
	}
	for _, m := range v.members() {
		if m.Key == key {
			return m.Value, true
		}
	}
	return Value{}, false
}

// Has reports whether an object has a member named key.
func (v Value) Has(key string) bool {
	_, ok := v.Get(key)
	return ok
}

// Without returns a copy of an object without the member named key; other
// values are returned unchanged.
func (v Value) Without(key string) Value {
	if v.typ != Object {
		return v
	}
	out := make([]Member, 0, v.n)
	for _, m := range v.members() {
		if m.Key != key {
			out = append(out, m)
		}
	}
	return objectValue(out)
}

// With returns a copy of an object with member key set to val: replaced in
// place when present, appended otherwise.
func (v Value) With(key string, val Value) Value {
	if v.typ != Object {
		return v
	}
	out := make([]Member, 0, v.n+1)
	found := false
	for _, m := range v.members() {
		if m.Key == key {
			m.Value = val
			found = true
		}
		out = append(out, m)
	}
	if !found {
		out = append(out, Member{Key: key, Value: val})
	}
	return objectValue(out)
}

// Equal reports whether v and w are the same JSON value in Python's eyes:
// equal canonical encodings.
func Equal(v, w Value) bool {
	return string(Canonical(v)) == string(Canonical(w))
}
