#!/bin/sh
# Regenerate golden/ from the reference verifier. Needs the reference's
# prototype directory (VRF_REFERENCE, default /work/ref/clawbizarre/prototype)
# and /usr/bin/python3. `go test ./verifier/vrfrun -run TestReferenceGolden -update`
# runs this script.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
ref=${VRF_REFERENCE:-/work/ref/clawbizarre/prototype}
cd "$here"
if [ $# -eq 0 ]; then rm -f golden/verify/*.json golden/schema/*.json; fi
exec env -i PATH=/usr/bin:/bin LANG=C.UTF-8 HOME=/tmp PYTHONDONTWRITEBYTECODE=1 \
	/usr/bin/python3 "$here/reference_golden.py" --ref "$ref" --dir "$here" "$@"
