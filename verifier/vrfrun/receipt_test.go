package vrfrun

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/inspect"
	"github.com/proofledger/ledger/codec/vrf"
	"github.com/proofledger/ledger/verifier/sandbox"
)

// testKey is a fixed Ed25519 key for the tests.
func testKey() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
}

// refCanonical writes v (decoded by encoding/json with UseNumber) as the
// reference's signing does: json.dumps(v, sort_keys=True,
// separators=(",", ":")) with ensure_ascii. Written apart from
// codec/canonjson on purpose: numbers are copied as written (receipts
// write Python's repr), keys sorted by UTF-8 bytes (code point order),
// every non-ASCII character escaped as \uXXXX, in UTF-16.
func refCanonical(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		fmt.Fprint(b, x)
	case json.Number:
		b.WriteString(x.String())
	case string:
		b.WriteByte('"')
		for _, r := range x {
			switch {
			case r == '"' || r == '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			case r == '\n':
				b.WriteString(`\n`)
			case r == '\r':
				b.WriteString(`\r`)
			case r == '\t':
				b.WriteString(`\t`)
			case r == '\b':
				b.WriteString(`\b`)
			case r == '\f':
				b.WriteString(`\f`)
			case r >= 0x20 && r < 0x7F:
				b.WriteRune(r)
			default:
				for _, u := range utf16.Encode([]rune{r}) {
					fmt.Fprintf(b, `\u%04x`, u)
				}
			}
		}
		b.WriteByte('"')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			refCanonical(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			refCanonical(b, k)
			b.WriteByte(':')
			refCanonical(b, x[k])
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("unexpected %T", v))
	}
}

// refVerify checks a signed receipt as the reference's
// verify_receipt_signature does: content_hash is the hex SHA-256 of the
// canonical JSON of the receipt without "signature", and the signature
// is Ed25519 over that hex string by the key in signer_id
// ("ed25519:<hex>").
func refVerify(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	sig, ok := doc["signature"].(map[string]any)
	if !ok {
		return errors.New("no signature")
	}
	if sig["algorithm"] != "ed25519" {
		return fmt.Errorf("algorithm %v", sig["algorithm"])
	}
	delete(doc, "signature")
	var canon bytes.Buffer
	refCanonical(&canon, doc)
	sum := sha256.Sum256(canon.Bytes())
	contentHash := hex.EncodeToString(sum[:])
	if sig["content_hash"] != contentHash {
		return fmt.Errorf("content_hash %v, canonical JSON hashes to %s", sig["content_hash"], contentHash)
	}
	signer, _ := sig["signer_id"].(string)
	pubHex, ok := strings.CutPrefix(signer, "ed25519:")
	if !ok {
		return fmt.Errorf("signer_id %q", signer)
	}
	pub, err := hex.DecodeString(pubHex)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("signer_id %q: bad key", signer)
	}
	sigHex, _ := sig["signature"].(string)
	sb, err := hex.DecodeString(sigHex)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, []byte(contentHash), sb) {
		return errors.New("Ed25519 signature does not verify")
	}
	return nil
}

// checkSigned verifies a receipt with codec/inspect and with refVerify.
func checkSigned(t *testing.T, ins *inspect.Inspector, data []byte) *vrf.Receipt {
	t.Helper()
	res := ins.Inspect(data, inspect.Options{})
	if !res.Valid() || res.Kind != codec.KindVRF || res.Form != codec.FormReference || !res.Signed || !res.SignatureChecked {
		t.Fatalf("inspect: status %v kind %s form %s signed %v checked %v findings %v", res.Status, res.Kind, res.Form, res.Signed, res.SignatureChecked, res.Findings)
	}
	if err := refVerify(data); err != nil {
		t.Fatalf("reference signing check: %v\n%s", err, data)
	}
	return res.Receipt
}

