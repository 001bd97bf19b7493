package keys

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrKey is wrapped by every error about unreadable key material.
var ErrKey = errors.New("invalid key")

// spkiPrefix is the DER SubjectPublicKeyInfo header of an Ed25519 key:
// SEQUENCE { SEQUENCE { OID 1.3.101.112 } BIT STRING (33 bytes) }.
var spkiPrefix = [12]byte{0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00}

// ParsePrivateKey reads an Ed25519 private key from a PKCS#8 PEM block
// ("PRIVATE KEY") or from the 32-byte seed written as 64 hex digits
// (surrounding whitespace ignored).
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	trimmed := bytes.TrimSpace(data)
	if bytes.HasPrefix(trimmed, []byte("-----BEGIN")) {
		block, rest := pem.Decode(trimmed)
		if block == nil {
			return nil, fmt.Errorf("%w: unreadable PEM block", ErrKey)
		}
		if len(bytes.TrimSpace(rest)) != 0 {
			return nil, fmt.Errorf("%w: data after the PEM block", ErrKey)
		}
		if block.Type != "PRIVATE KEY" {
			return nil, fmt.Errorf("%w: PEM block is %q, want \"PRIVATE KEY\" (PKCS#8)", ErrKey, block.Type)
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: PKCS#8: %v", ErrKey, err)
		}
		priv, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("%w: PKCS#8 key is %T, want Ed25519", ErrKey, k)
		}
		return priv, nil
	}
	seed, err := hex.DecodeString(string(trimmed))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%w: want a PKCS#8 PEM block or a %d-byte seed in hex (%d hex digits)", ErrKey, ed25519.SeedSize, 2*ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// MarshalPrivateKeyPEM writes priv as a PKCS#8 PEM block.
func MarshalPrivateKeyPEM(priv ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("marshal PKCS#8: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// MarshalSeedHex writes priv's 32-byte seed as 64 lowercase hex digits and a newline.
func MarshalSeedHex(priv ed25519.PrivateKey) []byte {
	return []byte(hex.EncodeToString(priv.Seed()) + "\n")
}

// ParsePublicKey reads an Ed25519 public key written as "ed25519:<hex>",
// 64 hex digits, standard base64 of the 32 raw bytes, standard base64 of a
// DER SubjectPublicKeyInfo, or a PEM "PUBLIC KEY" block.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "-----BEGIN"):
		block, rest := pem.Decode([]byte(s))
		if block == nil || block.Type != "PUBLIC KEY" || len(bytes.TrimSpace(rest)) != 0 {
			return nil, fmt.Errorf("%w: want one PEM \"PUBLIC KEY\" block", ErrKey)
		}
		return fromSPKI(block.Bytes)
	case strings.HasPrefix(s, "ed25519:"):
		b, err := hex.DecodeString(s[len("ed25519:"):])
		if err != nil || len(b) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("%w: \"ed25519:\" must be followed by %d hex digits", ErrKey, 2*ed25519.PublicKeySize)
		}
		return ed25519.PublicKey(b), nil
	case len(s) == 2*ed25519.PublicKeySize && isHex(s):
		b, _ := hex.DecodeString(s)
		return ed25519.PublicKey(b), nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: not ed25519:<hex>, hex, base64 or PEM", ErrKey)
	}
	switch len(b) {
	case ed25519.PublicKeySize:
		return ed25519.PublicKey(b), nil
	case len(spkiPrefix) + ed25519.PublicKeySize:
		return fromSPKI(b)
	}
	return nil, fmt.Errorf("%w: base64 decodes to %d bytes, want %d (raw) or %d (DER SubjectPublicKeyInfo)",
		ErrKey, len(b), ed25519.PublicKeySize, len(spkiPrefix)+ed25519.PublicKeySize)
}

