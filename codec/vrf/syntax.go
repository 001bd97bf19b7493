package vrf

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// checkUUIDv4 checks the 8-4-4-4-12 hex form of a version 4, RFC 4122
// variant UUID. Hex digits may be upper or lower case; upper reports
// whether any was upper case. reason is "" when s is valid.
func checkUUIDv4(s string) (upper bool, reason string) {
	if len(s) != 36 {
		return false, fmt.Sprintf("want a UUID (8-4-4-4-12 hex digits), got %q", clip(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false, fmt.Sprintf("want a UUID (8-4-4-4-12 hex digits), got %q", clip(s))
			}
			continue
		}
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		case c >= 'A' && c <= 'F':
			upper = true
		default:
			return false, fmt.Sprintf("want a UUID (8-4-4-4-12 hex digits), got %q", clip(s))
		}
	}
	if s[14] != '4' {
		return upper, fmt.Sprintf("want a version 4 UUID, got version %c", s[14])
	}
	switch s[19] {
	case '8', '9', 'a', 'b', 'A', 'B':
	default:
		return upper, fmt.Sprintf("want the RFC 4122 variant (8, 9, a or b at position 20), got %c", s[19])
	}
	return upper, ""
}

// parseVerifiedAt reads an ISO-8601 UTC timestamp of the exact shape
// YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|+00:00) that names a real calendar time.
// reason is "" when s is valid.
func parseVerifiedAt(s string) (t time.Time, reason string) {
	const shape = "want ISO-8601 UTC YYYY-MM-DDTHH:MM:SS[.fraction](Z|+00:00)"
	if len(s) < 20 {
		return time.Time{}, fmt.Sprintf("%s, got %q", shape, clip(s))
	}
	num := func(from, to int) (int, bool) {
		n := 0
		for i := from; i < to; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 7)
	day, ok3 := num(8, 10)
	hour, ok4 := num(11, 13)
	minute, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, fmt.Sprintf("%s, got %q", shape, clip(s))
	}
	rest := s[19:]
	nsec := 0
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		digits := n - 1
		if digits < 1 || digits > 9 {
			return time.Time{}, fmt.Sprintf("want 1 to 9 fraction digits, got %d in %q", digits, clip(s))
		}
		for i := 1; i < n; i++ {
			nsec = nsec*10 + int(rest[i]-'0')
		}
		for i := digits; i < 9; i++ {
			nsec *= 10
		}
		rest = rest[n:]
	}
	switch rest {
	case "Z", "+00:00":
	case "":
		return time.Time{}, fmt.Sprintf("want a UTC designator Z or +00:00 at the end, got none in %q", clip(s))
	default:
		if len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':' {
			return time.Time{}, fmt.Sprintf("want UTC (Z or +00:00), got offset %s", rest)
		}
		return time.Time{}, fmt.Sprintf("%s, got %q", shape, clip(s))
	}
	if year < 1 || month < 1 || month > 12 || hour > 23 || minute > 59 || sec > 59 ||
		day < 1 || day > daysIn(year, month) {
		return time.Time{}, fmt.Sprintf("not a real calendar time: %q", s[:19])
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), ""
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// formatVerifiedAt writes t the way Python's
// datetime.now(timezone.utc).isoformat() does: microsecond precision,
// the fraction only when it is non-zero, and "+00:00".
func formatVerifiedAt(t time.Time) string {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Nanosecond() == 0 {
		return t.Format("2006-01-02T15:04:05") + "+00:00"
	}
	return t.Format("2006-01-02T15:04:05.000000") + "+00:00"
}

// Hash values are "sha256:" followed by hex; the reference truncates the
// hex to 16 digits, a full digest has 64.
const (
	hashPrefix       = "sha256:"
	minHashHexDigits = 16
	maxHashHexDigits = 64
)

