// Package vrfrun verifies VRF requests the way the reference verifier
// (ClawBizarre's verify server, POST /verify and POST /verify/schema) does,
// with submitted code run in the sandbox of verifier/sandbox, and turns the
// outcome into a signed VRF receipt in the reference form (codec/vrf).
//
// It takes the reference's request bodies and reaches the reference's
// verdicts, counts, per-test statuses and hashes, so that a receipt from
// either verifier names the same artifacts. testdata/ holds requests and
// the reference's own answers to them (testdata/reference_golden.py runs
// the reference; `go test -run TestReferenceGolden -update` regenerates
// them); TestReferenceGolden checks vrfrun against every one.
//
// # Use
//
//	r, _ := sandbox.New(sandbox.Config{Pool: jobs})
//	v, _ := vrfrun.New(r, vrfrun.Options{Jobs: jobs})
//	req, err := vrfrun.ParseRequest(body, vrfrun.ParseOptions{Schema: path == "/verify/schema"})
//	// errors.Is(err, vrfrun.ErrRequest): the reference answers 400 or 500
//	res, err := v.Verify(ctx, req)
//	receipt, err := res.Sign(key, vrfrun.ReceiptOptions{AgentID: id, Chain: link})
//
// # What is the reference's, and where it comes from
//
// All in the reference's prototype/verify_server.py unless named:
//   - Body: json.loads (an empty body is {}): duplicate keys keep the last
//     value, NaN/Infinity are numbers, ints over 4300 digits are refused
//     (do_POST, _read_body). /verify/schema sets tier 1 (do_POST).
//   - Tier: request.get("tier", 0) compared with == (verify): 0, 0.0 and
//     false are tier 0, 1, 1.0 and true tier 1, anything else "Tier <x>
//     not supported in v1" (ErrTier).
//   - Tier 0 (_verify_tier0): tests from verification.test_suite.tests, code
//     from output.content (default ""), language from test_suite.language
//     (default python); a false tests value is "Tier 0 requires test_suite
//     with tests" (ErrNoTests). verification, test_suite and output must
//     be objects and content a string, or the reference fails (500).
//   - Python (_execute_python_tests): one process per test runs the code
//     as a module in a fresh namespace, evals input then expected_output
//     there (default "" each; a non-string is the eval TypeError), compares
//     with ==. Name default test_<index>; timeout_ms default 30000, per
//     test; status pass, fail ("FAIL: got <repr>, expected <repr>"), error
//     ("ERROR: <exception>", or the process's stderr, e.g. the traceback
//     of an exception at import, or its stdout), timeout ("Exceeded
//     <timeout_ms/1000.0>s", counted in errors). A timeout of 0 or less
//     times out at once, as subprocess.run does.
//   - Other languages, and python with a true verification.use_docker
//     (_run_docker_tests, docker_runner.run_tests): the language names the
//     program (javascript and node run node, bash bash, python python3,
//     any other the program of that name, with the reference's file
//     extensions .js, .sh, .py). If the first test has a true
//     "expression", docker_runner.run_expression_tests: python and
//     javascript run the reference's own wrapper script (str()/String()
//     comparison with "expected", one run for all tests, timeout max +
//     2 s, a failed run is one detail "runner"); otherwise run_io_tests:
//     each test's input on standard input, pass when the exit status is 0
//     and the trimmed standard output (universal newlines) equals the
//     trimmed expected_output (or "expected"); a non-zero exit is an error
//     with the first 500 characters of stderr, a timeout an error
//     "timeout (<timeout_ms>ms)"; name default "test", timeout_ms default
//     5000.
//   - Tier 1 (_verify_tier1, _verify_schema): output.content parsed as
//     JSON when it is a string that parses, else taken as is; output
//     itself when it has no content. schema and constraints at the top
//     level, else under verification (which must then be an object, since
//     the reference evaluates that default eagerly). schema.type "object":
//     type_check, then required_<str(field)> for each of schema.required
//     (a list, the characters of a string or the keys of an object) when
//     the output is an object; "array": type_check only. Each constraint
//     {"name", "expr"} is eval'd with output, len, sum, min, max bound and,
//     because that globals dict has no __builtins__, every other builtin
//     too; all in one Python process in the sandbox, sharing one output
//     object, in order. Default names constraint_<number of details so
//     far>; true is pass, false fail ("Constraint failed: <expr>"), an
//     exception error (str(e)).
//   - Verdict (both tiers): error if any error or timeout, else fail if
//     failures and no pass, partial if both, else pass.
//   - Hashes: "sha256:" + 16 hex of SHA-256 (_hash) over, for tier 0,
//     json.dumps(specification or {}, sort_keys=True) with Python's
//     default separators ", " ": " and ensure_ascii, the code's UTF-8, and
//     json.dumps(tests, sort_keys=True); the environment hash over
//     "python:" + sys.version of the interpreter (for every tier-0
//     language, as the reference does; the reference's is the Python its
//     server runs on, so Options.Python must name that interpreter for the
//     environment hashes to agree). Tier 1: input and output hash over
//     json.dumps(output, sort_keys=True, default=str) as it stands after
//     the constraints ran, suite hash over json.dumps(schema,
//     sort_keys=True), environment hash null.
//   - Metadata: verifier_version, execution_ms (rounded to 2 places),
//     sandboxed, language and runtime ("python3.11" for python, else the
//     language) for tier 0; task_id and task_type copied when true.
//
// # The one intended difference: the report channel
//
// The reference decides a python test by the process's whole standard
// output ("PASS", or starting "FAIL:"), so code that prints at import
// time turns every test into an error and code that prints "PASS" and
// exits passes; the expression wrappers' results are parsed from stdout
// too, and a program whose stderr is exactly "timeout" is reported as
// timed out. vrfrun's harnesses write their verdicts to the sandbox's
// report pipe (file descriptor 3), and timeouts come from the sandbox, so
// what submitted code prints changes nothing. The programs keep the
// reference scripts' line layout, so tracebacks and error texts are the
// reference's.
//
// # Where vrfrun refuses what the reference would crash on or allow
//
// A request on which the reference raises (HTTP 500) is an ErrRequest
// error naming the field, not a receipt. Request JSON nested deeper than
// 900 levels is refused. Limits the reference does not have come from the
// sandbox (memory, processes, file size; CPU time is set so that only the
// wall clock decides), and Options.MaxTimeout may cap timeouts. A
// constraint that raises SystemExit (which stops the reference's server)
// is that constraint's error. Tier-1 constraints run under
// Options.ConstraintTimeout (the reference has none): the constraint
// running when it expires is a timeout, later ones errors. Detail texts
// are capped at Options.MaxMessage characters. Non-string test names,
// task_id and task_type are written as Python's str() of them (the
// reference writes the JSON value, which VRF receipts do not allow).
// Program output that is not UTF-8 is read with U+FFFD replacements (the
// reference fails the request).
//
// # Languages
//
// "python" (default) is the harness form; any other language runs as a
// program found in the sandbox's system directories (/usr/local/bin,
// /usr/bin, /bin): "javascript" and "node" need node, "bash" bash, and
// e.g. "sh" or "perl" the program of that name; a missing program is
// ErrLanguage. metadata.language is the language as given and
// metadata.runtime the same string (the reference's choice), and the
// environment hash stays the Python interpreter's, so receipts carry the
// reference's hashes for every language.
//
// # Spec checks
//
// With ParseOptions.SpecChecks, a tier-1 request's "checks" list in the
// VRF specification's syntax (json_parse, json_path:$.a.b exists,
// json_path:$.a equals <json>, length <= N, regex:<pattern>) is evaluated
// natively after the constraints; checks.go has the grammar. Off by
// default, since the reference ignores that list.
//
// This package owns turning requests into results and receipts. It must
// not touch the ledger, its keys or files, the network or the host's file
// system: code runs only through the Runner it is given, and signing keys
// are passed in by the caller.
package vrfrun
