// Package keys reads and writes the key material the ledger handles:
// Ed25519 private keys (PKCS#8 PEM, or the raw 32-byte seed in hex),
// Ed25519 public keys in every spelling the document formats use
// ("ed25519:<hex>", hex, base64 of the raw key, base64 of a DER
// SubjectPublicKeyInfo, PEM), and raw HMAC key files for RVWW bundles.
//
// It owns key encodings only. It does not sign or verify documents (the
// codecs do) and it touches the disk only through the file helpers, which
// write private material with 0600 permissions.
package keys
