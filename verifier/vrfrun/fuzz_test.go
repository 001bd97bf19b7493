package vrfrun

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

var shortHash = regexp.MustCompile(`^sha256:[0-9a-f]{16}$`)

// FuzzParseRequest: no body makes ParseRequest panic; a refused body is a
// one-line *RequestError naming a field; an accepted one has a tier, a
// form that fits it, tests for tier 0 and well-formed hashes. Seeds:
// testdata/fuzz/FuzzParseRequest (the golden requests and a few more).
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"verification": {"test_suite": {"tests": [{"input": "1", "expected_output": "1"}]}}}`), false, false)
	f.Add([]byte(`{"output": {"content": "{\"a\": 1}"}, "schema": {"type": "object", "required": ["a"]}, "checks": [{"constraint": "length <= 3"}]}`), true, true)
	f.Fuzz(func(t *testing.T, body []byte, schema, specChecks bool) {
		r, err := ParseRequest(body, ParseOptions{Schema: schema, SpecChecks: specChecks})
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) || !errors.Is(err, ErrRequest) {
				t.Fatalf("error %v is not a *RequestError wrapping ErrRequest", err)
			}
			if re.Field == "" || strings.ContainsAny(err.Error(), "\n\r\u2028\u2029\u0085") {
				t.Fatalf("error %q: empty field or not one line", err)
			}
			if re.Offset > len(body) {
				t.Fatalf("offset %d past the body's %d bytes", re.Offset, len(body))
			}
			return
		}
		switch {
		case r.Tier == 0 && (r.Form == FormChecks || len(r.tests) == 0 || r.Language == ""):
			t.Fatalf("tier 0 request with form %v, %d tests, language %q", r.Form, len(r.tests), r.Language)
		case r.Tier == 1 && r.Form != FormChecks:
			t.Fatalf("tier 1 request with form %v", r.Form)
		case r.Tier != 0 && r.Tier != 1:
			t.Fatalf("tier %d", r.Tier)
		case schema && r.Tier != 1:
			t.Fatalf("schema endpoint gave tier %d", r.Tier)
		}
		for _, h := range []string{r.hashes.Input, r.hashes.Output, r.hashes.Suite} {
			if !shortHash.MatchString(h) {
				t.Fatalf("hash %q", h)
			}
		}
		if r.Form == FormExpression && r.exprJSON == "" {
			t.Fatal("expression form without tests_data")
		}
		if !specChecks && len(r.checks) > 0 {
			t.Fatal("spec checks read without SpecChecks")
		}
	})
}

// FuzzPyJSON: what parseText accepts, dumps writes back to text that
// parses to the same dumps (in every flavour); what it refuses is refused
// at an offset inside the text. Seeds: testdata/fuzz/FuzzPyJSON.
func FuzzPyJSON(f *testing.F) {
	for _, s := range pyJSONCorpus {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		v, err := parseText(text)
		if err != nil {
			var je *jsonError
			if !errors.As(err, &je) || je.Offset < 0 || je.Offset > len(text) {
				t.Fatalf("error %v", err)
			}
			return
		}
		for _, o := range []dumpOpts{{}, {sortKeys: true}, {compact: true}} {
			d := string(appendDumps(nil, v, o))
			v2, err := parseText(d)
			if err != nil {
				t.Fatalf("dumps %q does not parse: %v", d, err)
			}
			if d2 := string(appendDumps(nil, v2, o)); d2 != d {
				t.Fatalf("dumps not stable: %q then %q", d, d2)
			}
			for i := 0; i < len(d); i++ {
				if d[i] >= 0x80 {
					t.Fatalf("dumps %q is not ASCII", d)
				}
			}
		}
		_ = pyRepr(v)
		_ = v.truthy()
	})
}

// FuzzParseCheck: no constraint string makes parseCheck or the check's
// evaluation panic, and a parsed path written back parses to itself.
// Seeds: testdata/fuzz/FuzzParseCheck.
func FuzzParseCheck(f *testing.F) {
	for _, s := range []string{"json_parse", "json_path:$.a.b exists", "json_path:$.a equals {\"b\": [1]}",
		"json_path:$[0]['x y'] length >= 2", "length <= 1000", "regex:^a+$"} {
		f.Add(s)
	}
	out, _ := parseText(`{"a": {"b": [1, "x", {"c": null}]}, "s": "héllo", "n": 1.5}`)
	text := `{"a": 1}`
	req := &Request{output: out, outputText: &text}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseCheck(s)
		if err != nil {
			if !errors.Is(err, errCheckSyntax) {
				t.Fatalf("error %v does not wrap errCheckSyntax", err)
			}
			return
		}
		if len(c.path) > 0 {
			p := pathString(c.path)
			steps, n, err := parsePath(p)
			if err != nil || n != len(p) || pathString(steps) != p {
				t.Fatalf("path %q written as %q reads back as %q (%d bytes, %v)", s, p, pathString(steps), n, err)
			}
		}
		res := c.eval(req)
		switch res.status {
		case "pass", "fail", "error":
		default:
			t.Fatalf("status %q", res.status)
		}
	})
}
