package vrfrun

import "strings"

// The programs vrfrun runs in the sandbox. Each keeps the line layout of
// the reference's own script, so that tracebacks in error messages name
// the same lines, and writes its verdicts to file descriptor 3 (the
// sandbox's report pipe) instead of printing them: what the submitted code
// prints cannot change a verdict.

// pythonHarness runs one FormPython test; it is the reference's
// _execute_python_tests script, given as `python3 -c`, reading the code
// and the two expressions from test.json instead of from repr() literals.
// Line 3 is the exec of the code, as in the reference, so an exception at
// import gives the same traceback ("File "<string>", line 3, in
// <module>"). The verdict is a JSON list [status, message] on fd 3:
// status "pass", "fail" (message the reference's "FAIL: got ..., expected
// ...") or "error" (message "ERROR: <exception>"), the message cut at
// test.json's "max" characters so that the report always fits its pipe.
const pythonHarness = `import json, os, sys; _vrf_w = os.write; _vrf_dumps = json.dumps; _vrf_t = json.loads(open("test.json", encoding="utf-8").read()); _vrf_m = _vrf_t["max"]
_ns = {}
exec(compile(_vrf_t["code"], '<user_code>', 'exec'), _ns)
try:
    result = eval(_vrf_t["input"], _ns)
    expected = eval(_vrf_t["expected"], _ns)
    if result == expected:
        _vrf_r = ["pass", ""]
    else:
        _vrf_r = ["fail", f'FAIL: got {repr(result)}, expected {repr(expected)}'.strip()]
except Exception as e:
    _vrf_r = ["error", f'ERROR: {e}'.strip()]
_vrf_w(3, _vrf_dumps([_vrf_r[0], _vrf_r[1][:_vrf_m]]).encode("ascii"))
`

// constraintHarness evaluates a tier-1 request's expr constraints, in
// order, in one process, exactly as the reference's _verify_schema does:
// eval(expr, {"output": output, "len": len, "sum": sum, "min": min, "max":
// max}). That globals dict has no __builtins__, so Python inserts the real
// builtins module: every builtin (isinstance, sorted, all, str,
// __import__, ...) is available, not only the four named. All
// constraints share one `output` object, so a constraint that mutates it
// changes what the next ones see, as in the reference. After each
// constraint a line [status, message] goes to fd 3; at the end a line
// ["dump", json.dumps(output, sort_keys=True, default=str)], the text the
// reference hashes (after the constraints ran). A BaseException
// (SystemExit from exit(), KeyboardInterrupt), which makes the reference
// fail the whole request, is reported as that constraint's error.
const constraintHarness = `import json, os, sys; _vrf_w = os.write; _vrf_dumps = json.dumps; _vrf_t = json.loads(open("constraints.json", encoding="utf-8").read()); _vrf_m = _vrf_t["max"]
output = _vrf_t["output"]
for _vrf_e in _vrf_t["exprs"]:
    try:
        result = eval(_vrf_e, {"output": output, "len": len, "sum": sum, "min": min, "max": max})
        if result:
            _vrf_r = ["pass", ""]
        else:
            _vrf_r = ["fail", ""]
    except Exception as e:
        try:
            _vrf_r = ["error", str(e)]
        except BaseException as e2:
            _vrf_r = ["error", "exception whose str() raised " + type(e2).__name__]
    except BaseException as e:
        _vrf_r = ["error", type(e).__name__ + (": " + str(e) if str(e) else "")]
    _vrf_w(3, (_vrf_dumps([_vrf_r[0], _vrf_r[1][:_vrf_m]]) + "\n").encode("ascii"))
try:
    _vrf_w(3, (_vrf_dumps(["dump", _vrf_dumps(output, sort_keys=True, default=str)]) + "\n").encode("ascii"))
except BaseException:
    pass
`

// probeScript prints the interpreter's sys.version and major.minor: the
// reference's environment hash is over "python:" + sys.version and its
// runtime is "python<major>.<minor>".
const probeScript = `import json, os, sys; os.write(3, json.dumps([sys.version, "%d.%d" % sys.version_info[:2]]).encode("ascii"))`

// wrapper is one of the reference docker_runner's expression wrappers,
// split around its two placeholders: the script is
// head + tests_json + mid + escape(code) + tail.
type wrapper struct {
	file            string
	head, mid, tail string
	escape          func(string) string
}

// pythonWrapper returns docker_runner's python wrapper with its first
// (empty) line opening the report pipe and its last line printing there.
func pythonWrapper() *wrapper {
	return &wrapper{
		file: "runner.py",
		head: `_vrf_report = open(3, "w", encoding="utf-8", closefd=False)
import json, sys, traceback
tests = `,
		mid: `
code = """`,
		tail: `"""
exec(code, globals())

results = []
for t in tests:
    try:
        result = eval(t["expression"])
        expected = t.get("expected")
        if expected is not None:
            status = "pass" if str(result) == str(expected) else "fail"
        else:
            status = "pass"  # expression didn't raise
        results.append({"name": t["name"], "status": status, "expected": str(expected), "actual": str(result)})
    except Exception as e:
        results.append({"name": t["name"], "status": "error", "message": str(e)})
print(json.dumps(results), file=_vrf_report, flush=True)
`,
		escape: func(code string) string {
			return strings.ReplaceAll(strings.ReplaceAll(code, `\`, `\\`), `"""`, `\"\"\"`)
		},
	}
}

// jsWrapper returns docker_runner's javascript wrapper, adapted the same
// way.
func jsWrapper() *wrapper {
	return &wrapper{
		file: "runner.js",
		head: `const __vrf_fs = require("fs");
const tests = `,
		mid: `;
const code = ` + "`",
		tail: "`" + `;
eval(code);

const results = [];
for (const t of tests) {
    try {
        const result = eval(t.expression);
        const expected = t.expected;
        const status = (expected !== undefined && String(result) === String(expected)) ? "pass" : 
                       (expected === undefined) ? "pass" : "fail";
        results.push({name: t.name, status, expected: String(expected), actual: String(result)});
    } catch (e) {
        results.push({name: t.name, status: "error", message: e.message});
    }
}
__vrf_fs.writeSync(3, JSON.stringify(results) + "\n");
`,
		escape: func(code string) string {
			code = strings.ReplaceAll(code, `\`, `\\`)
			code = strings.ReplaceAll(code, "`", "\\`")
			return strings.ReplaceAll(code, "${", `\${`)
		},
	}
}

// script returns the wrapper filled in.
func (w *wrapper) script(testsJSON, code string) string {
	return w.head + testsJSON + w.mid + w.escape(code) + w.tail
}
