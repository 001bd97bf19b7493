#!/bin/sh
# make-fixtures.sh regenerates proof/testdata/fixtures with the real ledger
# binary: a ledger with a fixed log key, the sample vectors appended in two
# batches (the first four documents, then a rollback record), an inclusion
# proof of event 0 (the VRF receipt), consistency proofs 4 -> 5 (with the
# old checkpoint the ledger kept at size 4) and 2 -> 5 (without one), the
# verifier key (log.pub) and the proven document. Run it from anywhere in
# the repository; it needs only the Go toolchain. Appended-at times are
# taken from the clock, so every run writes different (equally valid)
# proofs.
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/proof/testdata/fixtures
vec=$root/testdata/vectors
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$root" && go build -o "$tmp/ledger" ./cmd/ledger)

# A fixed test seed (bytes 0x00..0x1f), so that log.pub stays the same.
echo 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f >"$tmp/seed.hex"
"$tmp/ledger" init --dir "$tmp/l" --origin example.org/ledger --key "$tmp/seed.hex" >/dev/null

"$tmp/ledger" append --dir "$tmp/l" --hmac-key-file "$vec/rvww/hmac_key.txt" \
	"$vec/vrf/01_tier0_pass.json" \
	"$vec/avir/01_verified_L2.spec.json" \
	"$vec/avir/01_verified_L2.attestation.json" \
	"$vec/rvww/01_solved_autonomous_signed.rvww" >/dev/null

# A rollback of the bundle's task (unsigned), in a second batch.
cat >"$tmp/rollback.json" <<'JSON'
{"kind": "rollback", "task_id": "73656564-7265-662d-7461-736b2d303031", "restored_clean": true, "at": "2026-11-21T10:00:00.5Z", "reason": "tests failed after the change"}
JSON
"$tmp/ledger" append --dir "$tmp/l" --allow-unsigned "$tmp/rollback.json" >/dev/null

mkdir -p "$out"
cp "$tmp/l/log.pub" "$out/log.pub"
cp "$vec/vrf/01_tier0_pass.json" "$out/document.json"
"$tmp/ledger" prove --dir "$tmp/l" -o "$out/inclusion-0.tlog-proof" 0
"$tmp/ledger" prove --dir "$tmp/l" -o "$out/consistency-4-5.proof" --consistency 4 5
"$tmp/ledger" prove --dir "$tmp/l" -o "$out/consistency-2-5.proof" --consistency 2 5

# The ledger's own verifier must accept what it wrote.
for p in "$out/inclusion-0.tlog-proof" "$out/consistency-4-5.proof" "$out/consistency-2-5.proof"; do
	"$tmp/ledger" verify-proof --key "$out/log.pub" "$p" >/dev/null
done
echo "wrote $out"
