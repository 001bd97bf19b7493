package vrfrun

import (
	"errors"
	"strings"
	"testing"
)

// TestParseRequestErrors checks that every request the reference refuses
// or fails on is an error naming the field, with the right sentinel.
func TestParseRequestErrors(t *testing.T) {
	const tests = `"verification": {"test_suite": {"tests": [{"input": "1", "expected_output": "1"}]}}`
	for _, c := range []struct {
		name   string
		body   string
		opts   ParseOptions
		field  string
		offset int
		kind   error
		reason string
	}{
		{"not an object", `[]`, ParseOptions{}, "body", -1, nil, "want a JSON object, got list"},
		{"schema endpoint, not an object", `[1]`, ParseOptions{Schema: true}, "body", -1, nil, "got list"},
		{"syntax", `{"tier": `, ParseOptions{}, "body", 9, nil, "expecting a value"},
		{"bad utf-8", "{\"a\": \"\xc3\"}", ParseOptions{}, "body", 7, nil, "invalid UTF-8"},
		{"utf-16", "\x00{\x00}", ParseOptions{}, "body", 0, nil, "UTF-8"},
		{"tier 2", `{"tier": 2, ` + tests + `}`, ParseOptions{}, "tier", -1, ErrTier, "Tier 2 not supported in v1"},
		{"tier string", `{"tier": "0"}`, ParseOptions{}, "tier", -1, ErrTier, "Tier 0 not supported in v1"},
		{"tier null", `{"tier": null}`, ParseOptions{}, "tier", -1, ErrTier, "Tier None not supported in v1"},
		{"tier list", `{"tier": [1, "a"]}`, ParseOptions{}, "tier", -1, ErrTier, "Tier [1, 'a'] not supported in v1"},
		{"no tests", `{}`, ParseOptions{}, "verification.test_suite.tests", -1, ErrNoTests, "Tier 0 requires test_suite with tests"},
		{"empty tests", `{"verification": {"test_suite": {"tests": []}}}`, ParseOptions{}, "verification.test_suite.tests", -1, ErrNoTests, ""},
		{"verification null", `{"verification": null}`, ParseOptions{}, "verification", -1, nil, "want an object, got NoneType"},
		{"test_suite list", `{"verification": {"test_suite": []}}`, ParseOptions{}, "verification.test_suite", -1, nil, "got list"},
		{"output string", `{"output": "x", ` + tests + `}`, ParseOptions{}, "output", -1, nil, "got str"},
		{"tests string", `{"verification": {"test_suite": {"tests": "abc"}}}`, ParseOptions{}, "verification.test_suite.tests", -1, nil, "got str"},
		{"test not object", `{"verification": {"test_suite": {"tests": [{}, 5]}}}`, ParseOptions{}, "verification.test_suite.tests[1]", -1, nil, "got int"},
		{"content number", `{"output": {"content": 5}, ` + tests + `}`, ParseOptions{}, "output.content", -1, nil, "got int"},
		{"content surrogate", `{"output": {"content": "\ud800"}, ` + tests + `}`, ParseOptions{}, "output.content", -1, nil, "surrogate"},
		{"timeout string", `{"verification": {"test_suite": {"tests": [{"timeout_ms": "5"}]}}}`, ParseOptions{}, "verification.test_suite.tests[0].timeout_ms", -1, nil, "got str"},
		{"timeout null", `{"verification": {"test_suite": {"tests": [{}, {"timeout_ms": null}]}}}`, ParseOptions{}, "verification.test_suite.tests[1].timeout_ms", -1, nil, "got NoneType"},
		{"timeout NaN", `{"verification": {"test_suite": {"tests": [{"timeout_ms": NaN}]}}}`, ParseOptions{}, "verification.test_suite.tests[0].timeout_ms", -1, nil, "finite"},
		{"timeout huge", `{"verification": {"test_suite": {"tests": [{"timeout_ms": 1` + strings.Repeat("0", 400) + `}]}}}`, ParseOptions{}, "verification.test_suite.tests[0].timeout_ms", -1, nil, "too large"},
		{"language number", `{"verification": {"test_suite": {"language": 5, "tests": [{}]}}}`, ParseOptions{}, "verification.test_suite.language", -1, nil, "got int"},
		{"language path", `{"verification": {"test_suite": {"language": "../bin/sh", "tests": [{}]}}}`, ParseOptions{}, "verification.test_suite.language", -1, nil, "not a language"},
		{"program input number", `{"verification": {"test_suite": {"language": "bash", "tests": [{"input": 5}]}}}`, ParseOptions{}, "verification.test_suite.tests[0].input", -1, nil, "got int"},
		{"program expected number", `{"verification": {"test_suite": {"language": "bash", "tests": [{"expected_output": 5}]}}}`, ParseOptions{}, "verification.test_suite.tests[0].expected_output", -1, nil, "got int"},
		{"program timeout", `{"verification": {"test_suite": {"language": "node", "tests": [{"expression": "1", "timeout_ms": "x"}]}}}`, ParseOptions{}, "verification.test_suite.tests[0].timeout_ms", -1, nil, "got str"},
		{"huge int", `{"specification": [` + strings.Repeat("7", 4301) + `]}`, ParseOptions{}, "body", 19, nil, "4300"},

		{"tier 1 verification string", `{"tier": 1, "schema": {}, "verification": "x"}`, ParseOptions{}, "verification", -1, nil, "got str"},
		{"schema null", `{"schema": null}`, ParseOptions{Schema: true}, "schema", -1, nil, "got NoneType"},
		{"verification.schema list", `{"verification": {"schema": []}}`, ParseOptions{Schema: true}, "verification.schema", -1, nil, "got list"},
		{"constraints string", `{"constraints": "x"}`, ParseOptions{Schema: true}, "constraints", -1, nil, "got str"},
		{"constraints item", `{"verification": {"constraints": [{}, 1]}}`, ParseOptions{Schema: true}, "verification.constraints[1]", -1, nil, "got int"},
		{"required null", `{"output": {"content": "{}"}, "schema": {"type": "object", "required": null}}`, ParseOptions{Schema: true}, "schema.required", -1, nil, "got NoneType"},
		{"required unhashable", `{"output": {"content": "{}"}, "schema": {"type": "object", "required": ["a", {}]}}`, ParseOptions{Schema: true}, "schema.required[1]", -1, nil, "unhashable"},
		{"content huge int", `{"output": {"content": "[` + strings.Repeat("7", 4301) + `]"}}`, ParseOptions{Schema: true}, "output.content", -1, nil, "4300"},
		{"content too deep", `{"output": {"content": "` + strings.Repeat("[", maxDepth+1) + `"}}`, ParseOptions{Schema: true}, "output.content", -1, nil, "deeper"},

		{"checks not list", `{"checks": {}}`, ParseOptions{Schema: true, SpecChecks: true}, "checks", -1, nil, "got dict"},
		{"check form", `{"verification": {"checks": [{"constraint": "bogus"}]}}`, ParseOptions{Schema: true, SpecChecks: true}, "verification.checks[0].constraint", -1, nil, "not json_parse"},
		{"check name", `{"checks": [{"name": 5, "constraint": "json_parse"}]}`, ParseOptions{Schema: true, SpecChecks: true}, "checks[0].name", -1, nil, "got int"},
		{"check missing", `{"checks": [{"name": "x"}]}`, ParseOptions{Schema: true, SpecChecks: true}, "checks[0].constraint", -1, nil, "missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRequest([]byte(c.body), c.opts)
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("want a *RequestError, got %v", err)
			}
			if !errors.Is(err, ErrRequest) {
				t.Errorf("%v does not wrap ErrRequest", err)
			}
			if c.kind != nil && !errors.Is(err, c.kind) {
				t.Errorf("%v does not wrap %v", err, c.kind)
			}
			if re.Field != c.field || re.Offset != c.offset {
				t.Errorf("field %q offset %d, want %q %d (%v)", re.Field, re.Offset, c.field, c.offset, err)
			}
			if !strings.Contains(re.Reason, c.reason) {
				t.Errorf("reason %q does not say %q", re.Reason, c.reason)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

// TestParseRequestForms checks how a request is classified.
func TestParseRequestForms(t *testing.T) {
	for _, c := range []struct {
		name, body string
		opts       ParseOptions
		tier       int
		form       Form
		lang       string
		taskID     string
	}{
		{"default", `{"verification": {"test_suite": {"tests": [{}]}}}`, ParseOptions{}, 0, FormPython, "python", ""},
		{"tier false", `{"tier": false, "task_id": 7, "verification": {"test_suite": {"tests": [{}]}}}`, ParseOptions{}, 0, FormPython, "python", "7"},
		{"tier 1.0", `{"tier": 1.0}`, ParseOptions{}, 1, FormChecks, "", ""},
		{"schema endpoint over tier 3", `{"tier": 3, "task_id": ""}`, ParseOptions{Schema: true}, 1, FormChecks, "", ""},
		{"use_docker python", `{"verification": {"use_docker": "yes", "test_suite": {"tests": [{}]}}}`, ParseOptions{}, 0, FormProgram, "python", ""},
		{"use_docker python expression", `{"verification": {"use_docker": true, "test_suite": {"tests": [{"expression": "1"}]}}}`, ParseOptions{}, 0, FormExpression, "python", ""},
		{"use_docker falsy", `{"verification": {"use_docker": [], "test_suite": {"tests": [{}]}}}`, ParseOptions{}, 0, FormPython, "python", ""},
		{"javascript expression", `{"verification": {"test_suite": {"language": "javascript", "tests": [{"expression": "1"}, {"input": "x"}]}}}`, ParseOptions{}, 0, FormExpression, "javascript", ""},
		{"node first test io", `{"verification": {"test_suite": {"language": "node", "tests": [{"input": "x"}, {"expression": "1"}]}}}`, ParseOptions{}, 0, FormProgram, "node", ""},
		{"node empty expression", `{"verification": {"test_suite": {"language": "node", "tests": [{"expression": ""}]}}}`, ParseOptions{}, 0, FormProgram, "node", ""},
		{"bash expression", `{"verification": {"test_suite": {"language": "bash", "tests": [{"expression": "1"}]}}}`, ParseOptions{}, 0, FormProgram, "bash", ""},
		{"other program", `{"verification": {"test_suite": {"language": "perl", "tests": [{}]}}}`, ParseOptions{}, 0, FormProgram, "perl", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := ParseRequest([]byte(c.body), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if r.Tier != c.tier || r.Form != c.form || r.Language != c.lang || r.TaskID != c.taskID {
				t.Errorf("tier %d form %v language %q task_id %q, want %d %v %q %q", r.Tier, r.Form, r.Language, r.TaskID, c.tier, c.form, c.lang, c.taskID)
			}
		})
	}
}

// TestParseRequestTests checks the per-test defaults of each form.
func TestParseRequestTests(t *testing.T) {
	r, err := ParseRequest([]byte(`{"verification": {"test_suite": {"tests": [
		{"input": "1"}, {"name": ["x"], "timeout_ms": true}, {"name": "n", "timeout_ms": 2500.5}]}}}`), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name    string
		timeout float64
	}{{"test_0", 30}, {"['x']", 0.001}, {"n", 2.5005}}
	for i, w := range want {
		if tc := r.tests[i]; tc.name != w.name || tc.timeout != w.timeout {
			t.Errorf("test %d: %q %v, want %q %v", i, tc.name, tc.timeout, w.name, w.timeout)
		}
	}
	if r.tests[0].expected.k != kStr || r.tests[0].expected.s != "" {
		t.Errorf("absent expected_output is %s, want ''", pyRepr(r.tests[0].expected))
	}

	r, err = ParseRequest([]byte(`{"verification": {"test_suite": {"language": "bash", "tests": [
		{"input": "  in\n", "expected": " out \n"}, {"expression": "x", "expected": "y", "input": "ignored"}, {"input": 0, "expected_output": null}]}}}`), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []testCase{{name: "test", stdin: "  in\n", want: "out", timeout: 5}, {name: "test", timeout: 5}, {name: "test", timeout: 5}} {
		tc := r.tests[i]
		if tc.name != w.name || tc.stdin != w.stdin || tc.want != w.want || tc.timeout != w.timeout {
			t.Errorf("test %d: %+v, want %+v", i, tc, w)
		}
	}

	r, err = ParseRequest([]byte(`{"verification": {"test_suite": {"language": "javascript", "tests": [
		{"name": 1, "expression": "a()", "timeout_ms": 100}, {"input": "x", "timeout_ms": 3000}]}}}`), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"name": 1, "expression": "a()", "expected": null}, {"name": "test", "expression": null, "expected": null}]`; r.exprJSON != want {
		t.Errorf("tests_data %s, want %s", r.exprJSON, want)
	}
	if r.exprWall != 5 {
		t.Errorf("expression timeout %v s, want 5 (3000 ms + 2 s)", r.exprWall)
	}
}

// TestParseRequestTier1 checks the tier-1 checks decided from the request
// alone and the constraint names.
func TestParseRequestTier1(t *testing.T) {
	r, err := ParseRequest([]byte(`{"output": {"content": "{\"a\": 1, \"é\": 2}"},
		"schema": {"type": "object", "required": ["a", "b", "é", 2]},
		"constraints": [{"expr": "1"}, {"name": null, "expr": "2"}, {"expr": "3"}]}`), ParseOptions{Schema: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []checkResult{
		{"type_check", "pass", ""}, {"required_a", "pass", ""}, {"required_b", "fail", "Missing required field: b"},
		{"required_é", "pass", ""}, {"required_2", "fail", "Missing required field: 2"},
	}
	if len(r.schemaRes) != len(want) {
		t.Fatalf("schema checks %v, want %v", r.schemaRes, want)
	}
	for i := range want {
		if r.schemaRes[i] != want[i] {
			t.Errorf("check %d: %v, want %v", i, r.schemaRes[i], want[i])
		}
	}
	var names []string
	for _, c := range r.constraints {
		names = append(names, c.name)
	}
	if got := strings.Join(names, ","); got != "constraint_5,None,constraint_7" {
		t.Errorf("constraint names %s", got)
	}
}
