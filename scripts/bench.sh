#!/usr/bin/env bash
# Runs the benchmarks `make bench` reports: the codec micro-benchmarks, then
# ledger-bench (cmd/ledger-bench), which measures verified durable ingest,
# replay lookups and inclusion proofs at 1M events, and bytes on disk, each
# figure beside a limit measured in the same run. Both outputs are printed;
# every figure of ledger-bench is also written to bench-results.json at the
# repository root.
#
# Usage: scripts/bench.sh BIN [ledger-bench flags...]
#   BIN    the ledger-bench binary (make bench passes bin/ledger-bench)
#   flags  passed to ledger-bench, for example --quick or --events 200000
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: scripts/bench.sh BIN [ledger-bench flags...]" >&2
  exit 2
fi
bin=$1
shift
case $bin in
  /*) ;;
  *) bin=$PWD/$bin ;;
esac
cd "$(dirname "$0")/.."
go=${GO:-go}

echo "== codec micro-benchmarks: $go test -run '^\$' -bench . -benchmem ./codec/..."
"$go" test -run '^$' -bench . -benchmem ./codec/...

echo
echo "== ledger-bench --json bench-results.json $*"
"$bin" --json bench-results.json "$@"
