package vrfrun

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/proofledger/ledger/codec/vrf"
)

// Sentinel errors callers branch on. Every request the reference verifier
// refuses (HTTP 400) or fails on (HTTP 500, a Python exception such as a
// field of the wrong type) is an error wrapping ErrRequest; the two 400s
// the reference words on purpose also wrap ErrTier or ErrNoTests.
var (
	// ErrRequest: the request body cannot be verified as it stands; the
	// *RequestError says which field and why.
	ErrRequest = errors.New("vrfrun: bad request")
	// ErrTier: the tier is not 0 or 1 ("Tier 2 not supported in v1").
	ErrTier = errors.New("vrfrun: tier not supported")
	// ErrNoTests: a tier-0 request without tests ("Tier 0 requires
	// test_suite with tests").
	ErrNoTests = errors.New("vrfrun: tier 0 without tests")
	// ErrLanguage: no runtime for the request's language on this machine
	// (the reference fails with FileNotFoundError, HTTP 500).
	ErrLanguage = errors.New("vrfrun: language runtime not available")
)

// RequestError says what is wrong with a request. It wraps ErrRequest
// and, where one applies, ErrTier or ErrNoTests.
type RequestError struct {
	// Field is the dotted path of the offending field
	// ("verification.test_suite.tests[2].timeout_ms"), or "body" for the
	// body as a whole.
	Field string
	// Offset is the byte offset in the body of a JSON syntax error, -1
	// otherwise.
	Offset int
	// Reason says what is wrong.
	Reason string
	kind   error
}

// Error returns "vrfrun: request: <field>: <reason>", on one line.
func (e *RequestError) Error() string {
	reason := oneLine.Replace(e.Reason)
	if e.Offset >= 0 {
		return fmt.Sprintf("vrfrun: request: %s: offset %d: %s", e.Field, e.Offset, reason)
	}
	return fmt.Sprintf("vrfrun: request: %s: %s", e.Field, reason)
}

// oneLine escapes line breaks that a reason may quote from the request.
var oneLine = strings.NewReplacer("\n", `\n`, "\r", `\r`, "\u2028", `\u2028`, "\u2029", `\u2029`, "\u0085", `\u0085`)

// Unwrap returns ErrRequest and the more specific sentinel, if any.
func (e *RequestError) Unwrap() []error {
	if e.kind != nil {
		return []error{ErrRequest, e.kind}
	}
	return []error{ErrRequest}
}

func badField(field, format string, args ...any) *RequestError {
	return &RequestError{Field: field, Offset: -1, Reason: fmt.Sprintf(format, args...)}
}

// Form is how a request's checks run.
type Form int

const (
	// FormPython is tier 0 in Python (the default): each test runs the
	// harness that executes the code as a module, evaluates input and
	// expected_output and compares them with ==.
	FormPython Form = iota
	// FormProgram is tier 0's stdin/stdout form, for any language other
	// than python (or python with use_docker): the code is a program, each
	// test feeds input on standard input and compares the trimmed
	// standard output with the trimmed expected_output.
	FormProgram
	// FormExpression is tier 0's expression form for python (with
	// use_docker) and javascript/node, chosen when the first test has an
	// "expression": one run evaluates every test's expression after the
	// code and compares str()/String() of it with "expected".
	FormExpression
	// FormChecks is tier 1: type_check, required_<field>, expr
	// constraints and, when enabled, the spec's checks.
	FormChecks
)

// String names the form.
func (f Form) String() string {
	switch f {
	case FormPython:
		return "python"
	case FormProgram:
		return "program"
	case FormExpression:
		return "expression"
	case FormChecks:
		return "checks"
	}
	return "Form(" + strconv.Itoa(int(f)) + ")"
}

// ParseOptions says how to read a request body.
type ParseOptions struct {
	// Schema reads the body as the reference's POST /verify/schema does:
	// the tier is forced to 1 whatever the body says.
	Schema bool
	// SpecChecks evaluates the VRF specification's own tier-1 check list
	// ("checks": [{"name": ..., "constraint": "json_path:$.a exists"}],
	// at the top level or under "verification"; grammar in checks.go).
	// The reference ignores that list, so a request that carries one gets
	// a different verdict from it when this is set; off by default.
	SpecChecks bool
}

