package avir

import (
	"crypto/ed25519"
	"encoding/base64"
	"path/filepath"
	"testing"
)

// BenchmarkParseSpec reads the reference vector's spec (JSON) and the
// full YAML sample, with a kept Parser and with one compiled per call
// (the package-level ParseSpec).
func BenchmarkParseSpec(b *testing.B) {
	jsonSpec := readFile(b, filepath.Join(vectorDir, "01_verified_L2.spec.json"))
	yamlSpec := []byte(fullSpecYAML)
	p := mustParser(b)
	for _, c := range []struct {
		name  string
		data  []byte
		parse func([]byte) (*Spec, error)
	}{
		{"json/kept-parser", jsonSpec, p.ParseSpec},
		{"yaml/kept-parser", yamlSpec, p.ParseSpec},
		{"json/compile-per-call", jsonSpec, ParseSpec},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.parse(c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseAttestation reads the reference vector attestation.
func BenchmarkParseAttestation(b *testing.B) {
	data := readFile(b, filepath.Join(vectorDir, "01_verified_L2.attestation.json"))
	p := mustParser(b)
	for _, c := range []struct {
		name  string
		parse func([]byte) (*Attestation, error)
	}{
		{"kept-parser", p.ParseAttestation},
		{"compile-per-call", ParseAttestation},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.parse(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerifyAttestation verifies the reference vector against its
// spec: "end-to-end" parses and verifies (kept Parser, spec parsed once),
// "verify-only" re-verifies a parsed attestation.
func BenchmarkVerifyAttestation(b *testing.B) {
	data := readFile(b, filepath.Join(vectorDir, "01_verified_L2.attestation.json"))
	p := mustParser(b)
	spec, err := p.ParseSpec(readFile(b, filepath.Join(vectorDir, "01_verified_L2.spec.json")))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("end-to-end", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			a, err := p.ParseAttestation(data)
			if err != nil {
				b.Fatal(err)
			}
			if fs := a.Verify(VerifyOptions{Spec: spec}); len(fs) != 0 {
				b.Fatal(fs)
			}
		}
	})
	a, err := p.ParseAttestation(data)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("verify-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if fs := a.Verify(VerifyOptions{Spec: spec}); len(fs) != 0 {
				b.Fatal(fs)
			}
		}
	})
}

// BenchmarkEd25519Verify is the floor under verification: one
// crypto/ed25519 check of the vector's signature.
func BenchmarkEd25519Verify(b *testing.B) {
	p := mustParser(b)
	a, err := p.ParseAttestation(readFile(b, filepath.Join(vectorDir, "01_verified_L2.attestation.json")))
	if err != nil {
		b.Fatal(err)
	}
	pub, _ := base64.StdEncoding.DecodeString(a.Signature().PublicKey)
	sig, _ := base64.StdEncoding.DecodeString(a.Signature().Signature)
	msg := []byte(a.ID())
	b.ReportAllocs()
	for b.Loop() {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("signature does not verify")
		}
	}
}

// BenchmarkBuildAttestation builds and signs the verified sample.
func BenchmarkBuildAttestation(b *testing.B) {
	s := spec(b, fullSpec())
	key := sampleKey()
	b.ReportAllocs()
	for b.Loop() {
		a := build(b, s, runsPass, "L2")
		if _, err := Sign(a, key); err != nil {
			b.Fatal(err)
		}
	}
}
