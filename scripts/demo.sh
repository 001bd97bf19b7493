#!/usr/bin/env bash
# make demo: the main job on an embedded default. A fresh ledger in a
# temporary directory, the sample documents from testdata/, and a tour of
# what the ledger does with them.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-bin/ledger}
work=$(mktemp -d "${TMPDIR:-/tmp}/ledger-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
export LEDGER_DIR="$work/ledger"

say() { printf '\n== %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
# Commands that refuse something on purpose exit non-zero; show the code.
refuse() { printf '$ %s\n' "$*"; set +e; "$@"; local code=$?; set -e; printf '(exit code %d)\n' "$code"; }

key=testdata/vectors/rvww/hmac_key.txt
chain=(testdata/vrf/chain_3.json testdata/vrf/chain_1.json testdata/vrf/chain_2.json)
docs=(
  testdata/vectors/vrf/01_tier0_pass.json
  testdata/vrf/ref_partial.json
  testdata/vrf/ref_tier1_null_environment.json
  testdata/vectors/avir/01_verified_L2.spec.json
  testdata/vectors/avir/01_verified_L2.attestation.json
  testdata/avir/partial_signed.attestation.json
  testdata/vectors/rvww/01_solved_autonomous_signed.rvww
  testdata/rvww/valid_solved_restricted_signed.rvww
  testdata/rvww/valid_failed_approved_signed.rvww
  testdata/rvww/policy_denied_tool_restricted.rvww
)

say "Create a ledger (Pebble store, Ed25519 log key, checkpoint origin)"
run "$bin" init --origin demo.ledger.local

say "Inspect a reference VRF receipt and a tampered copy (nothing is written)"
refuse "$bin" inspect testdata/vectors/vrf/01_tier0_pass.json testdata/vectors/vrf/90_tampered_verdict.json

say "Append a receipt chain given out of order: the ledger appends it in chain order"
run "$bin" append "${chain[@]}"

say "Append receipts, AVIR specs and attestations, and HMAC-signed witness bundles"
run "$bin" append --hmac-key-file "$key" "${docs[@]}"

say "Tampered documents are rejected and leave the ledger unchanged"
refuse "$bin" append --hmac-key-file "$key" testdata/vectors/avir/93_bad_signature.attestation.json testdata/vectors/rvww/90_tampered_spec_byte.rvww

say "The log"
run "$bin" log

say "A receipt chain, oldest first"
run "$bin" chain 0662677b-d7e8-4717-b1b3-3fcbbc4f046d

say "A replay is refused (exit code 5)"
refuse "$bin" append testdata/vrf/chain_2.json

say "The latest signed checkpoint (C2SP tlog-checkpoint)"
run "$bin" checkpoint

say "Prove that the reference receipt is in the ledger, then check the proof offline"
run "$bin" prove 4317e99d-6ddf-45f5-8d9e-f7d2ec99d867 -o "$work/receipt.tlog-proof"
run "$bin" verify-proof "$work/receipt.tlog-proof" --key "$LEDGER_DIR/log.pub" --doc testdata/vectors/vrf/01_tier0_pass.json

say "Prove the ledger only grew between size 3 and now"
size=$("$bin" checkpoint | sed -n 2p)
run "$bin" prove --consistency 3 "$size" -o "$work/grew.proof"
run "$bin" verify-proof "$work/grew.proof" --key "$LEDGER_DIR/log.pub"
