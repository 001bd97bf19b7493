package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
)

// This file re-implements the reference signing algorithm of VRF receipts
// from the specification texts (../shared/specs/INTEROP.md, the VRF spec),
// sharing no code with codec/vrf or codec/canonjson, so that the receipts
// `ledger run vrf` signs are checked by something other than the code
// that signed them. testdata/vrf_check.py does the same in CPython.

// independentCheck verifies one signed receipt: content_hash is the hex
// SHA-256 of the receipt without "signature" in Python's
// json.dumps(sort_keys=True, separators=(",", ":")) with ensure_ascii,
// and signature the hex Ed25519 signature of the ASCII content_hash by
// the key signer_id ("ed25519:" + hex) names.
func independentCheck(doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	sig, ok := v["signature"].(map[string]any)
	if !ok {
		return fmt.Errorf("no signature object")
	}
	delete(v, "signature")
	if sig["algorithm"] != "ed25519" {
		return fmt.Errorf("algorithm %v", sig["algorithm"])
	}
	signer, _ := sig["signer_id"].(string)
	pubHex, ok := strings.CutPrefix(signer, "ed25519:")
	pub, err := hex.DecodeString(pubHex)
	if !ok || err != nil || len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("signer_id %q", signer)
	}
	var canon strings.Builder
	if err := pyDumps(&canon, v); err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(canon.String()))
	digest := hex.EncodeToString(sum[:])
	if sig["content_hash"] != digest {
		return fmt.Errorf("content_hash %v, recomputed %s", sig["content_hash"], digest)
	}
	s, _ := sig["signature"].(string)
	raw, err := hex.DecodeString(s)
	if err != nil || !ed25519.Verify(pub, []byte(digest), raw) {
		return fmt.Errorf("signature does not verify")
	}
	return nil
}

// pyDumps writes v as Python's json.dumps(v, sort_keys=True,
// separators=(",", ":")) does: keys sorted by code point, every character
// outside printable ASCII escaped (ensure_ascii), integers as written and
// floats as Python's repr.
func pyDumps(b *strings.Builder, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		pyString(b, x)
	case json.Number:
		s := string(x)
		if !strings.ContainsAny(s, ".eE") {
			b.WriteString(s) // an int, any size
			return nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		b.WriteString(pyFloatRepr(f))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := pyDumps(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		// UTF-8 byte order is code point order, which Python sorts str by
		// (receipts hold no lone surrogates).
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			pyString(b, k)
			b.WriteByte(':')
			if err := pyDumps(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("unexpected %T", v)
	}
	return nil
}

func pyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r >= ' ' && r <= '~':
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
}

// pyFloatRepr is Python's repr of a finite float: the shortest digits
// that round-trip, in fixed notation when the decimal exponent is in
// [-4, 16) (with ".0" for an integral value), else d.ddde±XX.
func pyFloatRepr(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	mant, expS, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expS)
	neg := strings.HasPrefix(mant, "-")
	digits := strings.Replace(strings.TrimPrefix(mant, "-"), ".", "", 1)
	sign := ""
	if neg {
		sign = "-"
	}
	if exp < -4 || exp >= 16 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		es := "+"
		if exp < 0 {
			es, exp = "-", -exp
		}
		return fmt.Sprintf("%s%se%s%02d", sign, m, es, exp)
	}
	point := exp + 1 // digits before the decimal point
	switch {
	case point <= 0:
		return sign + "0." + strings.Repeat("0", -point) + digits
	case point >= len(digits):
		return sign + digits + strings.Repeat("0", point-len(digits)) + ".0"
	}
	return sign + digits[:point] + "." + digits[point:]
}

// TestIndependentCheck checks the re-implementation itself: the reference
// vector verifies, its tampered copy does not, and floats print as
// CPython's repr.
func TestIndependentCheck(t *testing.T) {
	good, err := os.ReadFile("../../testdata/vectors/vrf/01_tier0_pass.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := independentCheck(good); err != nil {
		t.Errorf("reference vector: %v", err)
	}
	bad, err := os.ReadFile("../../testdata/vectors/vrf/90_tampered_verdict.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := independentCheck(bad); err == nil {
		t.Error("tampered vector verifies")
	}
	for f, want := range map[float64]string{
		1: "1.0", 0.1: "0.1", 1e-05: "1e-05", 0.0001: "0.0001", 1e16: "1e+16", 1234567.0: "1234567.0",
		298.579178: "298.579178", -2.5e-7: "-2.5e-07", 123456789012345678: "1.2345678901234568e+17", math.Copysign(0, -1): "-0.0",
	} {
		if got := pyFloatRepr(f); got != want {
			t.Errorf("pyFloatRepr(%v) = %s, want %s", f, got, want)
		}
	}
}

// pythonCheck runs testdata/vrf_check.py over files; it reports false
// when python3 or its cryptography module is missing.
func pythonCheck(t *testing.T, files ...string) bool {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Logf("no python3 (%v): receipts checked by the Go re-implementation only", err)
		return false
	}
	cmd := exec.Command(py, append([]string{"testdata/vrf_check.py"}, files...)...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 2 {
		t.Logf("python3 has no cryptography module: receipts checked by the Go re-implementation only")
		return false
	}
	if err != nil {
		t.Errorf("vrf_check.py: %v\n%s", err, out)
	}
	return true
}
