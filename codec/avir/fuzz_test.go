package avir

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// checkMalformed asserts the error contract of the parsers: a
// *codec.MalformedError with at least one finding, each with a code, a
// reason and an offset inside the input (or NoOffset).
func checkMalformed(t *testing.T, data []byte, err error) {
	t.Helper()
	if !errors.Is(err, codec.ErrMalformed) {
		t.Fatalf("error %v does not wrap codec.ErrMalformed", err)
	}
	fs := codec.FindingsOf(err)
	if len(fs) == 0 {
		t.Fatal("malformed error without findings")
	}
	checkFindings(t, data, fs)
}

func checkFindings(t *testing.T, data []byte, fs []codec.Finding) {
	t.Helper()
	for _, f := range fs {
		if f.Code == "" || f.Reason == "" || f.Offset < codec.NoOffset || f.Offset > int64(len(data)) {
			t.Fatalf("bad finding %+v (input %d bytes)", f, len(data))
		}
	}
}

// FuzzParseSpec: for any input (JSON or YAML), ParseSpec never panics,
// fails only with findings that point inside the input, and whatever it
// accepts re-reads from its JSON form with the same hash (so YAML
// conversion and normalization agree with the JSON path).
func FuzzParseSpec(f *testing.F) {
	for _, s := range genSamples(f) {
		if strings.Contains(s.name, ".spec.") {
			f.Add(s.data)
		}
	}
	f.Add(readFile(f, filepath.Join(vectorDir, "01_verified_L2.spec.json")))
	p := mustParser(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := p.ParseSpec(data)
		if err != nil {
			checkMalformed(t, data, err)
			return
		}
		if len(s.Hash()) != 64 || s.Hash() != sha256Hex(canonjson.Canonical(s.Normalized())) {
			t.Fatalf("hash %q does not cover the normalized form", s.Hash())
		}
		again, err := p.ParseSpec(canonjson.Indent(s.Value()))
		if err != nil {
			t.Fatalf("accepted %s input, but its JSON form is rejected: %v", s.Syntax(), err)
		}
		if again.Hash() != s.Hash() {
			t.Fatalf("%s input hashes %s, its JSON form %s", s.Syntax(), s.Hash(), again.Hash())
		}
		_ = s.Summary()
	})
}

// FuzzParseAttestation: for any input, ParseAttestation and then Verify
// (alone and against a specification), Summary and Signer never panic,
// and every finding points inside the input.
func FuzzParseAttestation(f *testing.F) {
	for _, s := range genSamples(f) {
		if strings.Contains(s.name, ".attestation.") {
			f.Add(s.data)
		}
	}
	for _, name := range []string{"01_verified_L2.attestation.json", "93_bad_signature.attestation.json"} {
		f.Add(readFile(f, filepath.Join(vectorDir, name)))
	}
	p := mustParser(f)
	spec, err := p.ParseSpec(readFile(f, filepath.Join(vectorDir, "01_verified_L2.spec.json")))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := p.ParseAttestation(data)
		if err != nil {
			checkMalformed(t, data, err)
			return
		}
		checkFindings(t, data, a.Verify(VerifyOptions{}))
		checkFindings(t, data, a.Verify(VerifyOptions{Spec: spec}))
		_ = a.Summary()
		_ = a.Signer()
	})
}
