package vrf

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

var update = flag.Bool("update", false, "rewrite golden files and generated samples")

const (
	samplesDir = "../../testdata/vrf"
	vectorsDir = "../../testdata/vectors/vrf"
)

// keyA is the reference vectors' key (testdata/vectors/vrf/keyA_key.json).
func keyA(tb testing.TB) ed25519.PrivateKey {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(vectorsDir, "keyA_key.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var k struct {
		Seed string `json:"private_seed_hex"`
	}
	if err := json.Unmarshal(data, &k); err != nil {
		tb.Fatal(err)
	}
	seed, err := hex.DecodeString(k.Seed)
	if err != nil || len(seed) != ed25519.SeedSize {
		tb.Fatalf("keyA seed: %v", err)
	}
	return ed25519.NewKeyFromSeed(seed)
}

// keyB is a second deterministic key, written to testdata/vrf/keyB_key.json
// in the vectors' key file shape.
func keyB() ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("proofledger codec/vrf sample key B"))
	return ed25519.NewKeyFromSeed(seed[:])
}

func keyFile(name string, priv ed25519.PrivateKey) []byte {
	pub := priv.Public().(ed25519.PublicKey)
	v := canonjson.MakeObject(
		canonjson.Member{Key: "name", Value: canonjson.MakeString(name)},
		canonjson.Member{Key: "private_seed_hex", Value: canonjson.MakeString(hex.EncodeToString(priv.Seed()))},
		canonjson.Member{Key: "public_key_raw_hex", Value: canonjson.MakeString(hex.EncodeToString(pub))},
		canonjson.Member{Key: "public_key_raw_b64", Value: canonjson.MakeString(signerIDRawBase64(pub))},
		canonjson.Member{Key: "public_key_spki_der_b64", Value: canonjson.MakeString(signerIDSPKIBase64(pub))},
		canonjson.Member{Key: "reference_signer_id", Value: canonjson.MakeString(signerIDHex(pub))},
	)
	return canonjson.Indent(v)
}

