package vrf

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/proofledger/ledger/codec"
)

// Codes of the findings Verify reports.
const (
	// CodeCountMismatch: a results count disagrees with results.details,
	// or results.total with the sum of the other counts.
	CodeCountMismatch = "count_mismatch"
	// CodeVerdictMismatch: the verdict is not the one the counts give
	// under the reference rule (see Counts.ExpectedVerdict).
	CodeVerdictMismatch = "verdict_mismatch"
	// CodeContentHashMismatch: signature.content_hash is not the hash of
	// the receipt's canonical JSON.
	CodeContentHashMismatch = "content_hash_mismatch"
	// CodeSignerIDInvalid: signature.signer_id is no Ed25519 key spelling.
	CodeSignerIDInvalid = "signer_id_invalid"
	// CodeSignatureInvalid: signature.signature is not a valid Ed25519
	// signature of content_hash by signer_id.
	CodeSignatureInvalid = "signature_invalid"
)

// Verify checks what the receipt claims and returns one finding per
// disagreement; an empty result means the receipt is valid. It checks:
//   - results.passed, failed and errors against the statuses in
//     results.details (errors counts error and timeout), and results.total
//     against the number of details and against passed+failed+errors;
//   - the verdict against the counts (Counts.ExpectedVerdict);
//   - for a signed receipt: content_hash against the canonical JSON hash
//     (compared case-insensitively, an optional "sha256:" prefix
//     ignored), signer_id as an Ed25519 key, and the Ed25519 signature over
//     the content_hash string as written (or, when that fails and it has a
//     "sha256:" prefix, over the bare hex).
//
// An unsigned receipt can be valid; callers that require signatures check
// Signed. Wrap the result with codec.AsInvalid for an error.
func (r *Receipt) Verify() []codec.Finding {
	var fs []codec.Finding
	fs = r.verifyCounts(fs)
	if want := r.counts.ExpectedVerdict(); r.verdict != want {
		fs = append(fs, codec.Finding{
			Code: CodeVerdictMismatch, Field: "verdict", Offset: codec.NoOffset,
			Reason: fmt.Sprintf("verdict is %q but the counts (%d passed, %d failed, %d errors) give %q",
				r.verdict, r.counts.Passed, r.counts.Failed, r.counts.Errors, want),
		})
	}
	if r.sig != nil {
		fs = r.verifySignature(fs)
	}
	return fs
}

func (r *Receipt) verifyCounts(fs []codec.Finding) []codec.Finding {
	c, d := r.counts, r.details
	mismatch := func(field, reason string, args ...any) {
		fs = append(fs, codec.Finding{Code: CodeCountMismatch, Field: field, Offset: codec.NoOffset, Reason: fmt.Sprintf(reason, args...)})
	}
	if c.Passed != d.Passed {
		mismatch("results.passed", `results.passed is %d but %s status "pass"`, c.Passed, detailsHave(d.Passed))
	}
	if c.Failed != d.Failed {
		mismatch("results.failed", `results.failed is %d but %s status "fail"`, c.Failed, detailsHave(d.Failed))
	}
	if c.Errors != d.Errors {
		mismatch("results.errors", `results.errors is %d but %s status "error" or "timeout"`, c.Errors, detailsHave(d.Errors))
	}
	var why []string
	if c.Total != d.Total {
		why = append(why, fmt.Sprintf("results.details has %d items", d.Total))
	}
	// The counts are non-negative int64s, so their sum fits in 65 bits.
	lo, carry := bits.Add64(uint64(c.Passed), uint64(c.Failed), 0)
	lo, carry2 := bits.Add64(lo, uint64(c.Errors), 0)
	if carry+carry2 != 0 || lo != uint64(c.Total) {
		sum := "more than 2^64"
		if carry+carry2 == 0 {
			sum = strconv.FormatUint(lo, 10)
		}
		why = append(why, "passed+failed+errors is "+sum)
	}
	if len(why) > 0 {
		mismatch("results.total", "results.total is %d but %s", c.Total, strings.Join(why, " and "))
	}
	return fs
}

// detailsHave renders "1 detail has" / "2 details have".
func detailsHave(n int64) string {
	if n == 1 {
		return "1 detail has"
	}
	return strconv.FormatInt(n, 10) + " details have"
}

func (r *Receipt) verifySignature(fs []codec.Finding) []codec.Finding {
	s := r.sig
	var sigFinding *codec.Finding
	sigOK := false
	switch {
	case s.key == nil:
		sigFinding = &codec.Finding{Code: CodeSignerIDInvalid, Field: "signature.signer_id", Offset: codec.NoOffset, Reason: s.keyReason}
	case s.sig == nil:
		sigFinding = &codec.Finding{Code: CodeSignatureInvalid, Field: "signature.signature", Offset: codec.NoOffset, Reason: s.sigReason}
	default:
		var buf [2*sha256.Size + len(hashPrefix)]byte // room for the usual message, on the stack
		sigOK = ed25519.Verify(s.key, append(buf[:0], s.contentHash...), s.sig)
		if bare, ok := strings.CutPrefix(s.contentHash, hashPrefix); !sigOK && ok {
			sigOK = ed25519.Verify(s.key, append(buf[:0], bare...), s.sig)
		}
		if !sigOK {
			sigFinding = &codec.Finding{
				Code: CodeSignatureInvalid, Field: "signature.signature", Offset: codec.NoOffset,
				Reason: fmt.Sprintf("Ed25519 signature does not verify over the content_hash string with key %s", signerIDHex(s.key)),
			}
		}
	}
	if s.matched == canonNone {
		reason := fmt.Sprintf("content_hash is %q but the receipt without its signature hashes to %s (canonical JSON, ensure_ascii=True)",
			clip(s.contentHash), r.contentHash)
		if s.utf8Hash != "" {
			reason += fmt.Sprintf(" or %s (ensure_ascii=False)", s.utf8Hash)
		}
		if sigOK {
			reason += "; the signature is valid for the stated content_hash, so the receipt was changed after it was signed"
		}
		fs = append(fs, codec.Finding{Code: CodeContentHashMismatch, Field: "signature.content_hash", Offset: codec.NoOffset, Reason: reason})
	}
	if sigFinding != nil {
		fs = append(fs, *sigFinding)
	}
	return fs
}
