package attrs

import (
	"bytes"
	"errors"
	"testing"

	"github.com/proofledger/ledger/codec/canonjson"
)

// FuzzDecode decodes JSON as the attrs of each kind: no input may panic;
// an error is a *FieldError wrapping ErrInvalid; an object that decodes
// re-encodes to the same canonical JSON (so the decoders accept nothing
// Of could not have written).
func FuzzDecode(f *testing.F) {
	for i, k := range kinds {
		f.Add(uint8(i), []byte(k.valid))
	}
	f.Add(uint8(2), []byte(`{"outcome":"unknown(200)","mode":9,"policy":"0102030405060708","policy_known":false,"cost":0,"latency_ms":0,"tokens":0,"retries":0,"tool_calls":0,"evidence_complete":false}`))
	f.Add(uint8(0), []byte(`{"verdict":"error","tier":3,"total":2,"passed":1,"failed":0,"errors":1}`))
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		v, err := canonjson.Parse(data)
		if err != nil {
			return
		}
		k := kinds[int(kind)%len(kinds)]
		d := k.new()
		if err := d.Decode(v); err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("%s: error %v is no *FieldError wrapping ErrInvalid", k.name, err)
			}
			if n := len(err.Error()); n > 1000 {
				t.Fatalf("%s: error of %d bytes", k.name, n)
			}
			return
		}
		if got, want := canonjson.Canonical(d.Value()), canonjson.Canonical(v); !bytes.Equal(got, want) {
			t.Fatalf("%s: %s decodes and re-encodes to %s", k.name, want, got)
		}
	})
}
