#!/usr/bin/env bash
# Rebuilds the legacy ledgers under testdata/legacy/ with the binaries of the
# commits that wrote those formats (format 1: 339041c, format 2: e1a06ba),
# for the upgrade tests of package ledger/admit. Not run by the tests:
#   testdata/legacy/make.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make_ledger() { # rev format
  local rev=$1 fmt=$2
  git worktree add -q --detach "$work/src$fmt" "$rev"
  (cd "$work/src$fmt" && go build -o "$work/ledger$fmt" ./cmd/ledger)
  git worktree remove --force "$work/src$fmt"
  local bin=$work/ledger$fmt dir=$work/format$fmt
  "$bin" init --dir "$dir" --origin "legacy.format$fmt" --key testdata/legacy/log.key >/dev/null
  "$bin" key add-hmac --dir "$dir" ci testdata/vectors/rvww/hmac_key.txt >/dev/null
  "$bin" policy add --dir "$dir" testdata/rvww/policies/custom_read_grep.json >/dev/null
  "$bin" append --dir "$dir" testdata/vrf/chain_3.json testdata/vrf/chain_1.json testdata/vrf/chain_2.json >/dev/null
  "$bin" append --dir "$dir" testdata/vectors/vrf/01_tier0_pass.json testdata/vectors/avir/01_verified_L2.spec.json \
    testdata/vectors/avir/01_verified_L2.attestation.json testdata/vectors/rvww/01_solved_autonomous_signed.rvww >/dev/null
  "$bin" append --dir "$dir" --hmac-key-file testdata/demo/hmac_key.bin testdata/demo/rvww/$(ls testdata/demo/rvww | head -1) >/dev/null
  "$bin" checkpoint --dir "$dir" > "$root/testdata/legacy/format$fmt.checkpoint"
  tar -C "$dir" -czf "$root/testdata/legacy/format$fmt.tar.gz" .
}
make_ledger 339041c 1
make_ledger e1a06ba 2
