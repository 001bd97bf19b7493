package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec"
)

// canonicalCases pairs JSON texts with Python's
// json.dumps(json.loads(text), sort_keys=True, separators=(",", ":")).
// TestCanonicalMatchesPython re-derives every "want" from python3 when it is
// installed, so the table cannot drift from the oracle.
var canonicalCases = []struct {
	name, in, want string
}{
	{"null", "null", "null"},
	{"true", "true", "true"},
	{"false", "false", "false"},
	{"zero int", "0", "0"},
	{"negative zero int", "-0", "0"},
	{"int", "42", "42"},
	{"negative int", "-17", "-17"},
	{"int64 max", "9223372036854775807", "9223372036854775807"},
	{"beyond int64", "9223372036854775808", "9223372036854775808"},
	{"big int", "123456789012345678901234567890123456789", "123456789012345678901234567890123456789"},
	{"big negative int", "-98765432109876543210987654321", "-98765432109876543210987654321"},
	{"float one", "1.0", "1.0"},
	{"float zero", "0.0", "0.0"},
	{"negative zero float", "-0.0", "-0.0"},
	{"float 0.1", "0.1", "0.1"},
	{"float 1e-05", "0.00001", "1e-05"},
	{"float 1e-05 literal", "1e-05", "1e-05"},
	{"float 0.0001", "0.0001", "0.0001"},
	{"float 1e-4 exp literal", "1E-4", "0.0001"},
	{"float 1e16", "1e16", "1e+16"},
	{"float 1e16 positional", "10000000000000000.0", "1e+16"},
	{"float below 1e16", "9999999999999998.0", "9999999999999998.0"},
	{"float 1e15", "1e15", "1000000000000000.0"},
	{"float 1.5e300", "1.5e300", "1.5e+300"},
	{"smallest subnormal", "5e-324", "5e-324"},
	{"largest double", "1.7976931348623157e+308", "1.7976931348623157e+308"},
	{"overflow to infinity", "1e400", "Infinity"},
	{"negative overflow", "-1e400", "-Infinity"},
	{"underflow to zero", "1e-400", "0.0"},
	{"negative underflow", "-1e-400", "-0.0"},
	{"exponent int literal is float", "1e2", "100.0"},
	{"capital E", "2E+3", "2000.0"},
	{"many digits rounds", "0.30000000000000004", "0.30000000000000004"},
	{"third", "0.3333333333333333", "0.3333333333333333"},
	{"float 123.456", "123.456", "123.456"},
	{"float 1.5", "-1.5", "-1.5"},
	{"float 2^53+1", "9007199254740993.0", "9007199254740992.0"},
	{"float 1e22", "1e22", "1e+22"},
	{"float 1e-7", "1.23e-7", "1.23e-07"},
	{"float trailing zeros", "100.500", "100.5"},
	{"float 12345678.9", "12345678.9", "12345678.9"},
	{"duration", "53.2681110000226", "53.2681110000226"},
	{"empty string", "\"\"", "\"\""},
	{"ascii string", "\"hello world\"", "\"hello world\""},
	{"quote and backslash", "\"a\\\"b\\\\c\"", "\"a\\\"b\\\\c\""},
	{"slash not escaped", "\"a\\/b</script>&\"", "\"a/b</script>&\""},
	{"control chars", "\"\\u0000\\u0001\\u001f\\b\\f\\n\\r\\t\"", "\"\\u0000\\u0001\\u001f\\b\\f\\n\\r\\t\""},
	{"del", "\"\\u007f\"", "\"\\u007f\""},
	{"latin1", "\"caf\u00e9\"", "\"caf\\u00e9\""},
	{"latin1 escaped", "\"caf\\u00E9\"", "\"caf\\u00e9\""},
	{"bmp cjk", "\"\u65e5\u672c\"", "\"\\u65e5\\u672c\""},
	{"u2028", "\"a\u2028b\u2029\"", "\"a\\u2028b\\u2029\""},
	{"astral emoji", "\"\U0001f600\"", "\"\\ud83d\\ude00\""},
	{"astral escaped pair", "\"\\ud83d\\ude00\"", "\"\\ud83d\\ude00\""},
	{"astral max", "\"\U0010ffff\"", "\"\\udbff\\udfff\""},
	{"lone high surrogate", "\"\\ud800\"", "\"\\ud800\""},
	{"lone low surrogate", "\"\\udc00x\"", "\"\\udc00x\""},
	{"reversed surrogates", "\"\\udc00\\ud800\"", "\"\\udc00\\ud800\""},
	{"high then non-low escape", "\"\\ud800\\u0041\"", "\"\\ud800A\""},
	{"bom char", "\"\ufeff\"", "\"\\ufeff\""},
	{"replacement char", "\"\ufffd\"", "\"\\ufffd\""},
	{"empty array", "[]", "[]"},
	{"empty object", "{}", "{}"},
	{"nested empty", "[[],{},[{}]]", "[[],{},[{}]]"},
	{"sorted keys", "{\"b\":1,\"a\":2,\"c\":3}", "{\"a\":2,\"b\":1,\"c\":3}"},
	{"keys by code point", "{\"a\":1,\"B\":2,\"_\":3,\"\u00e9\":4,\"\U0001f600\":5,\"\uffff\":6}", "{\"B\":2,\"_\":3,\"a\":1,\"\\u00e9\":4,\"\\uffff\":6,\"\\ud83d\\ude00\":5}"},
	{"nested sort", "{\"z\":{\"y\":[{\"b\":1,\"a\":null}],\"x\":true},\"a\":[3,2,1]}", "{\"a\":[3,2,1],\"z\":{\"x\":true,\"y\":[{\"a\":null,\"b\":1}]}}"},
	{"whitespace", " {\n\t\"a\" : [ 1 , 2.50 ] ,\r\n \"b\":\"c\" } ", "{\"a\":[1,2.5],\"b\":\"c\"}"},
	{"numeric string keys", "{\"10\":1,\"9\":2,\"1\":3}", "{\"1\":3,\"10\":1,\"9\":2}"},
	{"key escapes", "{\"a\\nb\":1,\"a\\\"\":2}", "{\"a\\nb\":1,\"a\\\"\":2}"},
	{"receipt-like", "{\"signature\":null,\"metadata\":{\"execution_ms\":151.46,\"sandboxed\":true},\"tier\":0,\"results\":{\"total\":3,\"details\":[{\"name\":\"t\",\"duration_ms\":53.2681110000226}]}}", "{\"metadata\":{\"execution_ms\":151.46,\"sandboxed\":true},\"results\":{\"details\":[{\"duration_ms\":53.2681110000226,\"name\":\"t\"}],\"total\":3},\"signature\":null,\"tier\":0}"},
	{"deep nesting", "[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]", "[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]"},
}