// Request is a parsed verification request. Its fields say what was asked;
// everything the verification needs is kept unexported.
type Request struct {
	// Tier is 0 (test suite) or 1 (schema and constraints).
	Tier int
	// Form is how the checks run.
	Form Form
	// TaskID and TaskType are copied to the receipt; empty when the
	// request gives none or a false value (the reference copies only
	// true values; a non-string one is written as Python's str() of it).
	TaskID, TaskType string
	// Language is tier 0's verification.test_suite.language ("python"
	// when absent); empty for tier 1.
	Language string

	hashes vrf.Hashes // input, output and suite hashes (tier 0 environment comes later)

	// tier 0
	code     string
	tests    []testCase
	program  runtimeSpec // FormProgram and FormExpression
	exprJSON string      // FormExpression: json.dumps(tests_data) as the reference embeds it
	exprWall float64     // FormExpression: max(timeout_ms)/1000 + 2, seconds

	// tier 1
	output      value
	outputText  *string // the text the output came from, for json_parse and regex
	outputDump  string  // json.dumps(output, sort_keys=True, default=str)
	schemaRes   []checkResult
	constraints []constraint
	checks      []specCheck
}

// testCase is one tier-0 test.
type testCase struct {
	name string // detail name
	// FormPython: the values eval()'d.
	input, expected value
	// FormProgram: standard input and the trimmed expected output.
	stdin, want string
	// timeout is timeout_ms/1000 in seconds, as Python computes it;
	// timeoutMS is timeout_ms as given, for the reference's messages.
	timeout   float64
	timeoutMS value
}

// constraint is one tier-1 expr constraint.
type constraint struct {
	name string
	expr value
}

// checkResult is one check decided without running anything.
type checkResult struct {
	name, status, err string
}

// runtimeSpec is how the reference's docker_runner runs a language: the
// program, the solution file's extension and, for python and javascript,
// the expression wrapper.
type runtimeSpec struct {
	program string // a name looked up in the sandbox's system directories
	ext     string
	wrapper *wrapper
}

