#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a fixed time each.
# Usage: scripts/fuzz-all.sh [FUZZTIME]   (default 30s)
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-30s}
status=0
while IFS= read -r file; do
  dir=$(dirname "$file")
  for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)' "$file" | awk '{print $2}'); do
    echo "== $dir $target ($fuzztime)"
    if ! go test "./$dir" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime"; then
      status=1
    fi
  done
done < <(grep -rl --include='*_test.go' -E '^func Fuzz' . | sort)
exit $status
