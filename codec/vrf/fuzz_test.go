package vrf

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// FuzzParse checks, for any input: Parse, Verify and Summary never panic;
// a rejection always carries findings that point inside the input; the
// content hash is SHA-256 of canonjson.Canonical of the receipt without its
// signature; and a receipt that parses re-parses from its canonical JSON to
// an equal value with the same verification result and summary.
func FuzzParse(f *testing.F) {
	for _, s := range samples() {
		f.Add(s.make(f))
	}
	for _, name := range []string{"01_tier0_pass.json", "90_tampered_verdict.json"} {
		data, err := os.ReadFile(filepath.Join(vectorsDir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, tc := range parseCases() {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		if err != nil {
			fs := codec.FindingsOf(err)
			if len(fs) == 0 {
				t.Fatalf("rejection without findings: %v", err)
			}
			for _, f := range fs {
				if f.Offset > int64(len(data)) {
					t.Fatalf("finding %v points past the input (%d bytes)", f, len(data))
				}
			}
			return
		}
		// The content hash is SHA-256 of exactly what canonjson writes.
		if want := sha256.Sum256(canonjson.Canonical(r.Value().Without("signature"))); r.ContentHash() != hex.EncodeToString(want[:]) {
			t.Fatalf("content hash %s, canonjson gives %x", r.ContentHash(), want)
		}
		fs1 := r.Verify()
		s1 := r.Summary()
		canon := canonjson.Canonical(r.Value())
		if bytes.Contains(canon, []byte("Infinity")) || bytes.Contains(canon, []byte("NaN")) {
			return // a float literal that overflowed: Python's spelling is not JSON
		}
		r2, err := Parse(canon)
		if err != nil {
			t.Fatalf("canonical form does not parse: %v\n%s", err, canon)
		}
		if !canonjson.Equal(r.Value(), r2.Value()) {
			t.Fatalf("canonical round trip changed the value:\n%s\n%s", canon, canonjson.Canonical(r2.Value()))
		}
		if fs2 := r2.Verify(); !reflect.DeepEqual(fs1, fs2) {
			t.Fatalf("Verify differs after round trip:\n%v\n%v", fs1, fs2)
		}
		if s2 := r2.Summary(); !reflect.DeepEqual(s1, s2) {
			t.Fatalf("Summary differs after round trip:\n%+v\n%+v", s1, s2)
		}
	})
}
