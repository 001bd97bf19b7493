package avir

import (
	"fmt"
	"math"
	"strings"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// Typed reads of object members. Each reports a "malformed" finding for a
// missing required member or a member of the wrong type, and returns ok
// only for a usable value.

func typeName(v canonjson.Value) string {
	if v.Type() == canonjson.Number && v.IsInt() {
		return "integer"
	}
	return v.Type().String()
}

// member returns o[key] and its path. A missing required member is
// reported at its parent's offset.
func (r *report) member(o canonjson.Value, p path, key string, required bool) (canonjson.Value, path, bool) {
	fp := p.key(key)
	v, ok := o.Get(key)
	if !ok && required && o.Type() == canonjson.Object {
		r.list = append(r.list, codec.Finding{Code: "malformed", Field: fp.String(), Offset: r.src.offset(p), Reason: "missing required field"})
	}
	return v, fp, ok
}

func (r *report) str(o canonjson.Value, p path, key string, required bool) (string, bool) {
	v, fp, ok := r.member(o, p, key, required)
	if !ok {
		return "", false
	}
	s, ok := v.Str()
	if !ok {
		r.malformed(fp, "want string, got %s", typeName(v))
	}
	return s, ok
}

// optStr is str for an optional member that may also be null.
func (r *report) optStr(o canonjson.Value, p path, key string) (string, bool) {
	if v, ok := o.Get(key); ok && v.IsNull() {
		return "", false
	}
	return r.str(o, p, key, false)
}

func (r *report) num(o canonjson.Value, p path, key string, required bool) (float64, bool) {
	v, fp, ok := r.member(o, p, key, required)
	if !ok {
		return 0, false
	}
	return r.numValue(v, fp)
}

func (r *report) numValue(v canonjson.Value, fp path) (float64, bool) {
	if v.Type() != canonjson.Number {
		r.malformed(fp, "want number, got %s", typeName(v))
		return 0, false
	}
	if problem := numberProblem(v); problem != "" {
		r.malformed(fp, "%s", problem)
		return 0, false
	}
	f, _ := v.Float64()
	return f, true
}

// numberProblem says why Python would not read a JSON number back as the
// same finite value, or returns "": an integer of more than 4300 digits
// (json.loads refuses it) or a float beyond the float64 range (read as
// inf, which has no JSON form).
func numberProblem(v canonjson.Value) string {
	if v.IsInt() {
		if n := len(strings.TrimPrefix(v.Literal(), "-")); n > maxIntDigits {
			return fmt.Sprintf("integer has %d digits, more than the %d Python reads", n, maxIntDigits)
		}
		return ""
	}
	if f, ok := v.Float64(); !ok || math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Sprintf("number %.40s is beyond the float64 range", v.Literal())
	}
	return ""
}

// integer reads an integer. A float literal with an integral value (5.0)
// counts when floatOK is set, as JSON Schema's "integer" does.
func (r *report) integer(o canonjson.Value, p path, key string, required, floatOK bool) (int64, bool) {
	v, fp, ok := r.member(o, p, key, required)
	if !ok {
		return 0, false
	}
	if i, ok := v.Int64(); ok {
		return i, true
	}
	if f, ok := v.Float64(); ok && floatOK && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f), true
	}
	if v.Type() == canonjson.Number && v.IsInt() {
		r.malformed(fp, "integer %.40s is out of range", v.Literal())
	} else if v.Type() == canonjson.Number && !floatOK {
		r.malformed(fp, "want an integer literal, got %s", v.Literal())
	} else {
		r.malformed(fp, "want integer, got %s", typeName(v))
	}
	return 0, false
}

func (r *report) boolean(o canonjson.Value, p path, key string) (bool, bool) {
	v, fp, ok := r.member(o, p, key, false)
	if !ok {
		return false, false
	}
	b, ok := v.Bool()
	if !ok {
		r.malformed(fp, "want boolean, got %s", typeName(v))
	}
	return b, ok
}

func (r *report) object(o canonjson.Value, p path, key string, required bool) (canonjson.Value, path, bool) {
	v, fp, ok := r.member(o, p, key, required)
	if !ok {
		return v, fp, false
	}
	if v.Type() != canonjson.Object {
		r.malformed(fp, "want object, got %s", typeName(v))
		return v, fp, false
	}
	return v, fp, true
}

func (r *report) array(o canonjson.Value, p path, key string, required bool) (canonjson.Value, path, bool) {
	v, fp, ok := r.member(o, p, key, required)
	if !ok {
		return v, fp, false
	}
	if v.Type() != canonjson.Array {
		r.malformed(fp, "want array, got %s", typeName(v))
		return v, fp, false
	}
	return v, fp, true
}

// strings reads an optional array of strings.
func (r *report) strings(o canonjson.Value, p path, key string) []string {
	a, fp, ok := r.array(o, p, key, false)
	if !ok {
		return nil
	}
	out := make([]string, 0, a.Len())
	for i, e := range a.Elems() {
		s, ok := e.Str()
		if !ok {
			r.malformed(fp.idx(i), "want string, got %s", typeName(e))
			continue
		}
		out = append(out, s)
	}
	return out
}
