package vrf

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

func TestSignErrors(t *testing.T) {
	priv := keyA(t)
	good := build(t, baseDraft("sign_errors"))
	wrongPub := append(bytes.Clone(priv[:32]), keyB()[32:]...)
	tests := []struct {
		name  string
		doc   canonjson.Value
		key   ed25519.PrivateKey
		is    error // errors.Is target; nil: any error
		inMsg string
	}{
		{name: "nil key", doc: good, key: nil, inMsg: "private key is 0 bytes"},
		{name: "seed instead of key", doc: good, key: ed25519.PrivateKey(priv.Seed()), inMsg: "private key is 32 bytes"},
		{name: "key with another public half", doc: good, key: wrongPub, is: codec.ErrInvalid, inMsg: "Ed25519 signature does not verify"},
		{name: "not an object", doc: canonjson.MakeArray(good), key: priv, is: codec.ErrMalformed},
		{name: "schema broken", doc: good.Without("tier"), key: priv, is: codec.ErrMalformed, inMsg: "tier: required field missing"},
		{name: "verdict disagrees", doc: set(good, str(VerdictFail), "verdict"), key: priv, is: codec.ErrInvalid, inMsg: "verdict"},
		{name: "non-finite float", doc: set(good, canonjson.MakeFloat(math.Inf(1)), "metadata", "execution_ms"), key: priv, is: codec.ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Sign(tc.doc, tc.key)
			if err == nil {
				t.Fatalf("Sign succeeded: %s", out)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v does not wrap %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.inMsg) {
				t.Errorf("error %q lacks %q", err, tc.inMsg)
			}
		})
	}
}

// TestSignReplacesSignature re-signs a signed receipt with another key: the
// signature member is replaced in place and the result verifies under the
// new signer only.
func TestSignReplacesSignature(t *testing.T) {
	first := signed(t, build(t, baseDraft("resign")), keyA(t))
	v, err := canonjson.Parse(first)
	if err != nil {
		t.Fatal(err)
	}
	second := signed(t, v, keyB())
	w, err := canonjson.Parse(second)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Members()) != len(v.Members()) || w.Members()[len(w.Members())-1].Key != "signature" {
		t.Fatalf("members changed: %v", w.Members())
	}
	r, err := Parse(second)
	if err != nil {
		t.Fatal(err)
	}
	if fs := r.Verify(); len(fs) != 0 || r.Signer() != signerIDHex(keyB().Public().(ed25519.PublicKey)) {
		t.Errorf("findings %v signer %s", fs, r.Signer())
	}
	r1, _ := Parse(first)
	if r1.ContentHash() != r.ContentHash() {
		t.Error("re-signing changed the content hash")
	}
}

func TestDraft(t *testing.T) {
	tests := []struct {
		name     string
		statuses []string
		verdict  string
		counts   Counts
	}{
		{"all pass", []string{"pass", "pass"}, VerdictPass, Counts{2, 2, 0, 0}},
		{"no checks", nil, VerdictPass, Counts{}},
		{"partial", []string{"pass", "fail"}, VerdictPartial, Counts{2, 1, 1, 0}},
		{"fail", []string{"fail"}, VerdictFail, Counts{1, 0, 1, 0}},
		{"timeout is an error", []string{"pass", "timeout"}, VerdictError, Counts{2, 1, 0, 1}},
		{"error beats fail", []string{"fail", "error"}, VerdictError, Counts{2, 0, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := baseDraft("draft")
			d.Details = nil
			for i, s := range tc.statuses {
				d.Details = append(d.Details, Detail{Name: string(rune('a' + i)), Status: s, DurationMS: 1})
			}
			r, err := Parse(signed(t, build(t, d), keyA(t)))
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict() != tc.verdict || r.Counts() != tc.counts {
				t.Errorf("verdict %q counts %+v, want %q %+v", r.Verdict(), r.Counts(), tc.verdict, tc.counts)
			}
		})
	}
}

func TestDraftDefaults(t *testing.T) {
	d := baseDraft("defaults")
	d.ReceiptID, d.VerifiedAt, d.Metadata.VerifierVersion = "", time.Time{}, ""
	before := time.Now().Truncate(time.Microsecond)
	v := build(t, d)
	after := time.Now()
	r, err := FromValue(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, reason := checkUUIDv4(r.ID()); reason != "" {
		t.Errorf("random receipt_id %q: %s", r.ID(), reason)
	}
	if r.VerifiedAt().Before(before) || r.VerifiedAt().After(after) {
		t.Errorf("verified_at %v not between %v and %v", r.VerifiedAt(), before, after)
	}
	md, _ := v.Get("metadata")
	if vv, _ := md.Get("verifier_version"); !canonjson.Equal(vv, str(DefaultVerifierVersion)) {
		t.Errorf("verifier_version %v", vv)
	}
	v2 := build(t, d)
	if canonjson.Equal(v, v2) {
		t.Error("two drafts without a receipt_id got the same document")
	}
}

func TestDraftRejects(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Draft)
		in   string
	}{
		{"tier", func(d *Draft) { d.Tier = 4 }, "tier"},
		{"status", func(d *Draft) { d.Details[0].Status = "skipped" }, "results.details[0].status"},
		{"receipt id", func(d *Draft) { d.ReceiptID = "a1b2c3d4-e5f6-7890-abcd-ef1234567890" }, "receipt_id"},
		{"missing hash", func(d *Draft) { d.Hashes.Suite = "" }, "hashes.suite_hash"},
		{"bad hash", func(d *Draft) { d.Hashes.Input = "99037697cf294aaf" }, "hashes.input_hash"},
		{"NaN duration", func(d *Draft) { d.Details[1].DurationMS = math.NaN() }, "results.details[1].duration_ms"},
		{"infinite execution time", func(d *Draft) { d.Metadata.ExecutionMS = math.Inf(-1) }, "metadata.execution_ms"},
		{"chain position", func(d *Draft) { d.Chain = &ChainLink{Position: -1} }, "metadata.chain_position"},
		{"previous receipt", func(d *Draft) { d.Chain = &ChainLink{PreviousReceipt: "r-1", Position: 1} }, "metadata.previous_receipt"},
		{"year 10000", func(d *Draft) { d.VerifiedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, "verified_at"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := baseDraft("rejects")
			tc.mod(&d)
			_, err := d.Build()
			if err == nil || !errors.Is(err, codec.ErrMalformed) || !strings.Contains(err.Error(), tc.in) {
				t.Errorf("Build error %v, want ErrMalformed mentioning %q", err, tc.in)
			}
		})
	}
}

