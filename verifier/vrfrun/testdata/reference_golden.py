#!/usr/bin/python3
"""Run the VRF reference verifier (ClawBizarre's verify_server.py) over the
request bodies under requests/ and write what it answered under golden/.

    /usr/bin/python3 reference_golden.py --ref /path/to/clawbizarre/prototype

Each request is a file requests/<endpoint>/<name>.json holding the raw HTTP
body (it may be malformed on purpose); <endpoint> is "verify" (POST /verify)
or "schema" (POST /verify/schema). The driver does what the reference's HTTP
handler does (an empty body is {}, /verify/schema sets tier 1, ValueError is
a 400, any other exception a 500) but calls VerificationEngine.verify
directly, without signing. For each request it writes golden/<endpoint>/<name>.json
with the HTTP status and, for a receipt, the verdict, counts, per-test names
(as str()), statuses and error texts, the four hashes and the metadata
fields that do not vary between runs; golden/ENV.json records the Python
that ran the reference (its sys.version feeds environment_hash).

Run it with /usr/bin/python3 and PATH=/usr/bin:/bin (regen-golden.sh does),
so that the reference's interpreter and the programs it starts (python3,
node, bash) are the system ones a sandbox sees.
"""

import argparse
import json
import os
import re
import sys

# The reference's temporary directories (tempfile.mkdtemp: "tmp" + 8
# characters) appear in error texts; written as a placeholder of the same
# length, so that goldens do not change from one run to the next and the
# reference's 500-character cuts stay where they were.
TMPDIR = re.compile(r"/tmp/tmp[a-z0-9_]{8}/")


def stable(s):
    return TMPDIR.sub("/tmp/tmpXXXXXXXX/", s) if isinstance(s, str) else s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", required=True, help="directory holding verify_server.py")
    ap.add_argument("--dir", default=os.path.dirname(os.path.abspath(__file__)),
                    help="testdata directory (requests/ in, golden/ out)")
    ap.add_argument("names", nargs="*", help="only these requests (endpoint/name)")
    args = ap.parse_args()

    sys.path.insert(0, os.path.abspath(args.ref))
    import verify_server as vs  # noqa: E402  (the reference)

    engine = vs.VerificationEngine(identity=None)
    reqdir = os.path.join(args.dir, "requests")
    outdir = os.path.join(args.dir, "golden")
    with open(os.path.join(outdir, "ENV.json"), "w") as f:
        json.dump({"python_version": sys.version,
                   "environment": "python:" + sys.version,
                   "runtime": "python%d.%d" % sys.version_info[:2]}, f, indent=2)
        f.write("\n")

    for endpoint in ("verify", "schema"):
        os.makedirs(os.path.join(outdir, endpoint), exist_ok=True)
        for fn in sorted(os.listdir(os.path.join(reqdir, endpoint))):
            if not fn.endswith(".json"):
                continue
            name = fn[:-len(".json")]
            if args.names and endpoint + "/" + name not in args.names:
                continue
            with open(os.path.join(reqdir, endpoint, fn), "rb") as f:
                raw = f.read()
            out = answer(vs, engine, endpoint, raw)
            with open(os.path.join(outdir, endpoint, fn), "w") as f:
                json.dump(out, f, indent=2, ensure_ascii=True)
                f.write("\n")
            print(endpoint + "/" + name, out["status"], out.get("verdict", out.get("error", ""))[:70])


def answer(vs, engine, endpoint, raw):
    """What the reference's do_POST answers for this body."""
    try:
        body = json.loads(raw) if len(raw) else {}
        if endpoint == "schema":
            body["tier"] = 1
        receipt = engine.verify(body)
    except ValueError as e:
        return {"status": 400, "error": str(e)}
    except BaseException as e:  # the reference answers 500 (or dies, for SystemExit)
        return {"status": 500, "error": type(e).__name__ + ": " + str(e)}
    d = receipt.to_dict()
    details = []
    for td in d["results"]["details"]:
        item = {"name": str(td.get("name")), "status": td["status"]}
        if "error" in td:
            item["error"] = stable(td["error"])
        if "output" in td:
            item["output"] = stable(td["output"])
        details.append(item)
    md = d["metadata"]
    out = {
        "status": 200,
        "tier": d["tier"],
        "verdict": d["verdict"],
        "total": d["results"]["total"],
        "passed": d["results"]["passed"],
        "failed": d["results"]["failed"],
        "errors": d["results"]["errors"],
        "details": details,
        "hashes": {k: d["hashes"][k] for k in ("input_hash", "output_hash", "suite_hash", "environment_hash")},
        "metadata": {k: md[k] for k in ("verifier_version", "sandboxed", "language", "runtime") if k in md},
    }
    for k in ("task_id", "task_type"):
        if k in d:
            out[k] = str(d[k])
    return out


if __name__ == "__main__":
    main()
