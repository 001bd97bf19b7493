package replay

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/proofledger/ledger/codec/vrf"
)

// TestReceiptClaims replays sample receipts and checks which claims
// disagree with their recomputation, the signature status and validity.
func TestReceiptClaims(t *testing.T) {
	tests := []struct {
		path     string
		disagree []string
		sig      SignatureStatus
	}{
		{filepath.Join(vrfVectors, "01_tier0_pass.json"), nil, SignatureVerified},
		{filepath.Join(vrfVectors, "90_tampered_verdict.json"), []string{"verdict", "signature.content_hash"}, SignatureNotVerified},
		{filepath.Join(vrfSamples, "ref_partial.json"), nil, SignatureVerified},
		{filepath.Join(vrfSamples, "ref_error_timeout.json"), nil, SignatureVerified},
		{filepath.Join(vrfSamples, "spec_utf8_canonical.json"), nil, SignatureVerified},
		{filepath.Join(vrfSamples, "ref_content_hash_prefixed.json"), nil, SignatureVerified},
		{filepath.Join(vrfSamples, "unsigned.json"), nil, SignatureNone},
		{filepath.Join(vrfSamples, "counts_disagree_details.json"), []string{"results.passed", "results.failed", "verdict"}, SignatureVerified},
		{filepath.Join(vrfSamples, "counts_total_mismatch.json"), []string{"results.total"}, SignatureVerified},
		{filepath.Join(vrfSamples, "verdict_disagrees_counts.json"), []string{"verdict"}, SignatureVerified},
		{filepath.Join(vrfSamples, "content_hash_mismatch.json"), []string{"signature.content_hash"}, SignatureNotVerified},
		{filepath.Join(vrfSamples, "chain_tampered_position.json"), []string{"signature.content_hash"}, SignatureNotVerified},
		{filepath.Join(vrfSamples, "bad_signature.json"), []string{"signature.signature"}, SignatureNotVerified},
		{filepath.Join(vrfSamples, "signature_wrong_signer.json"), []string{"signature.signature"}, SignatureNotVerified},
		{filepath.Join(vrfSamples, "signer_id_garbage.json"), []string{"signature.signature"}, SignatureNotVerified},
	}
	for _, tt := range tests {
		rc, err := vrf.Parse(readFile(t, tt.path))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Receipt(rc)
		if err != nil {
			t.Fatal(err)
		}
		if got := disagreeing(r.Claims); !slices.Equal(got, tt.disagree) {
			t.Errorf("%s: disagreeing claims %q, want %q", tt.path, got, tt.disagree)
		}
		if r.Signature.Status != tt.sig {
			t.Errorf("%s: signature %+v, want %s", tt.path, r.Signature, tt.sig)
		}
		if r.Valid != (len(rc.Verify()) == 0) {
			t.Errorf("%s: valid = %v", tt.path, r.Valid)
		}
		wantRows := 7
		if !rc.Signed() {
			wantRows = 5
		}
		if len(r.Claims) != wantRows {
			t.Errorf("%s: %d claims, want %d", tt.path, len(r.Claims), wantRows)
		}
	}
	if _, err := Receipt(nil); err == nil {
		t.Error("Receipt(nil) succeeded")
	}
}

// TestReceiptChainIsNotChecked: the chain link is reported as stated and
// never as checked.
func TestReceiptChainIsNotChecked(t *testing.T) {
	rc, err := vrf.Parse(readFile(t, filepath.Join(vrfSamples, "chain_2.json")))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Receipt(rc)
	if err != nil {
		t.Fatal(err)
	}
	if r.Chain.Checked || r.Chain.Position == nil || *r.Chain.Position != 1 || r.Chain.PreviousReceipt == "" {
		t.Errorf("chain = %+v", r.Chain)
	}
}