func TestCanonical(t *testing.T) {
	if len(canonicalCases) < 60 {
		t.Fatalf("table has %d cases, want at least 60", len(canonicalCases))
	}
	for _, tc := range canonicalCases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if got := string(Canonical(v)); got != tc.want {
				t.Errorf("Canonical(%q)\n got %s\nwant %s", tc.in, got, tc.want)
			}
			// Canonical output is itself JSON that canonicalizes to itself
			// (except Infinity, which Python writes but JSON lacks).
			if strings.Contains(tc.want, "Infinity") {
				return
			}
			v2, err := Parse([]byte(tc.want))
			if err != nil {
				t.Fatalf("re-parse %q: %v", tc.want, err)
			}
			if got := string(Canonical(v2)); got != tc.want {
				t.Errorf("not idempotent: %s -> %s", tc.want, got)
			}
		})
	}
}

// TestCanonicalMatchesPython asks the real oracle. It is skipped when
// python3 is not installed; the table above then stands on its own.
func TestCanonicalMatchesPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	var ins []string
	for _, tc := range canonicalCases {
		ins = append(ins, tc.in)
	}
	ins = append(ins, rejectCases...)
	input, _ := json.Marshal(ins)
	cmd := exec.Command(py, "testdata/python_canonical.py")
	cmd.Stdin = bytes.NewReader(input)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var wants []*string
	if err := json.Unmarshal(out, &wants); err != nil {
		t.Fatal(err)
	}
	for i, tc := range canonicalCases {
		if wants[i] == nil {
			t.Errorf("%s: python rejects %q", tc.name, tc.in)
			continue
		}
		if *wants[i] != tc.want {
			t.Errorf("%s: table says %s, python says %s", tc.name, tc.want, *wants[i])
		}
	}
}