// checkHashValue checks one hashes value; reason is "" when it is valid.
func checkHashValue(s string) string {
	if !strings.HasPrefix(s, hashPrefix) {
		return fmt.Sprintf(`want "sha256:" followed by %d to %d hex digits, got %q`, minHashHexDigits, maxHashHexDigits, clip(s))
	}
	h := s[len(hashPrefix):]
	if len(h) < minHashHexDigits || len(h) > maxHashHexDigits || !isHex(h) {
		return fmt.Sprintf(`want %d to %d hex digits after "sha256:", got %q`, minHashHexDigits, maxHashHexDigits, clip(h))
	}
	return ""
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

// spkiPrefix is the DER SubjectPublicKeyInfo header of an Ed25519 key:
// SEQUENCE { SEQUENCE { OID 1.3.101.112 } BIT STRING (33 bytes) }.
var spkiPrefix = [12]byte{0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00}

const signerHexPrefix = "ed25519:"

// decodeSignerID reads signer_id in any of its three spellings into buf
// and returns the key (a slice of buf). reason is "" when it succeeds.
func decodeSignerID(s string, buf *[ed25519.PublicKeySize]byte) (ed25519.PublicKey, signerForm, string) {
	const want = `want "ed25519:" and 64 hex digits, or standard base64 of the 32-byte key or of its DER SubjectPublicKeyInfo`
	if rest, ok := strings.CutPrefix(s, signerHexPrefix); ok {
		if len(rest) != 2*ed25519.PublicKeySize || !decodeHex(buf[:], rest) {
			return nil, signerUnknown, fmt.Sprintf(`"ed25519:" must be followed by 64 hex digits, got %d characters`, len(rest))
		}
		return buf[:], signerHex, ""
	}
	// Both base64 spellings are at most 60 characters; refuse longer input
	// before decoding so that no signer_id costs more than it must.
	var der [len(spkiPrefix) + ed25519.PublicKeySize + 3]byte
	if len(s) > base64.StdEncoding.EncodedLen(len(spkiPrefix)+ed25519.PublicKeySize) {
		return nil, signerUnknown, fmt.Sprintf("%s, got %d characters", want, len(s))
	}
	n, err := base64.StdEncoding.Strict().Decode(der[:], []byte(s))
	if err != nil {
		return nil, signerUnknown, fmt.Sprintf("%s, got %q", want, clip(s))
	}
	b := der[:n]
	switch {
	case len(b) == ed25519.PublicKeySize:
		copy(buf[:], b)
		return buf[:], signerRawBase64, ""
	case len(b) == len(spkiPrefix)+ed25519.PublicKeySize && bytes.Equal(b[:len(spkiPrefix)], spkiPrefix[:]):
		copy(buf[:], b[len(spkiPrefix):])
		return buf[:], signerSPKIBase64, ""
	case len(b) == len(spkiPrefix)+ed25519.PublicKeySize:
		return nil, signerUnknown, "base64 decodes to 44 bytes that are not an Ed25519 SubjectPublicKeyInfo"
	}
	return nil, signerUnknown, fmt.Sprintf("base64 decodes to %d bytes, want %d (raw key) or %d (DER SubjectPublicKeyInfo)",
		len(b), ed25519.PublicKeySize, len(spkiPrefix)+ed25519.PublicKeySize)
}

// decodeHex decodes s, 2*len(dst) hex digits of either case, into dst.
func decodeHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := unhex(s[2*i])
		lo, ok2 := unhex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// signerIDHex is the reference spelling of a key.
func signerIDHex(k ed25519.PublicKey) string { return signerHexPrefix + hex.EncodeToString(k) }

// signerIDRawBase64 is standard base64 of the raw key.
func signerIDRawBase64(k ed25519.PublicKey) string { return base64.StdEncoding.EncodeToString(k) }

// signerIDSPKIBase64 is standard base64 of the key's DER
// SubjectPublicKeyInfo, the spelling of the specification's example.
func signerIDSPKIBase64(k ed25519.PublicKey) string {
	der := make([]byte, 0, len(spkiPrefix)+len(k))
	der = append(der, spkiPrefix[:]...)
	return base64.StdEncoding.EncodeToString(append(der, k...))
}

// decodeSignatureHex reads signature.signature, 128 hex digits of either
// case, into buf and returns the signature (a slice of buf). reason is ""
// when it succeeds.
func decodeSignatureHex(s string, buf *[ed25519.SignatureSize]byte) ([]byte, string) {
	if !decodeHex(buf[:], s) {
		return nil, fmt.Sprintf("want %d hex digits (a %d-byte Ed25519 signature), got %d characters",
			2*ed25519.SignatureSize, ed25519.SignatureSize, len(s))
	}
	return buf[:], ""
}

// clip shortens s for an error message.
func clip(s string) string {
	const limit = 80
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "..."
}
