package proof

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/tlog"
)

// Helpers for the line-oriented text formats: checkpoints and proofs.

// b64 encodes b in standard base64.
func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// decodeB64 decodes s as strict standard base64: padding bits must be
// zero, so that every byte string has exactly one accepted spelling. Go's
// base64 decoders silently skip '\r' and '\n'; here they are errors.
func decodeB64(s string) ([]byte, bool) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	return b, err == nil
}

// hashB64Len is the length of a base64 SHA-256 hash.
const hashB64Len = 44

// parseHash reads one base64 SHA-256 hash: exactly 44 characters of strict
// standard base64.
func parseHash(s string) (tlog.Hash, bool) {
	if len(s) != hashB64Len {
		return tlog.Hash{}, false
	}
	b, ok := decodeB64(s)
	if !ok || len(b) != tlog.HashSize {
		return tlog.Hash{}, false
	}
	return tlog.Hash(b), true
}

// parseDecimal reads a non-negative int64 in canonical decimal: ASCII
// digits only, no sign, no leading zero unless the number is 0.
func parseDecimal(s string) (int64, bool) {
	if s == "" || len(s) > 19 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// checkNoCR reports the offset of the first carriage return in data: the
// formats use bare '\n' line ends, and base64 decoders would silently skip
// a '\r'.
func checkNoCR(what string, data []byte) error {
	if i := bytes.IndexByte(data, '\r'); i >= 0 {
		return malformed(what, "offset %d: carriage return (lines end with \\n alone)", i)
	}
	return nil
}

// sigPrefix starts every signature line of a signed note.
const sigPrefix = "\u2014 " // em dash, space

// maxSigs is the most signature lines a note may carry (note.Open's limit).
const maxSigs = 100

// splitNote checks the shape of a signed note (C2SP signed-note) without
// verifying any signature and returns its text: valid UTF-8 without control
// characters other than '\n', the text, a blank line, then one or more
// lines "— <name> <base64 key hash and signature>", each ending in '\n'.
func splitNote(what string, signed []byte) (string, error) {
	if err := checkSize(what, len(signed)); err != nil {
		return "", err
	}
	for i := 0; i < len(signed); {
		r, size := utf8.DecodeRune(signed[i:])
		if r == utf8.RuneError && size == 1 {
			return "", malformed(what, "offset %d: invalid UTF-8", i)
		}
		if r < 0x20 && r != '\n' {
			return "", malformed(what, "offset %d: control character 0x%02x", i, r)
		}
		i += size
	}
	split := bytes.LastIndex(signed, []byte("\n\n"))
	if split < 0 {
		return "", malformed(what, "no blank line between the text and the signatures")
	}
	text, sigs := signed[:split+1], signed[split+2:]
	if len(sigs) == 0 {
		return "", malformed(what, "no signature lines")
	}
	if sigs[len(sigs)-1] != '\n' {
		return "", malformed(what, "the last signature line does not end with a newline")
	}
	lines := strings.Split(string(sigs[:len(sigs)-1]), "\n")
	if len(lines) > maxSigs {
		return "", malformed(what, "%d signature lines, more than %d", len(lines), maxSigs)
	}
	for i, line := range lines {
		rest, ok := strings.CutPrefix(line, sigPrefix)
		name, sig, ok2 := strings.Cut(rest, " ")
		if !ok || !ok2 || !validKeyName(name) {
			return "", malformed(what, "signature line %d: want \"\u2014 <key name> <base64>\", got %s", i+1, quote(line))
		}
		if b, ok := decodeB64(sig); !ok || len(b) < 5 {
			return "", malformed(what, "signature line %d: signature is not base64 of a key hash and a signature: %s", i+1, quote(sig))
		}
	}
	return string(text), nil
}

// validKeyName is the signed-note rule for key names: non-empty UTF-8
// without spaces or '+'.
func validKeyName(name string) bool {
	return name != "" && utf8.ValidString(name) && strings.IndexFunc(name, unicode.IsSpace) < 0 && !strings.Contains(name, "+")
}

// lineError names a line of a proof in an error.
func lineError(what string, n int, format string, args ...any) error {
	return malformed(what, "line %d: %s", n, fmt.Sprintf(format, args...))
}