// rejectCases are texts Parse must refuse. Python refuses them too, except
// where noted in strictCases.
var rejectCases = []string{
	``, ` `, `{`, `[1,]`, `{"a":1,}`, `[1 2]`, `{"a" 1}`, `{1:2}`, `01`, `1.`, `.5`, `1e`, `1e+`,
	`-`, `+1`, `0x10`, `tru`, `nul`, `"abc`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"a\nb\"", "\"\x01\"",
	`[1] [2]`, `{"a":1}x`, "\"\xff\"", "\"\xed\xa0\x80\"", `'a'`,
}

// strictCases are accepted by Python but refused here on purpose.
var strictCases = []string{`NaN`, `Infinity`, `-Infinity`, `{"a":1,"a":2}`, `[NaN]`}

func TestParseRejects(t *testing.T) {
	for _, in := range append(append([]string{}, rejectCases...), strictCases...) {
		_, err := Parse([]byte(in))
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want error", in)
			continue
		}
		if !errors.Is(err, codec.ErrMalformed) {
			t.Errorf("Parse(%q) error %v does not wrap ErrMalformed", in, err)
		}
		var se *SyntaxError
		if !errors.As(err, &se) || se.Offset < 0 || se.Offset > int64(len(in)) {
			t.Errorf("Parse(%q) error %v lacks a valid offset", in, err)
		}
	}
}

func TestParseErrorOffsets(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int64
		reason string
	}{
		{`{"a":1,"a":2}`, 7, `duplicate key "a"`},
		{`[1,2,x]`, 5, "unexpected character 'x'"},
		{`{"a":tru}`, 5, `invalid literal`},
		{"[\"ok\", \"\xff\"]", 8, "invalid UTF-8"},
		{`[1] 2`, 4, "extra data"},
		{`NaN`, 0, "NaN and Infinity are not JSON"},
	} {
		_, err := Parse([]byte(tc.in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want *SyntaxError", tc.in, err)
			continue
		}
		if se.Offset != tc.offset || !strings.Contains(se.Reason, tc.reason) {
			t.Errorf("Parse(%q) = offset %d %q, want offset %d containing %q", tc.in, se.Offset, se.Reason, tc.offset, tc.reason)
		}
	}
}

func TestDepthLimit(t *testing.T) {
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := Parse([]byte(ok)); err != nil {
		t.Errorf("depth %d: %v", MaxDepth, err)
	}
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	if _, err := Parse([]byte(deep)); err == nil {
		t.Errorf("depth %d accepted", MaxDepth+1)
	}
}

func TestBOMSkipped(t *testing.T) {
	v, err := Parse([]byte("\xef\xbb\xbf{\"a\":1}"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(Canonical(v)); got != `{"a":1}` {
		t.Errorf("got %s", got)
	}
}

func TestNumberNature(t *testing.T) {
	for _, tc := range []struct {
		lit   string
		isInt bool
	}{{"80", true}, {"80.0", false}, {"8e1", false}, {"-0", true}, {"1E2", false}} {
		v, err := Parse([]byte(tc.lit))
		if err != nil {
			t.Fatal(err)
		}
		if v.IsInt() != tc.isInt {
			t.Errorf("%s: IsInt = %v", tc.lit, v.IsInt())
		}
	}
	if i, ok := MakeInt(-5).Int64(); !ok || i != -5 {
		t.Errorf("MakeInt(-5).Int64() = %d, %v", i, ok)
	}
	if _, ok := MakeFloat(5).Int64(); ok {
		t.Error("float 5.0 reported as int")
	}
	if got := string(Canonical(MakeFloat(5))); got != "5.0" {
		t.Errorf("MakeFloat(5) = %s", got)
	}
	if _, ok := MakeNumber("1.5e3"); !ok {
		t.Error("MakeNumber(1.5e3) refused")
	}
	if _, ok := MakeNumber("1.5e"); ok {
		t.Error("MakeNumber(1.5e) accepted")
	}
}

func TestFormatFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0.1, "0.1"}, {1e-5, "1e-05"}, {1e16, "1e+16"}, {123456789.0, "123456789.0"},
		{1.7976931348623157e308, "1.7976931348623157e+308"}, {5e-324, "5e-324"},
		{428.15, "428.15"}, {0.2, "0.2"}, {-2.5e-10, "-2.5e-10"}, {1e100, "1e+100"},
	} {
		if got := FormatFloat(tc.f); got != tc.want {
			t.Errorf("FormatFloat(%v) = %s, want %s", tc.f, got, tc.want)
		}
	}
}

