package inspect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/keys"
)

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want codec.Kind
	}{
		{`{"vrf_version":"1.0"}`, codec.KindVRF},
		{`{"receipt_id":"x"}`, codec.KindVRF},
		{`{"avir_protocol_version":"1.0.0"}`, codec.KindAVIRAttestation},
		{`{"attestation_chain":{}}`, codec.KindAVIRAttestation},
		{`{"avir_version":"1.0.0"}`, codec.KindAVIRSpec},
		{"avir_version: \"1.0.0\"\nsystem: {name: x}\n", codec.KindAVIRSpec},
		{"\xef\xbb\xbf{\"vrf_version\":\"1.0\"}", codec.KindVRF},
		{`{"vrf_version": "1.0", "tier": }`, codec.KindVRF}, // broken JSON, still a receipt
		{`{"hello":1}`, KindUnknown},
		{`[1,2]`, KindUnknown},
		{"just text", KindUnknown},
		{"WVWR\x01\x00", codec.KindRVWW},
		{"RWVW", codec.KindRVWW}, // byte-swapped magic: the decoder explains
		{"\x00\x01\x02", codec.KindRVWW},
		{"\xff\xfe", codec.KindRVWW},
		{"", KindUnknown},
	} {
		if got := Detect([]byte(tc.in)); got != tc.want {
			t.Errorf("Detect(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestGovernanceWiring checks that bundles are evaluated against the
// policy their header names: defaults, a custom policy, or none known.
func TestGovernanceWiring(t *testing.T) {
	ins, err := New()
	if err != nil {
		t.Fatal(err)
	}
	key, err := keys.LoadHMACKey("../../testdata/vectors/rvww/hmac_key.txt")
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("../../testdata/rvww", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	opts := Options{HMACKeys: []keys.HMACKey{key}}
	for _, tc := range []struct {
		file       string
		violations []string
		status     Status
		policy     bool
	}{
		{"valid_solved_autonomous_signed.rvww", nil, Valid, true},
		{"policy_denied_tool_restricted.rvww", []string{"denied_tool"}, Valid, true},
		{"policy_cost_budget_exceeded.rvww", []string{"cost_budget_exceeded"}, Valid, true},
		{"policy_call_budget_exceeded.rvww", []string{"call_budget_exceeded"}, Valid, true},
		{"policy_check_mismatch.rvww", []string{"denied_tool"}, Invalid, true},
		{"policy_mode_mismatch.rvww", nil, Invalid, true},
		{"policy_custom_hash.rvww", nil, Valid, false},
	} {
		res := ins.Inspect(read(tc.file), opts)
		var got []string
		for _, v := range res.Violations {
			got = append(got, v.Code)
		}
		if len(got) != len(tc.violations) || (len(got) > 0 && got[0] != tc.violations[0]) {
			t.Errorf("%s: violations %v, want %v", tc.file, got, tc.violations)
		}
		if res.Status != tc.status {
			t.Errorf("%s: status %v, want %v (%v)", tc.file, res.Status, tc.status, res.Findings)
		}
		if (res.Policy != nil) != tc.policy {
			t.Errorf("%s: policy known = %v, want %v", tc.file, res.Policy != nil, tc.policy)
		}
	}
}

func TestUnknownKindIsMalformed(t *testing.T) {
	ins, err := New()
	if err != nil {
		t.Fatal(err)
	}
	res := ins.Inspect([]byte(`{"hello":1}`), Options{})
	if res.Status != Malformed || len(res.Findings) != 1 || res.Findings[0].Code != "unknown_kind" {
		t.Errorf("got %+v", res)
	}
}

// FuzzInspect runs kind detection and every codec over arbitrary input:
// nothing may panic, and a valid result has an identity.
func FuzzInspect(f *testing.F) {
	ins, err := New()
	if err != nil {
		f.Fatal(err)
	}
	for _, dir := range []string{"vrf", "avir", "rvww", "vectors/vrf", "vectors/avir", "vectors/rvww"} {
		entries, _ := os.ReadDir(filepath.Join("../../testdata", dir))
		for _, e := range entries {
			if b, err := os.ReadFile(filepath.Join("../../testdata", dir, e.Name())); err == nil && !e.IsDir() {
				f.Add(b)
			}
		}
	}
	key, err := keys.LoadHMACKey("../../testdata/vectors/rvww/hmac_key.txt")
	if err != nil {
		f.Fatal(err)
	}
	opts := Options{HMACKeys: []keys.HMACKey{key}}
	f.Fuzz(func(t *testing.T, data []byte) {
		res := ins.Inspect(data, opts)
		if res.Valid() && res.ID == "" {
			t.Fatalf("valid %s without an id", res.Kind)
		}
		if !res.Valid() && len(res.Findings) == 0 {
			t.Fatalf("%s reported %v without findings", res.Kind, res.Status)
		}
	})
}

// FuzzScanTopLevel checks the fast key scan against a full parse: when
// both succeed on an object they see the same keys.
func FuzzScanTopLevel(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":{"c":[1,"x\"}"]},"kind":"rollback"}`))
	f.Add([]byte(`{"vrf_version":"1.0","results":{"details":[{"name":"a,b"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, kind, ok := scanTopLevel(data)
		v, err := canonjson.Parse(data)
		if !ok || err != nil || v.Type() != canonjson.Object {
			return
		}
		if len(keys) != v.Len() {
			t.Fatalf("scan saw %d keys, parse %d", len(keys), v.Len())
		}
		for _, m := range v.Members() {
			if _, ok := keys[m.Key]; !ok {
				t.Fatalf("scan missed key %q", m.Key)
			}
		}
		if k, ok := v.Get("kind"); ok {
			if s, isStr := k.Str(); isStr && kind != s && !strings.Contains(string(data), `\`) {
				t.Fatalf("kind %q, parse says %q", kind, s)
			}
		}
	})
}