// TestReceipt signs results of each tier and checks the receipt's fields
// and signature, and that the independent check notices a change.
func TestReceipt(t *testing.T) {
	ins, err := inspect.New()
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRunner{run: answer(sandbox.Result{Report: []byte(`["fail", "FAIL: got 'é', expected '𝄞'"]`)})}
	res := fakeVerify(t, f, Options{}, `{"task_id": "ünï", "task_type": "code_generation", "specification": {"d": "é"},
		"output": {"content": "x = 1"}, "verification": {"test_suite": {"tests": [{"name": "tëst", "input": "x"}]}}}`, ParseOptions{})
	at := time.Date(2026, 2, 19, 0, 46, 0, 123456000, time.UTC)
	const prev = "0b0e1c4e-7f1a-4c55-9a53-5d7d1f3c2b10"
	data, err := res.Sign(testKey(), ReceiptOptions{
		ReceiptID:  "a1b2c3d4-e5f6-4890-abcd-ef1234567890",
		VerifiedAt: at,
		AgentID:    "agent-7",
		Chain:      &vrf.ChainLink{PreviousReceipt: prev, Position: 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := checkSigned(t, ins, data)
	if r.ID() != "a1b2c3d4-e5f6-4890-abcd-ef1234567890" || !r.VerifiedAt().Equal(at) || r.Tier() != 0 || r.Verdict() != "fail" {
		t.Errorf("id %s at %v tier %d verdict %s", r.ID(), r.VerifiedAt(), r.Tier(), r.Verdict())
	}
	if pos, ok := r.ChainPosition(); r.AgentID() != "agent-7" || r.PreviousReceipt() != prev || !ok || pos != 5 {
		t.Errorf("agent %q previous %q position %d", r.AgentID(), r.PreviousReceipt(), pos)
	}
	if r.TaskID() != "ünï" || r.TaskType() != "code_generation" {
		t.Errorf("task %q %q", r.TaskID(), r.TaskType())
	}
	var doc struct {
		Hashes   map[string]*string `json:"hashes"`
		Metadata map[string]any     `json:"metadata"`
		Results  struct {
			Details []map[string]any `json:"details"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if md := doc.Metadata; md["sandbox"] != "fake-sandbox" || md["sandboxed"] != true || md["language"] != "python" ||
		md["runtime"] != "python3.11" || md["verifier_version"] != vrf.DefaultVerifierVersion {
		t.Errorf("metadata %v", md)
	}
	if h := doc.Hashes["environment_hash"]; h == nil || *h != vrf.ShortHash([]byte("python:"+fakePython)) {
		t.Errorf("environment_hash %v", h)
	}
	if d := doc.Results.Details[0]; d["name"] != "tëst" || d["status"] != "fail" || d["error"] != "FAIL: got 'é', expected '𝄞'" {
		t.Errorf("detail %v", d)
	}

	tampered := bytes.Replace(data, []byte(`"verdict": "fail"`), []byte(`"verdict": "pass"`), 1)
	if bytes.Equal(tampered, data) {
		t.Fatal("no verdict to tamper with")
	}
	if err := refVerify(tampered); err == nil {
		t.Error("the reference check accepts a tampered verdict")
	}

	// Tier 1 without code: environment_hash null, no sandbox, no language.
	res = fakeVerify(t, f, Options{}, `{"output": {"content": "{}"}, "schema": {"type": "object", "required": ["a"]}}`, ParseOptions{Schema: true})
	data, err = res.Sign(testKey(), ReceiptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSigned(t, ins, data)
	doc.Metadata = nil
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if h, ok := doc.Hashes["environment_hash"]; !ok || h != nil {
		t.Errorf("tier 1 environment_hash %v, want null", h)
	}
	if _, ok := doc.Metadata["sandbox"]; ok || doc.Metadata["sandboxed"] != false || doc.Metadata["language"] != nil {
		t.Errorf("tier 1 metadata %v", doc.Metadata)
	}
}

// TestReceiptRefusesBadKey checks that a key of the wrong size is an
// error, not a panic.
func TestReceiptRefusesBadKey(t *testing.T) {
	f := &fakeRunner{run: answer(sandbox.Result{})}
	res := fakeVerify(t, f, Options{}, `{"schema": {}}`, ParseOptions{Schema: true})
	if _, err := res.Sign(ed25519.PrivateKey(make([]byte, 10)), ReceiptOptions{}); err == nil {
		t.Fatal("a 10-byte key signed")
	}
}
