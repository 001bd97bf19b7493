"""PyYAML safe_load as the reference loads YAML specifications, for
cross-checking the Go YAML 1.1 conversion.

stdin: a JSON list of YAML texts. stdout: a JSON list of {"json": canonical
JSON of safe_load's result} or {"error": exception type}. Dates are written
with str(), which is what the Go side keeps for plain dates.
"""
import json
import sys

import yaml


def load(text):
    try:
        value = yaml.safe_load(text)
        return {'json': json.dumps(value, sort_keys=True, separators=(',', ':'), default=str)}
    except Exception as e:  # noqa: BLE001 - any failure is "the reference cannot read it"
        return {'error': type(e).__name__}


json.dump([load(t) for t in json.load(sys.stdin)], sys.stdout)