func TestShortHash(t *testing.T) {
	// echo -n abc | sha256sum: ba7816bf8f01cfea414140de5dae2223...
	if got := ShortHash([]byte("abc")); got != "sha256:ba7816bf8f01cfea" {
		t.Errorf("ShortHash(abc) = %s", got)
	}
	if reason := checkHashValue(ShortHash(nil)); reason != "" {
		t.Errorf("ShortHash(nil) fails the schema: %s", reason)
	}
}

// pythonReference is the reference implementation's receipt check
// (ClawBizarre verify_server.py, verify_receipt_signature), plus a check
// that the file is exactly Python's json.dumps(indent=2) of itself.
const pythonReference = `
import hashlib, json, sys
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

def verify_receipt_signature(receipt):
    sig = receipt.get("signature")
    if not sig:
        return False, "unsigned"
    content = {k: v for k, v in receipt.items() if k != "signature"}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
    content_hash = hashlib.sha256(canonical.encode()).hexdigest()
    if content_hash != sig["content_hash"]:
        return False, "content hash mismatch"
    algo, pub_hex = sig["signer_id"].split(":", 1)
    if algo != "ed25519" or sig["algorithm"] != "ed25519":
        return False, "algorithm"
    pub = Ed25519PublicKey.from_public_bytes(bytes.fromhex(pub_hex))
    try:
        pub.verify(bytes.fromhex(sig["signature"]), content_hash.encode())
    except InvalidSignature:
        return False, "invalid signature"
    return True, "ok"

out = []
for text in json.load(sys.stdin):
    receipt = json.loads(text)
    ok, why = verify_receipt_signature(receipt)
    out.append({"ok": ok, "why": why, "indent": json.dumps(receipt, indent=2) == text})
json.dump(out, sys.stdout)
`

// TestPythonReference runs the reference verifier over receipts this
// package signs: every one must verify there, and tampered ones must not.
// It is skipped when python3 or its cryptography module is missing.
func TestPythonReference(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	if err := exec.Command(py, "-c", "import cryptography").Run(); err != nil {
		t.Skip("python3 has no cryptography module")
	}
	type input struct {
		name   string
		doc    []byte
		wantOK bool
	}
	var inputs []input
	for _, s := range samples() {
		switch {
		case s.reference:
			inputs = append(inputs, input{s.name, s.make(t), true})
		case s.name == "content_hash_mismatch" || s.name == "bad_signature" || s.name == "chain_tampered_position" || s.name == "signature_wrong_signer":
			inputs = append(inputs, input{s.name, s.make(t), false})
		}
	}
	// Fresh receipts: random ids, the current time, awkward floats and text.
	for i, mod := range []func(*Draft){
		func(d *Draft) {},
		func(d *Draft) { d.Details[0].DurationMS = 1e-7; d.Metadata.ExecutionMS = 1e16 },
		func(d *Draft) { d.Details[0].DurationMS = 0.1 + 0.2; d.Metadata.ExecutionMS = 123456789.125 },
		func(d *Draft) {
			d.Details[0].Output = "tab\t quote\" backslash\\ nul\x00 del\x7f é \u2028 \U0001F600 </script>"
		},
		func(d *Draft) { d.TaskID = "タスク-1"; d.AgentID = "agent/ü" },
	} {
		d := baseDraft("python")
		d.ReceiptID, d.VerifiedAt = "", time.Time{}
		mod(&d)
		inputs = append(inputs, input{"fresh " + string(rune('0'+i)), signed(t, build(t, d), keyA(t)), true})
	}
	texts := make([]string, len(inputs))
	for i, in := range inputs {
		texts[i] = string(in.doc)
	}
	stdin, err := json.Marshal(texts)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", pythonReference)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, stderr.Bytes())
	}
	var results []struct {
		OK     bool   `json:"ok"`
		Why    string `json:"why"`
		Indent bool   `json:"indent"`
	}
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(inputs) {
		t.Fatalf("python3 output %q: %v", out, err)
	}
	for i, in := range inputs {
		res := results[i]
		if res.OK != in.wantOK {
			t.Errorf("%s: reference verifier says %v (%s), want %v", in.name, res.OK, res.Why, in.wantOK)
		}
		if !res.Indent {
			t.Errorf("%s: file is not json.dumps(indent=2) of itself", in.name)
		}
		// And this package agrees with the reference.
		r, err := Parse(in.doc)
		if err != nil {
			t.Errorf("%s: Parse: %v", in.name, err)
			continue
		}
		if ok := len(r.Verify()) == 0; ok != in.wantOK {
			t.Errorf("%s: Verify says valid=%v, reference says %v", in.name, ok, res.OK)
		}
	}
}