func TestIndentMatchesPython(t *testing.T) {
	in := `{"b":[1,2.0,{"x":"\u00e9"}],"a":{},"c":[],"d":null}`
	want := "{\n  \"b\": [\n    1,\n    2.0,\n    {\n      \"x\": \"\\u00e9\"\n    }\n  ],\n  \"a\": {},\n  \"c\": [],\n  \"d\": null\n}"
	v, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(Indent(v)); got != want {
		t.Errorf("Indent:\n%s\nwant:\n%s", got, want)
	}
}

func TestWithWithout(t *testing.T) {
	v, _ := Parse([]byte(`{"a":1,"signature":{"x":1},"b":2}`))
	if got := string(Canonical(v.Without("signature"))); got != `{"a":1,"b":2}` {
		t.Errorf("Without: %s", got)
	}
	if got := string(Canonical(v.With("a", MakeString("z")))); got != `{"a":"z","b":2,"signature":{"x":1}}` {
		t.Errorf("With: %s", got)
	}
	if got := string(Canonical(v.With("c", MakeBool(true)))); got != `{"a":1,"b":2,"c":true,"signature":{"x":1}}` {
		t.Errorf("With new: %s", got)
	}
}

func TestCanonicalUTF8(t *testing.T) {
	// Python: json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
	v, err := Parse([]byte(`{"b":"caf\u00e9\u007f\ud83d\ude00\n\u0001","a":"\ud800"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"a\":\"\\ud800\",\"b\":\"caf\u00e9\x7f\U0001F600\\n\\u0001\"}"
	if got := string(CanonicalUTF8(v)); got != want {
		t.Errorf("CanonicalUTF8 = %q, want %q", got, want)
	}
}

// TestReprFastPath checks the literal-copy shortcut against full
// formatting on literals near its boundaries.
func TestReprFastPath(t *testing.T) {
	for _, lit := range []string{
		"0.1", "0.0", "-0.0", "1.0", "10.0", "100.5", "0.0001", "0.00001", "0.001234", "123456789012345.0",
		"1234567890123456.0", "9999999999999999.0", "12345678901234567.0", "0.123456789012345", "0.1234567890123456",
		"53.2681110000226", "53.26811100002261", "1.10", "01.5", "1.5e3", "-12.25", "0.30000000000000004",
		"999999999999999.9", "1000000000000000.0", "0.00010", "5.0", "50.0", "123450000000000.0",
	} {
		v, ok := MakeNumber(lit)
		if !ok {
			continue
		}
		f, _ := v.Float64()
		want := FormatFloat(f)
		if got := string(Canonical(v)); got != want {
			t.Errorf("Canonical(%s) = %s, want %s", lit, got, want)
		}
	}
}

// TestParserReuse parses every table input and every rejected input, in
// turn, with one Parser: each result equals the package-level Parse's, an
// error in between does not disturb the next document, and a value parsed
// earlier is unchanged by later parses that reuse the stacks.
func TestParserReuse(t *testing.T) {
	var ps Parser
	type kept struct {
		in string
		v  Value
	}
	var earlier []kept
	inputs := make([]string, 0, len(canonicalCases)+len(rejectCases))
	for i, tc := range canonicalCases {
		inputs = append(inputs, tc.in)
		if i < len(rejectCases) {
			inputs = append(inputs, rejectCases[i]) // interleave errors
		}
	}
	for _, in := range inputs {
		got, gerr := ps.Parse([]byte(in))
		want, werr := Parse([]byte(in))
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("%q: Parser error %v, Parse error %v", in, gerr, werr)
		}
		if werr != nil {
			continue
		}
		if !Equal(got, want) || string(Canonical(got)) != string(Canonical(want)) {
			t.Fatalf("%q: Parser gave %s, Parse %s", in, Canonical(got), Canonical(want))
		}
		earlier = append(earlier, kept{in, got})
	}
	for _, k := range earlier {
		want, _ := Parse([]byte(k.in))
		if !Equal(k.v, want) {
			t.Errorf("%q: value changed by later parses: %s, want %s", k.in, Canonical(k.v), Canonical(want))
		}
	}
}

// TestParseString checks that ParseString agrees with Parse, errors
// included.
func TestParseString(t *testing.T) {
	var ps Parser
	for _, in := range append([]string{`{"a":[1,"x",{"b":null}]}`}, rejectCases...) {
		got, gerr := ps.ParseString(in)
		want, werr := Parse([]byte(in))
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() || werr == nil && !Equal(got, want) {
			t.Errorf("%q: ParseString %v, %v; Parse %v, %v", in, got, gerr, want, werr)
		}
	}
}
