package rvww

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/proofledger/ledger/codec"
)

// FuzzDecode checks, for any input: Decode and Verify never panic; a
// rejection is a *codec.MalformedError whose findings lie inside the input;
// a bundle that decodes re-encodes (with the sample key when signed) into
// bytes that decode to the same content; and when the input was already in
// the reference's canonical form (sections in reference order, consistent
// totals), the re-encoding reproduces it byte for byte up to the signature.
func FuzzDecode(f *testing.F) {
	key := readKey(f)
	for _, s := range samples(f) {
		f.Add(s.data)
	}
	for _, name := range []string{vectorFile, "90_tampered_spec_byte.rvww"} {
		data, err := os.ReadFile(filepath.Join(vectorDir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Decode(data)
		if err != nil {
			var me *codec.MalformedError
			if !errors.As(err, &me) || len(me.Findings) == 0 || b != nil {
				t.Fatalf("Decode error %T %v with bundle %v", err, err, b)
			}
			for _, fd := range me.Findings {
				if fd.Code != "malformed" || fd.Offset < codec.NoOffset || fd.Offset > int64(len(data)) || fd.Reason == "" {
					t.Fatalf("bad finding %+v for %d-byte input", fd, len(data))
				}
			}
			return
		}
		fs := b.Verify([]Key{{Name: "k", Secret: key}})
		_ = b.Summary()
		if b.Signed() && len(b.Verify(nil)) == 0 {
			t.Fatal("signed bundle verified without a key")
		}

		var k []byte
		if b.Signed() {
			k = key
		}
		out, err := Encode(b, k)
		if err != nil {
			t.Fatalf("a decoded bundle does not encode: %v", err)
		}
		b2, err := Decode(out)
		if err != nil {
			t.Fatalf("re-encoded bundle does not decode: %v", err)
		}
		if diff := sameContent(b, b2); diff != "" {
			t.Fatalf("re-encoding changed the content: %s", diff)
		}
		if fs2 := b2.Verify([]Key{{Name: "k", Secret: key}}); len(fs2) != 0 {
			t.Fatalf("re-encoded bundle does not verify: %v", fs2)
		}
		if !totalsMismatch(fs) && canonicalOrder(data, b.Signed()) {
			n := len(data)
			if b.Signed() {
				n -= SignatureSize
			}
			if !bytes.Equal(out[:n], data[:n]) {
				t.Fatalf("canonical input not reproduced:\n in %x\nout %x", data, out)
			}
		}
	})
}

func totalsMismatch(fs []codec.Finding) bool {
	for _, f := range fs {
		if f.Code == CodeHeaderTotalMismatch {
			return true
		}
	}
	return false
}

// canonicalOrder reports whether a well-formed bundle's sections are in the
// order Encode writes: known tags ascending, then unknown tags.
func canonicalOrder(data []byte, signed bool) bool {
	end := len(data)
	if signed {
		end -= SignatureSize
	}
	last, unknownSeen := uint16(0), false
	for pos := HeaderSize; pos < end; {
		tag := binary.LittleEndian.Uint16(data[pos:])
		pos += SectionHeaderSize + int(binary.LittleEndian.Uint32(data[pos+2:]))
		if !isKnownTag(tag) {
			unknownSeen = true
			continue
		}
		if unknownSeen || tag < last {
			return false
		}
		last = tag
	}
	return true
}
