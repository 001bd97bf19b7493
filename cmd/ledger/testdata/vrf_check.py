#!/usr/bin/env python3
"""An independent check of VRF receipts signed in the reference form.

Written from the specification texts alone (../shared/specs/INTEROP.md and
vrf-receipt-format-v1.md), sharing no code with the ledger:

- content_hash is the lowercase hex SHA-256 of Python's
  json.dumps(receipt without "signature", sort_keys=True,
  separators=(",", ":")) with the default ensure_ascii, as UTF-8;
- signature.signature is the hex Ed25519 signature of the ASCII bytes of
  that 64-character hex string;
- signer_id is "ed25519:" + the hex of the raw 32-byte public key;
- algorithm is exactly "ed25519".

Usage: vrf_check.py RECEIPT.json...  Prints "ok FILE" or "BAD FILE: why"
for each and exits 1 when any is bad, 2 when the cryptography module is
missing.
"""
import hashlib
import json
import sys

try:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
except ImportError:
    print("the cryptography module is not installed", file=sys.stderr)
    sys.exit(2)


def check(path):
    with open(path, "rb") as f:
        receipt = json.loads(f.read().decode("utf-8"))
    sig = receipt.get("signature")
    if not isinstance(sig, dict):
        return "no signature object"
    if sig.get("algorithm") != "ed25519":
        return "algorithm %r" % (sig.get("algorithm"),)
    signer = sig.get("signer_id", "")
    if not signer.startswith("ed25519:") or len(signer) != 8 + 64:
        return "signer_id %r is not ed25519:<64 hex>" % (signer,)
    body = {k: v for k, v in receipt.items() if k != "signature"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    if sig.get("content_hash") != digest:
        return "content_hash %s, recomputed %s" % (sig.get("content_hash"), digest)
    key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(signer[8:]))
    try:
        key.verify(bytes.fromhex(sig.get("signature", "")), digest.encode("ascii"))
    except (InvalidSignature, ValueError) as e:
        return "signature does not verify (%s)" % (type(e).__name__,)
    return None


def main(paths):
    bad = 0
    for p in paths:
        why = check(p)
        if why is None:
            print("ok " + p)
        else:
            bad += 1
            print("BAD %s: %s" % (p, why))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
