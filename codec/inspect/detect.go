package inspect

import (
	"bytes"
	"unicode/utf8"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/rollback"
	"go.yaml.in/yaml/v3"
)

// KindUnknown is reported for input whose kind cannot be told.
const KindUnknown codec.Kind = "unknown"

// Detect tells a document's kind from its content:
//
//   - binary input (not UTF-8 text, or holding NUL bytes, or starting with
//     the RVWW magic in either byte order) is an RVWW witness bundle;
//   - a JSON object with "vrf_version" or "receipt_id" is a VRF receipt,
//     one with "avir_protocol_version" or "attestation_chain" an AVIR
//     attestation, one with "avir_version" an AVIR specification;
//   - a JSON object whose "kind" is "rollback" is a rollback record;
//   - YAML text whose top-level mapping has "avir_version" is an AVIR
//     specification.
//
// Text that is not even JSON is attributed to a kind by the keys it
// mentions, so that its syntax error is reported against the right format.
func Detect(data []byte) codec.Kind {
	if isBinary(data) {
		return codec.KindRVWW
	}
	body := bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if v, err := canonjson.Parse(body); err == nil {
		if v.Type() != canonjson.Object {
			return KindUnknown
		}
		if rollback.IsRollback(v) {
			return rollback.Kind
		}
		return kindOfKeys(v.Has)
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		// Broken JSON: guess from the keys it mentions.
		return kindOfKeys(func(k string) bool { return bytes.Contains(body, []byte(`"`+k+`"`)) })
	}
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(body, &doc); err == nil {
		if _, ok := doc["avir_version"]; ok {
			return codec.KindAVIRSpec
		}
		return KindUnknown
	}
	if bytes.Contains(body, []byte("avir_version")) {
		return codec.KindAVIRSpec
	}
	return KindUnknown
}

func kindOfKeys(has func(string) bool) codec.Kind {
	switch {
	case has("vrf_version") || has("receipt_id"):
		return codec.KindVRF
	case has("avir_protocol_version") || has("attestation_chain"):
		return codec.KindAVIRAttestation
	case has("avir_version"):
		return codec.KindAVIRSpec
	}
	return KindUnknown
}

// rvwwMagicLE and rvwwMagicBE are the RVWW magic as the reference writes it
// (little-endian) and byte-swapped.
var (
	rvwwMagicLE = []byte{0x57, 0x56, 0x57, 0x52}
	rvwwMagicBE = []byte{0x52, 0x57, 0x56, 0x57}
)

func isBinary(data []byte) bool {
	if bytes.HasPrefix(data, rvwwMagicLE) || bytes.HasPrefix(data, rvwwMagicBE) {
		return true
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return true
	}
	return !utf8.Valid(data)
}
