package vrfrun

import (
	"strings"
	"testing"

	"github.com/proofledger/ledger/verifier/sandbox"
)

// TestParseCheckGrammar checks what the grammar accepts and refuses.
func TestParseCheckGrammar(t *testing.T) {
	for _, c := range []struct {
		in   string
		form string
		path string
		bad  string // part of the error, "" when valid
	}{
		{"json_parse", "json_parse", "", ""},
		{"  json_parse\n", "json_parse", "", ""},
		{"json_path:$.name exists", "exists", "$.name", ""},
		{"json_path:$.a.b_c-d[0]['x y'][\"it's\"] exists", "exists", `$.a.b_c-d[0]['x y']["it's"]`, ""},
		{"json_path:$.名前 exists", "exists", "$.名前", ""},
		{"json_path:$ exists", "exists", "$", ""},
		{"json_path:$.a  equals   {\"b\": [1, 2.0]}", "equals", "$.a", ""},
		{"json_path:$.a equals NaN", "equals", "$.a", ""},
		{"json_path:$.items length <= 3", "length", "$.items", ""},
		{"length <= 1000", "length", "$", ""},
		{"length>=1", "length", "$", ""},
		{"length != 0", "length", "$", ""},
		{"regex:^[a-z]+$", "regex", "", ""},
		{"regex:", "regex", "", ""},

		{"", "", "", "is not json_parse"},
		{"json_parse extra", "", "", "is not json_parse"},
		{"jsonpath:$.a exists", "", "", "is not json_parse"},
		{"json_path:a exists", "", "", "starts with $"},
		{"json_path:$. exists", "", "", "empty name"},
		{"json_path:$[x] exists", "", "", "not a list index"},
		{"json_path:$[-1] exists", "", "", "not a list index"},
		{"json_path:$[0 exists", "", "", "unclosed ["},
		{"json_path:$['a exists", "", "", "unclosed ["},
		{"json_path:$.a", "", "", "want exists, equals or length"},
		{"json_path:$.a exists now", "", "", "unexpected"},
		{"json_path:$.a matches x", "", "", "got \"matches\""},
		{"json_path:$.a equals", "", "", "not a JSON value"},
		{"json_path:$.a equals {", "", "", "not a JSON value"},
		{"length", "", "", "want `length"},
		{"length 5", "", "", "want one of"},
		{"length <= -1", "", "", "not a non-negative integer"},
		{"length <= +1", "", "", "not a non-negative integer"},
		{"length <= 1.5", "", "", "not a non-negative integer"},
		{"lengthy <= 1", "", "", "want `length"},
		{"regex:(", "", "", "regex:"},
	} {
		c2, err := parseCheck(c.in)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%q: want an error saying %q, got %v", c.in, c.bad, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if c2.form != c.form {
			t.Errorf("%q: form %s, want %s", c.in, c2.form, c.form)
		}
		if c.path != "" && pathString(c2.path) != c.path {
			t.Errorf("%q: path %s, want %s", c.in, pathString(c2.path), c.path)
		}
	}
}

