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
	if keys, kind, ok := scanTopLevel(body); ok {
		if kind == "rollback" {
			return rollback.Kind
		}
		return kindOfKeys(func(k string) bool { _, ok := keys[k]; return ok })
	}
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

// scanTopLevel reads the keys of a top-level JSON object without building
// its values (the codec parses the document properly afterwards), and the
// value of "kind" when it is a plain string. ok is false for anything it
// does not follow, and the caller falls back to a full parse.
func scanTopLevel(b []byte) (keys map[string]struct{}, kind string, ok bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, "", false
	}
	keys = map[string]struct{}{}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return keys, "", skipWS(b, i+1) == len(b)
	}
	for {
		key, j, plain := scanString(b, i)
		if j < 0 || !plain {
			return nil, "", false
		}
		i = skipWS(b, j)
		if i >= len(b) || b[i] != ':' {
			return nil, "", false
		}
		i = skipWS(b, i+1)
		if key == "kind" {
			if v, j, plain := scanString(b, i); j >= 0 && plain {
				kind = v
			}
		}
		if i = skipJSONValue(b, i); i < 0 {
			return nil, "", false
		}
		keys[key] = struct{}{}
		i = skipWS(b, i)
		if i >= len(b) {
			return nil, "", false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return keys, kind, skipWS(b, i+1) == len(b)
		default:
			return nil, "", false
		}
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString reads a string at b[i]; plain is false when it holds escapes
// (its content is then not returned). It returns the index after the
// closing quote, or -1.
func scanString(b []byte, i int) (s string, next int, plain bool) {
	if i >= len(b) || b[i] != '"' {
		return "", -1, false
	}
	plain = true
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			plain = false
			j++
		case '"':
			if plain {
				s = string(b[i+1 : j])
			}
			return s, j + 1, plain
		}
	}
	return "", -1, false
}

// skipJSONValue returns the index after the value at b[i], or -1. It
// checks structure (nesting, strings) but not every token.
func skipJSONValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			_, j, _ := scanString(b, i)
			if j < 0 {
				return -1
			}
			i = j
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i
			}
			i++
		default:
			if depth == 0 && (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
				return i
			}
			i++
		}
		if depth == 0 && i <= len(b) && i > 0 && (b[i-1] == '"' || b[i-1] == '}' || b[i-1] == ']') {
			return i
		}
	}
	if depth == 0 {
		return i
	}
	return -1
}