func fromSPKI(der []byte) (ed25519.PublicKey, error) {
	if len(der) != len(spkiPrefix)+ed25519.PublicKeySize || !bytes.Equal(der[:len(spkiPrefix)], spkiPrefix[:]) {
		return nil, fmt.Errorf("%w: not an Ed25519 SubjectPublicKeyInfo", ErrKey)
	}
	return ed25519.PublicKey(bytes.Clone(der[len(spkiPrefix):])), nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// SignerID returns the reference spelling of a public key: "ed25519:" and
// 64 lowercase hex digits.
func SignerID(pub ed25519.PublicKey) string { return "ed25519:" + hex.EncodeToString(pub) }

// MarshalPublicKeyPEM writes pub as a PEM "PUBLIC KEY" (SubjectPublicKeyInfo) block.
func MarshalPublicKeyPEM(pub ed25519.PublicKey) []byte {
	der := append(spkiPrefix[:len(spkiPrefix):len(spkiPrefix)], pub...)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// SPKIBase64 returns pub as standard base64 of its DER SubjectPublicKeyInfo,
// the spelling the VRF spec text's example uses.
func SPKIBase64(pub ed25519.PublicKey) string {
	return base64.StdEncoding.EncodeToString(append(spkiPrefix[:len(spkiPrefix):len(spkiPrefix)], pub...))
}

// GenerateEd25519 returns a new random key pair.
func GenerateEd25519() (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate Ed25519 key: %w", err)
	}
	return priv, nil
}

// LoadPrivateKey reads a private key file (see ParsePrivateKey).
func LoadPrivateKey(path string) (ed25519.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	priv, err := ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return priv, nil
}

// WritePrivateKeyFile writes priv as PKCS#8 PEM to path with 0600
// permissions, refusing to overwrite an existing file.
func WritePrivateKeyFile(path string, priv ed25519.PrivateKey) error {
	data, err := MarshalPrivateKeyPEM(priv)
	if err != nil {
		return err
	}
	return writeSecret(path, data)
}

// HMACKey is a named raw HMAC key.
type HMACKey struct {
	// Name identifies the key in reports: its file's base name, or the
	// name it was registered under.
	Name string
	// Secret is the raw key, byte for byte.
	Secret []byte
}

// MinHMACKeySize is the shortest HMAC key file accepted.
const MinHMACKeySize = 1

// MaxHMACKeySize bounds an HMAC key file (keys longer than the SHA-256
// block are hashed by HMAC anyway; this only stops a wrong file).
const MaxHMACKeySize = 4096

// LoadHMACKey reads a raw HMAC key file: every byte of the file is the key,
// as the reference uses it. A file that ends in a newline most likely got
// it from an editor; Candidates offers both readings.
func LoadHMACKey(path string) (HMACKey, error) {
	st, err := os.Stat(path)
	if err != nil {
		return HMACKey{}, err
	}
	if st.Size() > MaxHMACKeySize {
		return HMACKey{}, fmt.Errorf("%s: %w: HMAC key file is %d bytes, more than %d", path, ErrKey, st.Size(), MaxHMACKeySize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return HMACKey{}, err
	}
	if len(data) < MinHMACKeySize {
		return HMACKey{}, fmt.Errorf("%s: %w: empty HMAC key file", path, ErrKey)
	}
	return HMACKey{Name: filepath.Base(path), Secret: data}, nil
}

// Candidates returns the keys to try for k: k itself and, when its file
// ends in "\n" or "\r\n", the same bytes without that line ending (named
// "<name> (without trailing newline)").
func (k HMACKey) Candidates() []HMACKey {
	out := []HMACKey{k}
	trimmed := bytes.TrimSuffix(bytes.TrimSuffix(k.Secret, []byte("\n")), []byte("\r"))
	if len(trimmed) != len(k.Secret) && len(trimmed) > 0 {
		out = append(out, HMACKey{Name: k.Name + " (without trailing newline)", Secret: trimmed})
	}
	return out
}

// GenerateHMACKey returns n random bytes.
func GenerateHMACKey(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("generate HMAC key: %w", err)
	}
	return b, nil
}

// WriteHMACKeyFile writes secret, raw, to path with 0600 permissions,
// refusing to overwrite an existing file.
func WriteHMACKeyFile(path string, secret []byte) error { return writeSecret(path, secret) }

func writeSecret(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	// After a failed write or sync the file is useless either way: that
	// error is the one to report.
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
