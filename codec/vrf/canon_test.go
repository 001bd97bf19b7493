package vrf

import (
	"bytes"
	"testing"

	"github.com/proofledger/ledger/codec/canonjson"
)

// TestCanonicalBody checks the hashed body against canonjson on key orders
// that matter: code point order across the BMP, astral planes and lone
// surrogates, nested arrays of objects, and a signature member in any
// position.
func TestCanonicalBody(t *testing.T) {
	docs := []string{
		`{}`,
		`{"signature":{"b":1,"a":2}}`,
		`{"b":[{"z":1,"y":[{"d":1,"c":2}]},3,[{"f":0,"e":0}]],"a":null,"signature":null}`,
		`{"\u00e9":1,"z":2,"\ud83d\ude00":3,"\uffff":4,"\ud800":5,"\ue000":6,"A":7,"":8}`,
		`{"signature":1,"s":2,"signaturf":3,"signatur":4}`,
		`[{"b":1,"a":2},{"signature":3}]`,
		`"plain"`,
	}
	for _, s := range samples() {
		docs = append(docs, string(s.make(t)))
	}
	for _, doc := range docs {
		v, err := canonjson.Parse([]byte(doc))
		if err != nil {
			continue // the syntax samples
		}
		got, sorted := canonicalBody(v, 0)
		want := canonjson.Canonical(v.Without("signature"))
		if !bytes.Equal(got, want) {
			t.Errorf("canonicalBody(%.80s):\n got %s\nwant %s", doc, got, want)
		}
		if u, w := canonjson.CanonicalUTF8(sorted), canonjson.CanonicalUTF8(v.Without("signature")); !bytes.Equal(u, w) {
			t.Errorf("UTF-8 form of the sorted value differs for %.80s", doc)
		}
	}
}
