package replay

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/rvww"
)

// FuzzBundle replays every input that decodes as a witness bundle, under
// its default policy when it names one and under a restricted policy
// otherwise, and renders it: nothing may panic, the plain text must be
// inert for a terminal, and a second replay must give the same bytes. The
// seed corpus is testdata/fuzz/FuzzBundle plus the fixtures and the rvww
// samples.
func FuzzBundle(f *testing.F) {
	for _, dir := range []string{fixtureDir, rvwwSamples} {
		for _, name := range listDir(f, dir, ".rvww") {
			f.Add(readFile(f, filepath.Join(dir, name)))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := rvww.Decode(data)
		if err != nil {
			return
		}
		p, ok := governance.DefaultByHash(b.Header.PolicyHash)
		if !ok {
			p = governance.Restricted()
		}
		render := func() []byte {
			r, err := Bundle(b, BundleOptions{Policy: &p, SignatureVerified: b.Signed(), KeyID: "k"})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := r.WriteText(&out, TextOptions{}); err != nil {
				t.Fatal(err)
			}
			text := out.Len()
			if err := r.WriteText(&out, TextOptions{Color: true}); err != nil {
				t.Fatal(err)
			}
			if err := r.WriteJSON(&out); err != nil {
				t.Fatal(err)
			}
			checkInert(t, "fuzz input", out.Bytes()[:text])
			return out.Bytes()
		}
		if first, second := render(), render(); !bytes.Equal(first, second) {
			t.Fatal("two replays differ")
		}
	})
}
