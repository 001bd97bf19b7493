package governance

import (
	"errors"
	"reflect"
	"testing"

	"github.com/proofledger/ledger/codec"
)

// FuzzParsePolicy checks, for any input: ParsePolicy never panics; a
// rejection is a *codec.MalformedError with findings; an accepted policy
// writes back with MarshalJSON into a file that parses to the same policy
// (and so the same hash), and its tool names cannot make the hash input
// ambiguous.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range policySamples(f) {
		f.Add(s.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy(data)
		if err != nil {
			var me *codec.MalformedError
			if !errors.As(err, &me) || len(me.Findings) == 0 {
				t.Fatalf("error %T %v", err, err)
			}
			for _, fd := range me.Findings {
				if fd.Reason == "" || fd.Offset < codec.NoOffset || fd.Offset > int64(len(data)) {
					t.Fatalf("bad finding %+v for %d-byte input", fd, len(data))
				}
			}
			return
		}
		out, err := p.MarshalJSON()
		if err != nil {
			t.Fatalf("accepted policy %+v does not marshal: %v", p, err)
		}
		again, err := ParsePolicy(out)
		if err != nil {
			t.Fatalf("marshalled policy does not parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(again, p) || again.Hash() != p.Hash() {
			t.Fatalf("round trip changed the policy: %+v -> %+v", p, again)
		}
		_ = Evaluate(p, uint8(p.Mode), []Call{{Action: "Read"}, {Index: 1, Action: "Bash", CostMicrodollars: 1}})
	})
}
