#!/bin/bash
# Runs a benchmark binary until it has printed the last ingest figure
# (ingest.avir-attestation.appenders=64), then stops it: for comparing the
# ingest figures of two builds without the rest of the run.
#
#   scripts/bench-ingest-only.sh OUT BINARY ARGS...
#
# Example (docs/BENCHMARKS.md, section 6):
#   scripts/bench-ingest-only.sh new.txt bin/ledger-bench --events 2000 --bundles 1000
set -u
if [ $# -lt 2 ]; then
	echo "usage: $0 OUT BINARY [ARGS...]" >&2
	exit 2
fi
out=$1
shift
"$@" >"$out" 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
	if grep -q 'name="ingest.avir-attestation.appenders=64" ' "$out"; then
		kill "$pid"
		break
	fi
	sleep 1
done
wait "$pid" 2>/dev/null
exit 0
