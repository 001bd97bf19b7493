package rvww

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/proofledger/ledger/codec"
)

// Verification finding codes.
const (
	// CodeHeaderTotalMismatch: a header total (cost, latency or tokens)
	// differs from the saturating sum over the trace.
	CodeHeaderTotalMismatch = "header_total_mismatch"
	// CodeHMACMismatch: the bundle is signed and no supplied key verifies it.
	CodeHMACMismatch = "hmac_mismatch"
	// CodeSignatureNotChecked: the bundle is signed and no key was supplied,
	// or the Bundle holds no encoded bytes to check.
	CodeSignatureNotChecked = "signature_not_checked"
)

// Verify checks a decoded bundle and returns what fails, or nil when the
// bundle is valid:
//   - each header total (cost, latency, tokens) must equal the saturating
//     u32 sum over the calls ("header_total_mismatch", naming the field and
//     both values);
//   - a signed bundle's HMAC-SHA256 over [0, total_bundle_size-32) must
//     match one of keys, tried in order with a constant-time comparison
//     ("hmac_mismatch" when none does, "signature_not_checked" when keys is
//     empty: a signed bundle is never valid without a key that verifies it).
//
// An unsigned bundle passes the signature step; see the package comment.
// Verify records the name of the key that verified (VerifiedKey; a key
// with an empty Name is named "key #N" by its 1-based position) and
// forgets the outcome of any earlier call.
func (b *Bundle) Verify(keys []Key) []codec.Finding {
	var fs []codec.Finding
	cost, latency, tokens := b.TraceTotals()
	for _, t := range []struct {
		field      string
		off        int64
		header, tr uint32
	}{
		{"header.total_cost_microdollars", offTotalCost, b.Header.TotalCostMicrodollars, cost},
		{"header.total_latency_ms", offTotalLatency, b.Header.TotalLatencyMS, latency},
		{"header.total_tokens", offTotalTokens, b.Header.TotalTokens, tokens},
	} {
		if t.header != t.tr {
			fs = append(fs, codec.Finding{Code: CodeHeaderTotalMismatch, Field: t.field, Offset: t.off,
				Reason: fmt.Sprintf("header says %d, the %d tool calls sum to %d", t.header, len(b.Calls), t.tr)})
		}
	}

	b.verifiedKey, b.sigChecked = "", false
	if !b.Signed() {
		return fs
	}
	n := len(b.raw)
	sigOff := int64(n - SignatureSize)
	switch {
	case n < HeaderSize+SignatureSize || n != int(b.Header.TotalSize):
		return append(fs, codec.Finding{Code: CodeSignatureNotChecked, Field: "signature", Offset: codec.NoOffset,
			Reason: "signed bundle holds no encoded bytes to check (it was not produced by Decode)"})
	case len(keys) == 0:
		return append(fs, codec.Finding{Code: CodeSignatureNotChecked, Field: "signature", Offset: sigOff,
			Reason: "signed bundle, no HMAC key supplied"})
	}
	msg, sig := b.raw[:sigOff], b.raw[sigOff:]
	for i, k := range keys {
		mac := hmac.New(sha256.New, k.Secret)
		mac.Write(msg)
		if hmac.Equal(mac.Sum(nil), sig) {
			b.sigChecked = true
			b.verifiedKey = k.Name
			if b.verifiedKey == "" {
				b.verifiedKey = fmt.Sprintf("key #%d", i+1)
			}
			return fs
		}
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name
		if names[i] == "" {
			names[i] = fmt.Sprintf("key #%d", i+1)
		}
	}
	return append(fs, codec.Finding{Code: CodeHMACMismatch, Field: "signature", Offset: sigOff,
		Reason: fmt.Sprintf("HMAC-SHA256 over bytes [0, %d) matches none of the %d supplied keys (%s)",
			sigOff, len(keys), strings.Join(names, ", "))})
}
