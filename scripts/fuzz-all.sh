#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a fixed time each (36 targets
# at 30s: about 18 minutes, plus a build per target). The tree is left as it
# was: the inputs the fuzzer finds interesting stay in the Go cache. With
# FUZZ_KEEP=1 (make fuzz-corpus) they are copied into the package's
# testdata/fuzz/<Target>/, where plain `go test` replays them, for review
# and commit. An input that makes a target fail is written to
# testdata/fuzz/<Target>/ by go test itself, either way: it reproduces the
# failure.
# Usage: [FUZZ_KEEP=1] scripts/fuzz-all.sh [FUZZTIME] [PARALLEL] [PACKAGE-REGEX]
#   (default 30s, all cores, every package)
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-30s}
parallel=${2:-0}
only=${3:-.}
module=$(go list -m)
cache=$(go env GOCACHE)/fuzz
status=0
while IFS= read -r file; do
  dir=$(dirname "$file")
  [[ "$dir" =~ $only ]] || continue
  pkg="$module/${dir#./}"
  for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)' "$file" | awk '{print $2}'); do
    echo "== $dir $target ($fuzztime)"
    args=(-run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime")
    [ "$parallel" != 0 ] && args+=(-parallel "$parallel")
    if ! go test "./$dir" "${args[@]}"; then
      status=1
    fi
    src="$cache/$pkg/$target"
    if [ "${FUZZ_KEEP:-0}" = 1 ] && [ -d "$src" ]; then
      dst="$dir/testdata/fuzz/$target"
      mkdir -p "$dst"
      # Keep the corpus reviewable: the 400 smallest inputs.
      mapfile -t inputs < <(ls -S -r "$src" | head -n 400)
      for f in "${inputs[@]}"; do cp "$src/$f" "$dst/$f"; done
      echo "   corpus: $(ls "$dst" | wc -l) inputs in $dst"
    fi
  done
done < <(grep -rl --include='*_test.go' -E '^func Fuzz' . | sort)
exit $status