// TestSpecChecks evaluates checks on outputs through Verify.
func TestSpecChecks(t *testing.T) {
	for _, c := range []struct {
		name    string
		output  string // the request's "output" value
		checks  string // the "checks" list's items
		results string // status:error per check, "|"-separated
	}{
		{"spec example", `{"content": "{\"name\": \"x\", \"n\": [1, 2]}"}`,
			`{"name": "is_valid_json", "constraint": "json_parse"}, {"name": "has_name_field", "constraint": "json_path:$.name exists"}, {"name": "max_length", "constraint": "length <= 1000"}`,
			"pass:|pass:|pass:"},
		{"not JSON", `{"content": "{oops"}`,
			`{"constraint": "json_parse"}, {"constraint": "json_path:$.a exists"}, {"constraint": "length == 5"}, {"constraint": "regex:^\\{o+ps$"}`,
			"fail:output is not JSON: offset 1: expecting a property name in double quotes|fail:no value at $.a|pass:|pass:"},
		{"JSON value given", `{"content": {"a": null, "b": [1, "x"]}}`,
			`{"constraint": "json_parse"}, {"constraint": "json_path:$.a exists"}, {"constraint": "json_path:$.b[1] equals \"x\""}, {"constraint": "json_path:$.b[2] exists"}, {"constraint": "regex:x"}`,
			"pass:|pass:|pass:|fail:no value at $.b[2]|error:regex: the output is a dict, not text"},
		{"equals", `{"content": "{\"i\": 1, \"f\": 1.0, \"t\": true, \"o\": {\"a\": [1, {\"b\": \"é\"}], \"c\": null}}"}`,
			`{"constraint": "json_path:$.i equals 1.0"}, {"constraint": "json_path:$.f equals 1"}, {"constraint": "json_path:$.t equals 1"}, {"constraint": "json_path:$.o equals {\"c\": null, \"a\": [1, {\"b\": \"\\u00e9\"}]}"}, {"constraint": "json_path:$.o.a equals [1]"}`,
			"pass:|pass:|fail:got true at $.t, expected 1|pass:|fail:got [1,{\"b\":\"\\u00e9\"}] at $.o.a, expected [1]"},
		{"length", `{"content": "{\"s\": \"h\u00e9\ud834\udd1e\", \"n\": 5, \"l\": []}"}`,
			`{"constraint": "json_path:$.s length == 3"}, {"constraint": "json_path:$.n length > 1"}, {"constraint": "json_path:$.l length < 1"}, {"constraint": "length != 3"}, {"constraint": "json_path:$.zz length > 1"}`,
			"pass:|error:object of type 'int' has no len()|pass:|fail:length 3 at $, want != 3|fail:no value at $.zz"},
		{"output string", `"plain text"`,
			`{"constraint": "json_parse"}, {"constraint": "regex:^plain"}, {"constraint": "length >= 10"}`,
			"fail:output is not JSON: offset 0: expecting a value|pass:|pass:"},
		{"no match", `{"content": "abc"}`, `{"constraint": "regex:^b"}`, "fail:no match for ^b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := `{"output": ` + c.output + `, "verification": {"kind": "schema_check", "checks": [` + c.checks + `]}}`
			f := &fakeRunner{run: answer(sandbox.Result{})}
			res := fakeVerify(t, f, Options{}, body, ParseOptions{Schema: true, SpecChecks: true})
			var got []string
			for _, d := range res.Details {
				got = append(got, d.Status+":"+d.Error)
			}
			if strings.Join(got, "|") != c.results {
				t.Errorf("got  %s\nwant %s", strings.Join(got, "|"), c.results)
			}
			if len(f.calls) != 0 {
				t.Errorf("spec checks ran %d commands", len(f.calls))
			}
		})
	}
}

// TestSpecChecksNaming checks default names (check_<details so far>), the
// order after constraints, and that without SpecChecks the list is
// ignored as the reference ignores it.
func TestSpecChecksNaming(t *testing.T) {
	body := `{"output": {"content": "{\"a\": 1}"}, "schema": {"type": "object", "required": ["a"]},
		"constraints": [{"expr": "True"}], "checks": [{"constraint": "json_parse"}, {"name": "n", "constraint": "length == 1"}, {"constraint": "regex:z"}]}`
	f := &fakeRunner{run: answer(sandbox.Result{Report: []byte("[\"pass\", \"\"]\n")})}
	res := fakeVerify(t, f, Options{}, body, ParseOptions{Schema: true, SpecChecks: true})
	var names []string
	for _, d := range res.Details {
		names = append(names, d.Name)
	}
	if got := strings.Join(names, ","); got != "type_check,required_a,constraint_2,check_3,n,check_5" {
		t.Errorf("names %s", got)
	}
	if res.Verdict != "partial" {
		t.Errorf("verdict %s, want partial", res.Verdict)
	}
	res = fakeVerify(t, f, Options{}, body, ParseOptions{Schema: true})
	if len(res.Details) != 3 || res.Verdict != "pass" {
		t.Errorf("without SpecChecks: %d details, verdict %s; want 3, pass", len(res.Details), res.Verdict)
	}
}
