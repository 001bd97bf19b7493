package vrf

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// TestVerifyCases covers verification paths the samples do not.
func TestVerifyCases(t *testing.T) {
	priv := keyA(t)
	base := func(t *testing.T) canonjson.Value { return build(t, baseDraft("verify")) }
	tests := []struct {
		name string
		doc  func(t *testing.T) []byte
		want []string // "code@field", in order; nil means valid
		in   string   // substring of the joined reasons
	}{
		{
			name: "content_hash in upper case",
			doc: func(t *testing.T) []byte {
				return tamper(t, signedAs(t, base(t), priv, nil), func(v canonjson.Value) canonjson.Value {
					sig, _ := v.Get("signature")
					ch, _ := sig.Get("content_hash")
					s, _ := ch.Str()
					// Re-sign the upper-case string: the message is the string as written.
					up := strings.ToUpper(s)
					v = set(v, str(up), "signature", "content_hash")
					return set(v, str(hex.EncodeToString(ed25519.Sign(priv, []byte(up)))), "signature", "signature")
				})
			},
		},
		{
			name: "sha256: prefixed content_hash signed as written",
			doc: func(t *testing.T) []byte {
				return signedAs(t, base(t), priv, func(s *signing) { s.hashPrefix = hashPrefix })
			},
		},
		{
			name: "upper-case signature hex",
			doc: func(t *testing.T) []byte {
				return tamper(t, signedAs(t, base(t), priv, nil), func(v canonjson.Value) canonjson.Value {
					sig, _ := v.Get("signature")
					sv, _ := sig.Get("signature")
					s, _ := sv.Str()
					return set(v, str(strings.ToUpper(s)), "signature", "signature")
				})
			},
		},
		{
			name: "signed with ensure_ascii=False but no non-ASCII text is the same hash",
			doc: func(t *testing.T) []byte {
				return signedAs(t, base(t), priv, func(s *signing) { s.canonical = canonjson.CanonicalUTF8 })
			},
		},
		{
			name: "tampered and badly signed",
			doc: func(t *testing.T) []byte {
				return tamper(t, signedAs(t, base(t), priv, nil), func(v canonjson.Value) canonjson.Value {
					v = set(v, str("python3.13"), "metadata", "runtime")
					return set(v, str(strings.Repeat("ab", 64)), "signature", "signature")
				})
			},
			want: []string{"content_hash_mismatch@signature.content_hash", "signature_invalid@signature.signature"},
			in:   "(canonical JSON, ensure_ascii=True)",
		},
		{
			name: "non-ASCII receipt tampered: both canonicalizations named",
			doc: func(t *testing.T) []byte {
				v := set(base(t), str("naïve"), "task_type")
				return tamper(t, signedAs(t, v, priv, nil), func(v canonjson.Value) canonjson.Value {
					return set(v, str("naïf"), "task_type")
				})
			},
			want: []string{"content_hash_mismatch@signature.content_hash"},
			in:   "(ensure_ascii=False); the signature is valid",
		},
		{
			name: "content_hash garbage",
			doc: func(t *testing.T) []byte {
				return tamper(t, signedAs(t, base(t), priv, nil), func(v canonjson.Value) canonjson.Value {
					return set(v, str("not a hash"), "signature", "content_hash")
				})
			},
			want: []string{"content_hash_mismatch@signature.content_hash", "signature_invalid@signature.signature"},
			in:   `content_hash is "not a hash"`,
		},
		{
			name: "counts sum disagrees with total only",
			doc: func(t *testing.T) []byte {
				v := set(base(t), num("1"), "results", "failed")
				return signedAs(t, set(v, str(VerdictPartial), "verdict"), priv, nil)
			},
			want: []string{"count_mismatch@results.failed", "count_mismatch@results.total"},
			in:   "results.total is 3 but passed+failed+errors is 4",
		},
		{
			name: "counts that overflow 64 bits when added",
			doc: func(t *testing.T) []byte {
				v := base(t)
				for _, k := range []string{"total", "passed", "failed", "errors"} {
					v = set(v, num("9223372036854775807"), "results", k)
				}
				return signedAs(t, set(v, str(VerdictError), "verdict"), priv, nil)
			},
			want: []string{
				"count_mismatch@results.passed", "count_mismatch@results.failed",
				"count_mismatch@results.errors", "count_mismatch@results.total",
			},
			in: "passed+failed+errors is more than 2^64",
		},
		{
			name: "signature over another receipt",
			doc: func(t *testing.T) []byte {
				other := build(t, baseDraft("other"))
				a, err := canonjson.Parse(signedAs(t, other, priv, nil))
				if err != nil {
					t.Fatal(err)
				}
				sig, _ := a.Get("signature")
				return canonjson.Indent(base(t).With("signature", sig))
			},
			want: []string{"content_hash_mismatch@signature.content_hash"},
			in:   "the signature is valid for the stated content_hash",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(tc.doc(t))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			fs := r.Verify()
			var got, reasons []string
			for _, f := range fs {
				got = append(got, f.Code+"@"+f.Field)
				reasons = append(reasons, f.Reason)
				if f.Offset != codec.NoOffset {
					t.Errorf("finding %v has an offset", f)
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("findings %v, want %v", fs, tc.want)
			}
			if !strings.Contains(strings.Join(reasons, "\n"), tc.in) {
				t.Errorf("reasons %q lack %q", reasons, tc.in)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	r, err := Parse(chain(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary()
	pub := keyB().Public().(ed25519.PublicKey)
	if s.Kind != codec.KindVRF || s.Form != codec.FormReference || s.ID != sampleID("chain_2") ||
		!s.Signed || !s.SignatureChecked || s.Signer != signerIDHex(pub) || s.Subject != "agent-7f3a" ||
		!s.Time.Equal(chainDraft(2).VerifiedAt) {
		t.Errorf("summary %+v", s)
	}
	facts := map[string]string{}
	for _, f := range s.Facts {
		facts[f.Label] = f.Value
	}
	want := map[string]string{
		"verdict":          "pass",
		"tier":             "0",
		"results":          "3/3 passed, 0 failed, 0 errors",
		"task":             "acp-tx-902 (code_generation)",
		"agent":            "agent-7f3a",
		"chain":            "previous " + sampleID("chain_1") + " at position 1",
		"content hash":     r.ContentHash(),
		"canonicalization": canonASCII.String(),
		"signer id":        signerHex.String(),
	}
	for k, v := range want {
		if facts[k] != v {
			t.Errorf("fact %q = %q, want %q", k, facts[k], v)
		}
	}
	// The content hash is what a reference signer writes.
	body, _ := canonjson.Parse(chain(t, 2))
	sum := sha256.Sum256(canonjson.Canonical(body.Without("signature")))
	if r.ContentHash() != hex.EncodeToString(sum[:]) {
		t.Errorf("content hash %s", r.ContentHash())
	}
	// SignerKey is a copy.
	k := r.SignerKey()
	k[0] ^= 0xff
	if r.Signer() != signerIDHex(pub) || len(r.Verify()) != 0 {
		t.Error("modifying SignerKey's result changed the receipt")
	}
}

func chain(tb testing.TB, i int) []byte {
	return signed(tb, build(tb, chainDraft(i)), keyB())
}

// TestVerifyConcurrent runs Verify and Summary from many goroutines; with
// -race it proves the receipt is not mutated after Parse.
func TestVerifyConcurrent(t *testing.T) {
	r, err := Parse(chain(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if fs := r.Verify(); len(fs) != 0 {
				t.Errorf("Verify: %v", fs)
			}
			_ = r.Summary()
		})
	}
	wg.Wait()
}
