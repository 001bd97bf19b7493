package replay

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/avir"
)

func parseAttestation(t *testing.T, p *avir.Parser, path string) *avir.Attestation {
	t.Helper()
	a, err := p.ParseAttestation(readFile(t, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return a
}

func disagreeing(claims []Claim) []string {
	var out []string
	for _, c := range claims {
		if c.Agrees != nil && !*c.Agrees {
			out = append(out, c.Field)
		}
	}
	return out
}

// TestAttestationShowsTampering replays the sample attestations against
// their specification: the ones whose verdicts or summary were edited show
// each edited claim beside its recomputation, and every "bad_" sample is
// invalid while the others are valid.
func TestAttestationShowsTampering(t *testing.T) {
	p, err := avir.NewParser()
	if err != nil {
		t.Fatal(err)
	}
	const summary = "results.summary."
	wantDisagree := map[string][]string{
		"bad_benchmark_verdict_tampered": {"results.benchmarks[2].verdict", summary + "passed", summary + "failed", summary + "pass_rate", "verdict", "verdict_details"},
		"bad_verdict_tampered":           {"verdict"},
		"bad_summary_mismatch":           {summary + "passed"},
		"bad_verdict_details_mismatch":   {"verdict_details"},
	}
	for _, name := range listDir(t, avirSamples, ".attestation.json") {
		base := strings.TrimSuffix(name, ".attestation.json")
		a, err := p.ParseAttestation(readFile(t, filepath.Join(avirSamples, name)))
		if err != nil {
			continue // malformed: no replay
		}
		spec, err := p.ParseSpec(readFile(t, filepath.Join(avirSamples, avirSpecFor(name))))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Attestation(a, avir.VerifyOptions{Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		if got := disagreeing(r.Claims); !slices.Equal(got, wantDisagree[base]) {
			t.Errorf("%s: disagreeing claims %q, want %q", base, got, wantDisagree[base])
		}
		if bad := strings.HasPrefix(base, "bad_"); r.Valid == bad {
			t.Errorf("%s: valid = %v (findings %v)", base, r.Valid, r.Findings)
		}
		if len(r.Claims) < 5 && len(a.Benchmarks()) > 0 {
			t.Errorf("%s: only %d claims", base, len(r.Claims))
		}
	}
}

// TestAttestationAgreesWithAvir checks replay's recomputation against
// codec/avir's on every sample and demo attestation, with and without a
// specification: an item verdict disagrees exactly when codec/avir
// reports a benchmark_verdict_mismatch for it, and, when every item
// verdict stands, the summary, verdict and verdict_details rows disagree
// exactly when codec/avir reports the matching finding (replay duplicates
// codec/avir's unexported section 10.2 rule and wording).
func TestAttestationAgreesWithAvir(t *testing.T) {
	p, err := avir.NewParser()
	if err != nil {
		t.Fatal(err)
	}
	codeOf := func(field string) string {
		switch {
		case strings.HasPrefix(field, "results.benchmarks["):
			return "benchmark_verdict_mismatch"
		case strings.HasPrefix(field, "results.summary."):
			return "summary_mismatch"
		case field == "verdict":
			return "verdict_mismatch"
		}
		return "verdict_details_mismatch"
	}
	var paths []string
	for _, dir := range []string{avirSamples, "../testdata/demo/avir", avirVectors} {
		for _, name := range listDir(t, dir, ".attestation.json") {
			paths = append(paths, filepath.Join(dir, name))
		}
	}
	fullSpec, err := p.ParseSpec(readFile(t, filepath.Join(avirSamples, "valid_full.spec.json")))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, path := range paths {
		a, err := p.ParseAttestation(readFile(t, path))
		if err != nil {
			continue
		}
		for _, opts := range []avir.VerifyOptions{{}, {Spec: fullSpec}} {
			r, err := Attestation(a, opts)
			if err != nil {
				t.Fatal(err)
			}
			itemsStand := true
			for _, c := range r.Claims {
				if strings.HasPrefix(c.Field, "results.benchmarks[") && !*c.Agrees {
					itemsStand = false
				}
			}
			for _, c := range r.Claims {
				if c.Agrees == nil {
					if c.Field == "verdict_details" && len(a.Benchmarks()) == 0 {
						continue // the reference has no wording for INVALID
					}
					t.Fatalf("%s: %s not recomputed", path, c.Field)
				}
				if !itemsStand && !strings.HasPrefix(c.Field, "results.benchmarks[") {
					continue
				}
				found := slices.ContainsFunc(r.Findings, func(f codec.Finding) bool { return f.Code == codeOf(c.Field) && f.Field == c.Field })
				if found == *c.Agrees {
					t.Errorf("%s (spec %v): %s agrees=%v but codec/avir finding present=%v", path, opts.Spec != nil, c.Field, *c.Agrees, found)
				}
				checked++
			}
		}
	}
	if checked < 300 {
		t.Errorf("only %d claims compared", checked)
	}
}

func TestAttestationSignature(t *testing.T) {
	p, err := avir.NewParser()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]SignatureStatus{
		"verified_signed":        SignatureVerified,
		"verified_unsigned":      SignatureNone,
		"bad_signature_invalid":  SignatureNotVerified,
		"bad_public_key_invalid": SignatureNotVerified,
	} {
		r, err := Attestation(parseAttestation(t, p, filepath.Join(avirSamples, name+".attestation.json")), avir.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Signature.Status != want {
			t.Errorf("%s: signature %+v, want %s", name, r.Signature, want)
		}
	}
	if _, err := Attestation(nil, avir.VerifyOptions{}); err == nil {
		t.Error("Attestation(nil) succeeded")
	}
}