// languageName is what a language must look like to be used as a program
// name.
var languageName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// ParseRequest reads a verification request body as the reference
// verifier reads it (json.loads; an empty body is {}), checks every field
// the verification will use, and computes the hashes that depend only on
// the request. Errors wrap ErrRequest (see RequestError).
func ParseRequest(body []byte, opts ParseOptions) (*Request, error) {
	root := value{k: kDict}
	if len(body) > 0 {
		v, err := parseBody(body)
		if err != nil {
			var je *jsonError
			if errors.As(err, &je) {
				return nil, &RequestError{Field: "body", Offset: je.Offset, Reason: je.Reason}
			}
			return nil, &RequestError{Field: "body", Offset: -1, Reason: err.Error()}
		}
		root = v
	}
	if root.k != kDict {
		return nil, badField("body", "want a JSON object, got %s", root.typeName())
	}
	r := &Request{}
	switch tv, ok := root.get("tier"); {
	case opts.Schema, ok && tv.equalsSmallInt(1):
		r.Tier = 1
	case !ok, tv.equalsSmallInt(0):
		r.Tier = 0
	default:
		e := badField("tier", "Tier %s not supported in v1", pyStr(tv))
		e.kind = ErrTier
		return nil, e
	}
	if v, ok := root.get("task_id"); ok && v.truthy() {
		r.TaskID = pyStr(v)
	}
	if v, ok := root.get("task_type"); ok && v.truthy() {
		r.TaskType = pyStr(v)
	}
	var err error
	if r.Tier == 0 {
		err = r.parseTier0(root)
	} else {
		err = r.parseTier1(root, opts)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// object returns d[key] when it is a dict, an empty dict when absent, and
// an error naming field otherwise (the reference calls .get on it).
func object(d value, key, field string) (value, error) {
	v, ok := d.get(key)
	if !ok {
		return value{k: kDict}, nil
	}
	if v.k != kDict {
		return value{}, badField(field, "want an object, got %s", v.typeName())
	}
	return v, nil
}

func (r *Request) parseTier0(root value) error {
	ver, err := object(root, "verification", "verification")
	if err != nil {
		return err
	}
	suite, err := object(ver, "test_suite", "verification.test_suite")
	if err != nil {
		return err
	}
	tests, _ := suite.get("tests")
	output, err := object(root, "output", "output")
	if err != nil {
		return err
	}
	code := pyStrValue("")
	if c, ok := output.get("content"); ok {
		code = c
	}
	lang := pyStrValue("python")
	if l, ok := suite.get("language"); ok {
		lang = l
	}
	useDocker, _ := ver.get("use_docker")
	if !tests.truthy() {
		e := badField("verification.test_suite.tests", "Tier 0 requires test_suite with tests")
		e.kind = ErrNoTests
		return e
	}
	const testsField = "verification.test_suite.tests"
	if tests.k != kList {
		return badField(testsField, "want a list of test objects, got %s", tests.typeName())
	}
	for i, t := range tests.list {
		if t.k != kDict {
			return badField(fmt.Sprintf("%s[%d]", testsField, i), "want an object, got %s", t.typeName())
		}
	}
	if code.k != kStr {
		return badField("output.content", "want a string (the code), got %s", code.typeName())
	}
	if hasSurrogate(code.s) {
		return badField("output.content", "holds a lone surrogate, which is not encodable as UTF-8")
	}
	r.code = code.s

	spec := value{k: kDict}
	if s, ok := root.get("specification"); ok {
		spec = s
	}
	r.hashes = vrf.Hashes{
		Input:  vrf.ShortHash([]byte(dumps(spec, true))),
		Output: vrf.ShortHash([]byte(r.code)),
		Suite:  vrf.ShortHash([]byte(dumps(tests, true))),
	}

	if lang.k == kStr && lang.s == "python" && !useDocker.truthy() {
		r.Form = FormPython
		r.Language = "python"
		return r.pythonTests(tests.list, testsField)
	}
	if lang.k != kStr {
		return badField("verification.test_suite.language", "want a string, got %s", lang.typeName())
	}
	if !languageName.MatchString(lang.s) {
		return badField("verification.test_suite.language", "%q is not a language or program name", lang.s)
	}
	r.Language = lang.s
	r.program = runtimeFor(lang.s)
	return r.programTests(tests.list, testsField)
}

// pythonTests reads tests as the reference's _execute_python_tests does.
func (r *Request) pythonTests(tests []value, field string) error {
	r.tests = make([]testCase, len(tests))
	for i, t := range tests {
		tc := testCase{name: "test_" + strconv.Itoa(i), input: pyStrValue(""), expected: pyStrValue(""), timeoutMS: pyInt(30000)}
		if v, ok := t.get("name"); ok {
			tc.name = pyStr(v)
		}
		if v, ok := t.get("input"); ok {
			tc.input = v
		}
		if v, ok := t.get("expected_output"); ok {
			tc.expected = v
		}
		if v, ok := t.get("timeout_ms"); ok {
			tc.timeoutMS = v
		}
		secs, err := timeoutSeconds(tc.timeoutMS, fmt.Sprintf("%s[%d].timeout_ms", field, i))
		if err != nil {
			return err
		}
		tc.timeout = secs
		r.tests[i] = tc
	}
	return nil
}

// timeoutSeconds is timeout_ms / 1000.0 as Python computes it.
func timeoutSeconds(ms value, field string) (float64, error) {
	f, ok := ms.asFloat()
	if !ok {
		if ms.k == kInt {
			return 0, badField(field, "%s is too large", ms.num)
		}
		return 0, badField(field, "want a number of milliseconds, got %s", ms.typeName())
	}
	secs := f / 1000.0
	if math.IsNaN(secs) || math.IsInf(secs, 0) {
		return 0, badField(field, "want a finite number of milliseconds, got %s", pyStr(ms))
	}
	return secs, nil
}

// runtimeFor is the reference docker_runner's RUNTIMES table: python,
// javascript (node is an alias) and bash; any other language runs as the
// program of that name with a ".py" file, as the reference does.
func runtimeFor(lang string) runtimeSpec {
	switch lang {
	case "python":
		return runtimeSpec{program: "", ext: ".py", wrapper: pythonWrapper()} // "" is Options.Python
	case "javascript", "node":
		return runtimeSpec{program: "node", ext: ".js", wrapper: jsWrapper()}
	case "bash":
		return runtimeSpec{program: "bash", ext: ".sh"}
	}
	return runtimeSpec{program: lang, ext: ".py"}
}

// programTests reads tests as the reference's _run_docker_tests and
// docker_runner.run_tests do.
func (r *Request) programTests(tests []value, field string) error {
	first := tests[0]
	fe, hasExpr := first.get("expression")
	exprMode := hasExpr && fe.truthy() && r.program.wrapper != nil

	r.tests = make([]testCase, len(tests))
	data := make([]value, len(tests))
	maxSecs := math.Inf(-1)
	for i, t := range tests {
		tf := fmt.Sprintf("%s[%d]", field, i)
		rawName := pyStrValue("test")
		if v, ok := t.get("name"); ok {
			rawName = v
		}
		tc := testCase{name: pyStr(rawName), timeoutMS: pyInt(5000)}
		if v, ok := t.get("timeout_ms"); ok {
			tc.timeoutMS = v
		}
		secs, err := timeoutSeconds(tc.timeoutMS, tf+".timeout_ms")
		if err != nil {
			return err
		}
		tc.timeout = secs
		maxSecs = max(maxSecs, secs)

		// The reference's TestCase: an "expression" test has no input
		// and no expected_output; any other has no expression.
		expression, expected := pyNone(), pyNone()
		input, expectedOutput := pyNone(), pyNone()
		if v, ok := t.get("expression"); ok {
			expression = v
			if e, ok := t.get("expected"); ok {
				expected = e
			}
		} else {
			input = pyStrValue("")
			if v, ok := t.get("input"); ok {
				input = v
			}
			expectedOutput = pyStrValue("")
			if v, ok := t.get("expected_output"); ok {
				expectedOutput = v
			} else if v, ok := t.get("expected"); ok {
				expectedOutput = v
			}
		}
		if exprMode {
			data[i] = pyDict("name", rawName, "expression", expression, "expected", expected)
		} else {
			// stdin is `tc.input or ""`, expected `(tc.expected_output or "").strip()`.
			if input.truthy() {
				if input.k != kStr {
					return badField(tf+".input", "want a string (standard input), got %s", input.typeName())
				}
				if hasSurrogate(input.s) {
					return badField(tf+".input", "holds a lone surrogate, which is not encodable as UTF-8")
				}
				tc.stdin = input.s
			}
			if expectedOutput.truthy() {
				if expectedOutput.k != kStr {
					return badField(tf+".expected_output", "want a string, got %s", expectedOutput.typeName())
				}
				tc.want = pyStrip(expectedOutput.s)
			}
		}
		r.tests[i] = tc
	}
	if exprMode {
		r.Form = FormExpression
		r.exprJSON = dumps(pyList(data...), false)
		r.exprWall = maxSecs + 2
	} else {
		r.Form = FormProgram
	}
	return nil
}

func (r *Request) parseTier1(root value, opts ParseOptions) error {
	r.Form = FormChecks
	outputData := value{k: kDict}
	if v, ok := root.get("output"); ok {
		outputData = v
	}
	if c, ok := outputData.get("content"); ok {
		r.output = c
		if c.k == kStr {
			text := c.s
			r.outputText = &text
			v, err := parseText(c.s)
			var je *jsonError
			switch {
			case err == nil:
				r.output = v
			case errors.As(err, &je) && je.fatal:
				return badField("output.content", "%s", je.Error())
			}
		}
	} else {
		r.output = outputData
		if outputData.k == kStr {
			text := outputData.s
			r.outputText = &text
		}
	}

	// The reference reads req.get("verification", {}).get(...) even when
	// the top level has schema and constraints, so a verification that is
	// not an object fails every tier-1 request.
	ver, err := object(root, "verification", "verification")
	if err != nil {
		return err
	}
	schema, schemaField := value{k: kDict}, "verification.schema"
	if v, ok := root.get("schema"); ok {
		schema, schemaField = v, "schema"
	} else if v, ok := ver.get("schema"); ok {
		schema = v
	}
	if schema.k != kDict {
		return badField(schemaField, "want an object, got %s", schema.typeName())
	}
	cons, consField := pyList(), "verification.constraints"
	if v, ok := root.get("constraints"); ok {
		cons, consField = v, "constraints"
	} else if v, ok := ver.get("constraints"); ok {
		cons = v
	}

	if err := r.schemaChecks(schema, schemaField); err != nil {
		return err
	}
	if cons.truthy() {
		if cons.k != kList {
			return badField(consField, "want a list of constraint objects, got %s", cons.typeName())
		}
		for i, c := range cons.list {
			if c.k != kDict {
				return badField(fmt.Sprintf("%s[%d]", consField, i), "want an object, got %s", c.typeName())
			}
			k := constraint{name: "constraint_" + strconv.Itoa(len(r.schemaRes)+i), expr: pyStrValue("")}
			if v, ok := c.get("name"); ok {
				k.name = pyStr(v)
			}
			if v, ok := c.get("expr"); ok {
				k.expr = v
			}
			r.constraints = append(r.constraints, k)
		}
	}
	if opts.SpecChecks {
		if err := r.parseSpecChecks(root, ver); err != nil {
			return err
		}
	}
	r.outputDump = dumps(r.output, true)
	h := vrf.ShortHash([]byte(r.outputDump))
	r.hashes = vrf.Hashes{Input: h, Output: h, Suite: vrf.ShortHash([]byte(dumps(schema, true)))}
	return nil
}

// schemaChecks decides type_check and required_<field> as the reference's
// _verify_schema does.
func (r *Request) schemaChecks(schema value, field string) error {
	t, _ := schema.get("type")
	if t.k != kStr || (t.s != "object" && t.s != "array") {
		return nil
	}
	want := map[string]kind{"object": kDict, "array": kList}[t.s]
	if r.output.k != want {
		r.schemaRes = append(r.schemaRes, checkResult{"type_check", vrf.StatusFail,
			fmt.Sprintf("Expected %s, got %s", t.s, r.output.typeName())})
		return nil
	}
	r.schemaRes = append(r.schemaRes, checkResult{name: "type_check", status: vrf.StatusPass})
	if t.s != "object" {
		return nil
	}
	req, ok := schema.get("required")
	if !ok {
		return nil
	}
	// `for req in schema.get("required", [])`: a list, the characters of
	// a str, the keys of a dict; anything else is not iterable.
	var items []value
	switch req.k {
	case kList:
		items = req.list
	case kStr:
		for i := 0; i < len(req.s); {
			_, n := decodeWTF8(req.s[i:])
			items = append(items, pyStrValue(req.s[i:i+n]))
			i += n
		}
	case kDict:
		for _, k := range req.keys {
			items = append(items, pyStrValue(k))
		}
	default:
		return badField(field+".required", "want a list of field names, got %s", req.typeName())
	}
	for i, it := range items {
		if it.k == kList || it.k == kDict {
			return badField(fmt.Sprintf("%s.required[%d]", field, i), "want a field name, got %s (unhashable)", it.typeName())
		}
		name := "required_" + pyStr(it)
		if it.k == kStr && r.output.has(it.s) {
			r.schemaRes = append(r.schemaRes, checkResult{name: name, status: vrf.StatusPass})
		} else {
			r.schemaRes = append(r.schemaRes, checkResult{name, vrf.StatusFail, "Missing required field: " + pyStr(it)})
		}
	}
	return nil
}