// sampleID derives a fixed version 4 UUID from a name.
func sampleID(name string) string {
	sum := sha256.Sum256([]byte("vrf sample " + name))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

var sampleEpoch = time.Date(2026, 2, 19, 0, 46, 0, 123456000, time.UTC)

// baseDraft is a tier 0, all-pass reference receipt.
func baseDraft(name string) Draft {
	return Draft{
		ReceiptID:  sampleID(name),
		VerifiedAt: sampleEpoch,
		Tier:       0,
		Details: []Detail{
			{Name: "basic_sort", Status: StatusPass, DurationMS: 8.25},
			{Name: "empty_list", Status: StatusPass, DurationMS: 2.5},
			{Name: "large_input", Status: StatusPass, DurationMS: 45.125},
		},
		Hashes: Hashes{
			Input:       ShortHash([]byte("sort a list of integers")),
			Output:      ShortHash([]byte("def sort(xs): return sorted(xs)")),
			Suite:       ShortHash([]byte("basic_sort empty_list large_input")),
			Environment: ShortHash([]byte("python3.12 subprocess")),
		},
		Metadata: Metadata{
			VerifierVersion: "clawbizarre-verify/1.0",
			ExecutionMS:     55.875,
			Sandboxed:       true,
			Language:        "python",
			Runtime:         "python3.12",
		},
		TaskID:   "acp-tx-789",
		TaskType: "code_generation",
	}
}

func build(tb testing.TB, d Draft) canonjson.Value {
	tb.Helper()
	v, err := d.Build()
	if err != nil {
		tb.Fatalf("build: %v", err)
	}
	return v
}

func signed(tb testing.TB, v canonjson.Value, priv ed25519.PrivateKey) []byte {
	tb.Helper()
	out, err := Sign(v, priv)
	if err != nil {
		tb.Fatalf("sign: %v", err)
	}
	return out
}

// signedAs signs without Sign's self-check, for receipts made the way
// other producers make them and for documents that are wrong on purpose.
func signedAs(tb testing.TB, v canonjson.Value, priv ed25519.PrivateKey, mod func(*signing)) []byte {
	tb.Helper()
	cfg := referenceSigning()
	cfg.skipCheck = true
	if mod != nil {
		mod(&cfg)
	}
	out, err := sign(v, priv, cfg)
	if err != nil {
		tb.Fatalf("sign: %v", err)
	}
	return out
}

// set returns v with the value at path replaced by val. Path elements
// that index arrays are decimal numbers.
func set(v, val canonjson.Value, path ...string) canonjson.Value {
	if len(path) == 0 {
		return val
	}
	if v.Type() == canonjson.Array {
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || i >= v.Len() {
			panic("set: bad index " + path[0])
		}
		elems := slices.Clone(v.Elems())
		elems[i] = set(elems[i], val, path[1:]...)
		return canonjson.MakeArray(elems...)
	}
	child, _ := v.Get(path[0])
	return v.With(path[0], set(child, val, path[1:]...))
}

// del returns v without the member at path.
func del(v canonjson.Value, path ...string) canonjson.Value {
	if len(path) == 1 {
		return v.Without(path[0])
	}
	if v.Type() == canonjson.Array {
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || i >= v.Len() {
			panic("del: bad index " + path[0])
		}
		elems := slices.Clone(v.Elems())
		elems[i] = del(elems[i], path[1:]...)
		return canonjson.MakeArray(elems...)
	}
	child, _ := v.Get(path[0])
	return v.With(path[0], del(child, path[1:]...))
}

func str(s string) canonjson.Value { return canonjson.MakeString(s) }

func num(lit string) canonjson.Value {
	v, ok := canonjson.MakeNumber(lit)
	if !ok {
		panic("num: bad literal " + lit)
	}
	return v
}

// tamper edits a signed document after signing.
func tamper(tb testing.TB, doc []byte, edit func(canonjson.Value) canonjson.Value) []byte {
	tb.Helper()
	v, err := canonjson.Parse(doc)
	if err != nil {
		tb.Fatalf("tamper: %v", err)
	}
	return canonjson.Indent(edit(v))
}

// specDoc is a spec-text form receipt, shaped like the specification's
// complete tier 0 example.
func specDoc(name string) canonjson.Value {
	type m = canonjson.Member
	full := func(s string) canonjson.Value {
		sum := sha256.Sum256([]byte(s))
		return str(hashPrefix + hex.EncodeToString(sum[:]))
	}
	detail := func(name, expected, actual string, ms int64) canonjson.Value {
		return canonjson.MakeObject(
			m{Key: "name", Value: str(name)}, m{Key: "status", Value: str("pass")},
			m{Key: "expected", Value: str(expected)}, m{Key: "actual", Value: str(actual)},
			m{Key: "elapsed_ms", Value: canonjson.MakeInt(ms)},
		)
	}
	return canonjson.MakeObject(
		m{Key: "vrf_version", Value: str("1.0")},
		m{Key: "receipt_id", Value: str(sampleID(name))},
		m{Key: "verified_at", Value: str("2026-02-19T00:46:00Z")},
		m{Key: "tier", Value: canonjson.MakeInt(0)},
		m{Key: "verdict", Value: str("pass")},
		m{Key: "task", Value: canonjson.MakeObject(
			m{Key: "task_id", Value: str("acp-tx-789")},
			m{Key: "task_type", Value: str("code_generation")},
			m{Key: "description", Value: str("Sort a list of integers")},
		)},
		m{Key: "results", Value: canonjson.MakeObject(
			m{Key: "total", Value: canonjson.MakeInt(3)},
			m{Key: "passed", Value: canonjson.MakeInt(3)},
			m{Key: "failed", Value: canonjson.MakeInt(0)},
			m{Key: "errors", Value: canonjson.MakeInt(0)},
			m{Key: "details", Value: canonjson.MakeArray(
				detail("basic_sort", "[1,2,3]", "[1,2,3]", 8),
				detail("empty_list", "[]", "[]", 2),
				detail("large_input", "sorted", "sorted", 45),
			)},
		)},
		m{Key: "hashes", Value: canonjson.MakeObject(
			m{Key: "specification", Value: full("sort a list of integers")},
			m{Key: "output", Value: full("def sort(xs): return sorted(xs)")},
			m{Key: "tests", Value: full("basic_sort empty_list large_input")},
		)},
		m{Key: "metadata", Value: canonjson.MakeObject(
			m{Key: "verifier", Value: str("clawbizarre-verify/1.0")},
			m{Key: "execution_ms", Value: canonjson.MakeInt(55)},
			m{Key: "sandbox", Value: str("subprocess")},
			m{Key: "structural", Value: canonjson.MakeBool(true)},
			m{Key: "language", Value: str("python")},
			m{Key: "runtime", Value: str("python3.12")},
		)},
	)
}

// Expected outcomes of a sample.
const (
	wantValid     = "valid"     // parses and verifies
	wantMalformed = "malformed" // Parse fails with the finding
	wantInvalid   = "invalid"   // parses, Verify reports the finding
)

type sample struct {
	name      string // file name without ".json"
	outcome   string
	form      codec.Form // for valid samples
	code      string     // expected finding code (malformed/invalid)
	field     string     // expected finding field
	reference bool       // signed as the reference does: the Python check must accept it
	make      func(tb testing.TB) []byte
}

// refMalformed builds a reference receipt, edits it, and signs it (so that
// only the edit is wrong).
func refMalformed(name string, edit func(canonjson.Value) canonjson.Value) func(tb testing.TB) []byte {
	return func(tb testing.TB) []byte {
		return signedAs(tb, edit(build(tb, baseDraft(name))), keyA(tb), nil)
	}
}

func chainDraft(i int) Draft {
	d := baseDraft(fmt.Sprintf("chain_%d", i))
	d.VerifiedAt = sampleEpoch.Add(time.Duration(i) * time.Hour)
	d.AgentID = "agent-7f3a"
	d.TaskID = fmt.Sprintf("acp-tx-%d", 900+i)
	link := &ChainLink{Position: int64(i - 1)}
	if i > 1 {
		link.PreviousReceipt = sampleID(fmt.Sprintf("chain_%d", i-1))
	}
	d.Chain = link
	return d
}

func samples() []sample {
	ok := func(name string, form codec.Form, reference bool, mk func(tb testing.TB) []byte) sample {
		return sample{name: name, outcome: wantValid, form: form, reference: reference, make: mk}
	}
	bad := func(name, code, field string, mk func(tb testing.TB) []byte) sample {
		return sample{name: name, outcome: wantMalformed, code: code, field: field, make: mk}
	}
	inv := func(name, code, field string, mk func(tb testing.TB) []byte) sample {
		return sample{name: name, outcome: wantInvalid, code: code, field: field, make: mk}
	}
	ref := func(name string, mod func(*Draft)) func(tb testing.TB) []byte {
		return func(tb testing.TB) []byte {
			d := baseDraft(name)
			if mod != nil {
				mod(&d)
			}
			return signed(tb, build(tb, d), keyA(tb))
		}
	}
	refOK := ref("ref_tier0_pass", nil)
	chain := func(i int) func(tb testing.TB) []byte {
		return func(tb testing.TB) []byte { return signed(tb, build(tb, chainDraft(i)), keyB()) }
	}
	spec := func(name string, mod func(*signing)) func(tb testing.TB) []byte {
		return func(tb testing.TB) []byte { return signedAs(tb, specDoc(name), keyA(tb), mod) }
	}
	edit := refMalformed

	return []sample{
		// Valid receipts.
		ok("ref_tier0_pass", codec.FormReference, true, refOK),
		ok("ref_tier1_null_environment", codec.FormReference, true, ref("ref_tier1_null_environment", func(d *Draft) {
			d.Tier = 1
			d.Hashes.Environment = ""
			d.Metadata.Language, d.Metadata.Runtime = "", ""
			d.TaskType = "data_processing"
			d.Details = []Detail{
				{Name: "is_valid_json", Status: StatusPass, DurationMS: 0.125},
				{Name: "has_name_field", Status: StatusPass, DurationMS: 0.0625},
			}
		})),
		ok("ref_partial", codec.FormReference, true, ref("ref_partial", func(d *Draft) {
			d.Details[1].Status = StatusFail
			d.Details[1].Output = "expected [] got None"
		})),
		ok("ref_fail", codec.FormReference, true, ref("ref_fail", func(d *Draft) {
			d.Details = []Detail{
				{Name: "basic_sort", Status: StatusFail, DurationMS: 7.5, Output: "[3, 1, 2]"},
				{Name: "empty_list", Status: StatusFail, DurationMS: 1.25, Output: "None"},
			}
		})),
		ok("ref_error_timeout", codec.FormReference, true, ref("ref_error_timeout", func(d *Draft) {
			d.Details[1] = Detail{Name: "empty_list", Status: StatusError, DurationMS: 3.5, Error: "IndexError: list index out of range"}
			d.Details[2] = Detail{Name: "large_input", Status: StatusTimeout, DurationMS: 5000.0, Error: "timed out after 5000 ms"}
		})),
		ok("ref_non_ascii", codec.FormReference, true, ref("ref_non_ascii", func(d *Draft) {
			d.TaskType = "translation"
			d.Details = []Detail{
				{Name: "accents", Status: StatusPass, DurationMS: 1.5, Output: "café déjà vu"},
				{Name: "astral", Status: StatusPass, DurationMS: 2.0, Output: "clef \U0001D11E ok ✓"},
			}
		})),
		ok("ref_uppercase_receipt_id", codec.FormReference, true, ref("ref_uppercase_receipt_id", func(d *Draft) {
			d.ReceiptID = strings.ToUpper(sampleID("ref_uppercase_receipt_id"))
		})),
		ok("ref_content_hash_prefixed", codec.FormReference, false, func(tb testing.TB) []byte {
			return signedAs(tb, build(tb, baseDraft("ref_content_hash_prefixed")), keyA(tb), func(s *signing) {
				s.hashPrefix, s.messageBare = hashPrefix, true
			})
		}),
		ok("spec_signer_spki", codec.FormSpec, false, spec("spec_signer_spki", func(s *signing) { s.signerID = signerIDSPKIBase64 })),
		ok("spec_signer_raw_base64", codec.FormSpec, false, func(tb testing.TB) []byte {
			return signedAs(tb, specDoc("spec_signer_raw_base64"), keyB(), func(s *signing) { s.signerID = signerIDRawBase64 })
		}),
		ok("spec_utf8_canonical", codec.FormSpec, false, func(tb testing.TB) []byte {
			v := set(specDoc("spec_utf8_canonical"), str("Trier une liste d’entiers — «rapide»"), "task", "description")
			return signedAs(tb, v, keyA(tb), func(s *signing) {
				s.signerID = signerIDSPKIBase64
				s.canonical = canonjson.CanonicalUTF8
			})
		}),
		ok("unsigned", codec.FormReference, false, func(tb testing.TB) []byte {
			return canonjson.Indent(build(tb, baseDraft("unsigned")))
		}),
		ok("chain_1", codec.FormReference, true, chain(1)),
		ok("chain_2", codec.FormReference, true, chain(2)),
		ok("chain_3", codec.FormReference, true, chain(3)),

		// Syntax.
		bad("invalid_json", "json_syntax", "", func(tb testing.TB) []byte {
			doc := refOK(tb)
			return doc[:len(doc)/2]
		}),
		bad("duplicate_key", "json_syntax", "", func(tb testing.TB) []byte {
			doc := refOK(tb)
			return bytes.Replace(doc, []byte(`"verdict": "pass",`), []byte(`"verdict": "pass",`+"\n  "+`"verdict": "fail",`), 1)
		}),
		bad("not_an_object", "malformed", "", func(tb testing.TB) []byte {
			return canonjson.Indent(canonjson.MakeArray(build(tb, baseDraft("not_an_object"))))
		}),

		// Schema: required fields and types.
		bad("missing_required_field", "malformed", "verdict", edit("missing_required_field", func(v canonjson.Value) canonjson.Value {
			return v.Without("verdict")
		})),
		bad("wrong_type_chain_position", "malformed", "metadata.chain_position", func(tb testing.TB) []byte {
			return signedAs(tb, set(build(tb, chainDraft(2)), str("1"), "metadata", "chain_position"), keyB(), nil)
		}),
		bad("wrong_vrf_version", "malformed", "vrf_version", edit("wrong_vrf_version", func(v canonjson.Value) canonjson.Value {
			return set(v, str("1.1"), "vrf_version")
		})),
		bad("bad_uuid_version", "malformed", "receipt_id", edit("bad_uuid_version", func(v canonjson.Value) canonjson.Value {
			id := []byte(sampleID("bad_uuid_version"))
			id[14] = '1'
			return set(v, str(string(id)), "receipt_id")
		})),
		bad("bad_uuid_variant", "malformed", "receipt_id", edit("bad_uuid_variant", func(v canonjson.Value) canonjson.Value {
			id := []byte(sampleID("bad_uuid_variant"))
			id[19] = 'c'
			return set(v, str(string(id)), "receipt_id")
		})),
		bad("bad_uuid_syntax", "malformed", "receipt_id", edit("bad_uuid_syntax", func(v canonjson.Value) canonjson.Value {
			return set(v, str("a1b2c3d4-e5f6-7890-abcd-ef123456789"), "receipt_id")
		})),
		bad("bad_timestamp_offset", "malformed", "verified_at", edit("bad_timestamp_offset", func(v canonjson.Value) canonjson.Value {
			return set(v, str("2026-02-19T01:46:00.123456+01:00"), "verified_at")
		})),
		bad("bad_timestamp_calendar", "malformed", "verified_at", edit("bad_timestamp_calendar", func(v canonjson.Value) canonjson.Value {
			return set(v, str("2026-02-30T00:46:00+00:00"), "verified_at")
		})),
		bad("bad_timestamp_fraction", "malformed", "verified_at", edit("bad_timestamp_fraction", func(v canonjson.Value) canonjson.Value {
			return set(v, str("2026-02-19T00:46:00.1234567890Z"), "verified_at")
		})),
		bad("bad_timestamp_no_zone", "malformed", "verified_at", edit("bad_timestamp_no_zone", func(v canonjson.Value) canonjson.Value {
			return set(v, str("2026-02-19T00:46:00.123456"), "verified_at")
		})),
		bad("bad_tier_range", "malformed", "tier", edit("bad_tier_range", func(v canonjson.Value) canonjson.Value {
			return set(v, num("7"), "tier")
		})),
		bad("bad_tier_float", "malformed", "tier", edit("bad_tier_float", func(v canonjson.Value) canonjson.Value {
			return set(v, num("0.0"), "tier")
		})),
		bad("bad_verdict_enum", "malformed", "verdict", edit("bad_verdict_enum", func(v canonjson.Value) canonjson.Value {
			return set(v, str("passed"), "verdict")
		})),
		bad("negative_count", "malformed", "results.failed", edit("negative_count", func(v canonjson.Value) canonjson.Value {
			return set(v, num("-1"), "results", "failed")
		})),
		bad("details_not_array", "malformed", "results.details", edit("details_not_array", func(v canonjson.Value) canonjson.Value {
			return set(v, canonjson.MakeObject(), "results", "details")
		})),
		bad("bad_detail_item", "malformed", "results.details[1]", edit("bad_detail_item", func(v canonjson.Value) canonjson.Value {
			return set(v, str("empty_list: pass"), "results", "details", "1")
		})),
		bad("missing_detail_name", "malformed", "results.details[0].name", edit("missing_detail_name", func(v canonjson.Value) canonjson.Value {
			return del(v, "results", "details", "0", "name")
		})),
		bad("bad_detail_status", "malformed", "results.details[2].status", edit("bad_detail_status", func(v canonjson.Value) canonjson.Value {
			return set(v, str("skipped"), "results", "details", "2", "status")
		})),
		bad("metadata_not_object", "malformed", "metadata", edit("metadata_not_object", func(v canonjson.Value) canonjson.Value {
			return set(v, str("clawbizarre-verify/1.0"), "metadata")
		})),
		bad("task_wrong_type", "malformed", "task", edit("task_wrong_type", func(v canonjson.Value) canonjson.Value {
			return set(v, str("acp-tx-789"), "task")
		})),
		bad("task_id_conflict", "malformed", "task.task_id", edit("task_id_conflict", func(v canonjson.Value) canonjson.Value {
			return set(v, canonjson.MakeObject(canonjson.Member{Key: "task_id", Value: str("acp-tx-790")}), "task")
		})),
		bad("agent_id_wrong_type", "malformed", "agent_id", edit("agent_id_wrong_type", func(v canonjson.Value) canonjson.Value {
			return set(v, num("42"), "agent_id")
		})),
		bad("agent_id_conflict", "malformed", "metadata.agent_id", func(tb testing.TB) []byte {
			return signedAs(tb, set(build(tb, chainDraft(2)), str("agent-0000"), "metadata", "agent_id"), keyB(), nil)
		}),

		// Schema: hashes.
		bad("bad_hash_prefix", "malformed", "hashes.output_hash", edit("bad_hash_prefix", func(v canonjson.Value) canonjson.Value {
			h, _ := v.Get("hashes")
			out, _ := h.Get("output_hash")
			s, _ := out.Str()
			return set(v, str(strings.TrimPrefix(s, hashPrefix)), "hashes", "output_hash")
		})),
		bad("bad_hash_length", "malformed", "hashes.suite_hash", edit("bad_hash_length", func(v canonjson.Value) canonjson.Value {
			return set(v, str("sha256:39def639"), "hashes", "suite_hash")
		})),
		bad("bad_hashes_algorithm", "malformed", "hashes.algorithm", edit("bad_hashes_algorithm", func(v canonjson.Value) canonjson.Value {
			return set(v, str("sha256:39def6393ef4064c"), "hashes", "algorithm")
		})),
		bad("missing_ref_hash", "malformed", "hashes.suite_hash", edit("missing_ref_hash", func(v canonjson.Value) canonjson.Value {
			return del(v, "hashes", "suite_hash")
		})),
		bad("missing_spec_hash", "malformed", "hashes.specification", func(tb testing.TB) []byte {
			return signedAs(tb, del(specDoc("missing_spec_hash"), "hashes", "specification"), keyA(tb), func(s *signing) { s.signerID = signerIDSPKIBase64 })
		}),
		bad("null_spec_hash", "malformed", "hashes.tests", func(tb testing.TB) []byte {
			return signedAs(tb, set(specDoc("null_spec_hash"), canonjson.MakeNull(), "hashes", "tests"), keyA(tb), func(s *signing) { s.signerID = signerIDSPKIBase64 })
		}),

		// Schema: signature object.
		bad("signature_not_object", "malformed", "signature", func(tb testing.TB) []byte {
			return canonjson.Indent(set(build(tb, baseDraft("signature_not_object")), str("1871c656"), "signature"))
		}),
		bad("bad_signature_algorithm_case", "malformed", "signature.algorithm", func(tb testing.TB) []byte {
			return tamper(tb, ref("bad_signature_algorithm_case", nil)(tb), func(v canonjson.Value) canonjson.Value {
				return set(v, str("Ed25519"), "signature", "algorithm")
			})
		}),
		bad("bad_signature_algorithm_rsa", "malformed", "signature.algorithm", func(tb testing.TB) []byte {
			return tamper(tb, ref("bad_signature_algorithm_rsa", nil)(tb), func(v canonjson.Value) canonjson.Value {
				return set(v, str("rsa"), "signature", "algorithm")
			})
		}),
		bad("signature_missing_field", "malformed", "signature.content_hash", func(tb testing.TB) []byte {
			return tamper(tb, ref("signature_missing_field", nil)(tb), func(v canonjson.Value) canonjson.Value {
				return del(v, "signature", "content_hash")
			})
		}),

		// Schema: chain fields.
		bad("chain_previous_without_position", "malformed", "metadata.chain_position", func(tb testing.TB) []byte {
			return signedAs(tb, del(build(tb, chainDraft(2)), "metadata", "chain_position"), keyB(), nil)
		}),
		bad("chain_bad_previous_receipt", "malformed", "metadata.previous_receipt", func(tb testing.TB) []byte {
			return signedAs(tb, set(build(tb, chainDraft(2)), str("receipt-id-of-prior-verification"), "metadata", "previous_receipt"), keyB(), nil)
		}),
		bad("chain_negative_position", "malformed", "metadata.chain_position", func(tb testing.TB) []byte {
			return signedAs(tb, set(build(tb, chainDraft(2)), num("-1"), "metadata", "chain_position"), keyB(), nil)
		}),

		// Verification: counts and verdict (signed after the edit).
		inv("counts_disagree_details", CodeCountMismatch, "results.passed", edit("counts_disagree_details", func(v canonjson.Value) canonjson.Value {
			return set(v, str(StatusFail), "results", "details", "2", "status")
		})),
		inv("counts_total_mismatch", CodeCountMismatch, "results.total", edit("counts_total_mismatch", func(v canonjson.Value) canonjson.Value {
			return set(v, num("4"), "results", "total")
		})),
		inv("verdict_disagrees_counts", CodeVerdictMismatch, "verdict", func(tb testing.TB) []byte {
			d := baseDraft("verdict_disagrees_counts")
			d.Details[0].Status = StatusFail
			return signedAs(tb, set(build(tb, d), str(VerdictPass), "verdict"), keyA(tb), nil)
		}),

		// Verification: signature.
		inv("content_hash_mismatch", CodeContentHashMismatch, "signature.content_hash", func(tb testing.TB) []byte {
			return tamper(tb, ref("content_hash_mismatch", nil)(tb), func(v canonjson.Value) canonjson.Value {
				return set(v, str("python3.13"), "metadata", "runtime")
			})
		}),
		inv("chain_tampered_position", CodeContentHashMismatch, "signature.content_hash", func(tb testing.TB) []byte {
			return tamper(tb, chain(3)(tb), func(v canonjson.Value) canonjson.Value {
				return set(v, num("7"), "metadata", "chain_position")
			})
		}),
		inv("bad_signature", CodeSignatureInvalid, "signature.signature", func(tb testing.TB) []byte {
			return tamper(tb, ref("bad_signature", nil)(tb), func(v canonjson.Value) canonjson.Value {
				sig, _ := v.Get("signature")
				sv, _ := sig.Get("signature")
				s, _ := sv.Str()
				b := []byte(s)
				b[10] = "01"[b[10]&1] // change one hex digit
				if string(b) == s {
					b[10] = "10"[b[10]&1]
				}
				return set(v, str(string(b)), "signature", "signature")
			})
		}),
		inv("bad_signature_hex", CodeSignatureInvalid, "signature.signature", func(tb testing.TB) []byte {
			return tamper(tb, ref("bad_signature_hex", nil)(tb), func(v canonjson.Value) canonjson.Value {
				return set(v, str("deadbeef"), "signature", "signature")
			})
		}),
		inv("signer_id_garbage", CodeSignerIDInvalid, "signature.signer_id", func(tb testing.TB) []byte {
			return tamper(tb, ref("signer_id_garbage", nil)(tb), func(v canonjson.Value) canonjson.Value {
				return set(v, str("MCowBQYDK2VwAyEA..."), "signature", "signer_id")
			})
		}),
		inv("signature_wrong_signer", CodeSignatureInvalid, "signature.signature", func(tb testing.TB) []byte {
			return tamper(tb, ref("signature_wrong_signer", nil)(tb), func(v canonjson.Value) canonjson.Value {
				return set(v, str(signerIDHex(keyB().Public().(ed25519.PublicKey))), "signature", "signer_id")
			})
		}),
	}
}

// generatedFiles returns every file testdata/vrf must hold, by name.
func generatedFiles(tb testing.TB) map[string][]byte {
	files := map[string][]byte{"keyB_key.json": keyFile("keyB", keyB())}
	for _, s := range samples() {
		if _, dup := files[s.name+".json"]; dup {
			tb.Fatalf("duplicate sample name %s", s.name)
		}
		files[s.name+".json"] = s.make(tb)
	}
	return files
}

// syncSamples compares testdata/vrf with the generated files or, with
// -update, rewrites it (removing files no sample makes).
func syncSamples(t *testing.T, files map[string][]byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(samplesDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range files {
		path := filepath.Join(samplesDir, name)
		if *update {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		disk, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (run go test ./codec/vrf -update)", name, err)
			continue
		}
		if !bytes.Equal(disk, data) {
			t.Errorf("%s differs from what the generator makes (run go test ./codec/vrf -update)", name)
		}
	}
	entries, err := os.ReadDir(samplesDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := files[e.Name()]; ok {
			continue
		}
		if *update {
			if err := os.Remove(filepath.Join(samplesDir, e.Name())); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("testdata/vrf/%s is not generated by any sample (run go test ./codec/vrf -update)", e.Name())
	}
}

// TestSamples regenerates every sample and compares it with the file in
// testdata/vrf (or rewrites the files with -update), then checks that each
// sample has exactly the outcome it is named for.
func TestSamples(t *testing.T) {
	files := generatedFiles(t)
	syncSamples(t, files)
	for _, s := range samples() {
		t.Run(s.name, func(t *testing.T) {
			checkOutcome(t, files[s.name+".json"], s.outcome, s.form, s.code, s.field)
		})
	}
}

// checkOutcome asserts that data parses and verifies (valid), fails Parse
// with a finding code@field (malformed), or parses and fails Verify with
// it (invalid).
func checkOutcome(t *testing.T, data []byte, outcome string, form codec.Form, code, field string) {
	t.Helper()
	r, err := Parse(data)
	switch outcome {
	case wantValid:
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if fs := r.Verify(); len(fs) != 0 {
			t.Fatalf("Verify: %v", codec.AsInvalid(fs))
		}
		if r.Form() != form {
			t.Errorf("form %q, want %q", r.Form(), form)
		}
	case wantMalformed:
		if err == nil {
			t.Fatalf("Parse accepted it; want %s at %q", code, field)
		}
		var me *codec.MalformedError
		if !errors.As(err, &me) || !errors.Is(err, codec.ErrMalformed) {
			t.Fatalf("Parse error %T is not a *codec.MalformedError", err)
		}
		if !hasFinding(me.Findings, code, field) {
			t.Fatalf("findings %v lack %s at %q", me.Findings, code, field)
		}
		// The sample must break only the rule it is named for.
		for _, f := range me.Findings {
			if f.Field != field {
				t.Errorf("unrelated finding %v", f)
			}
		}
	case wantInvalid:
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		fs := r.Verify()
		if !hasFinding(fs, code, field) {
			t.Fatalf("Verify findings %v lack %s at %q", fs, code, field)
		}
	default:
		t.Fatalf("unknown outcome %q", outcome)
	}
}

func hasFinding(fs []codec.Finding, code, field string) bool {
	for _, f := range fs {
		if f.Code == code && f.Field == field {
			return true
		}
	}
	return false
}
