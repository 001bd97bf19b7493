#!/usr/bin/env python3
"""Reference oracle for canonjson tests.

Reads a JSON array of JSON texts on stdin and prints a JSON array with, for
each text, Python's canonical encoding (json.dumps(json.loads(text),
sort_keys=True, separators=(",", ":"))) or null when Python rejects it.
Used by TestCanonicalMatchesPython when python3 is on PATH.
"""
import json
import sys

out = []
for text in json.load(sys.stdin):
    try:
        out.append(json.dumps(json.loads(text), sort_keys=True, separators=(",", ":")))
    except Exception:
        out.append(None)
json.dump(out, sys.stdout)
