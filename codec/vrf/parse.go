package vrf

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// MaxFindings bounds the schema findings one Parse reports; a document
// with more problems gets a last finding saying how many were left out.
const MaxFindings = 100

// Parse reads a VRF receipt in either form. Any syntax or schema problem
// is reported as a *codec.MalformedError (wrapping codec.ErrMalformed)
// listing every problem found, each with its dotted field path and byte
// offset. A receipt that parses may still fail Verify.
//
// Schema rules (the specification's Conformance section, plus the
// reference form described in INTEROP.md):
//   - vrf_version "1.0"; receipt_id a version 4 UUID (either case);
//     verified_at YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|+00:00), a real time;
//     tier an integer literal 0 to 3; verdict pass, fail, partial or error.
//   - results.total, passed, failed, errors non-negative integers;
//     results.details an array of objects with a string name and a status
//     of pass, fail, error or timeout.
//   - hashes: every value except algorithm is "sha256:" + 16 to 64 hex
//     digits; a hash the specification does not name may be null;
//     algorithm, when present, is "sha256". The spec form requires
//     specification and output, the reference form input_hash,
//     output_hash and suite_hash.
//   - signature, unless absent or null: an object with algorithm exactly
//     "ed25519" and string signer_id, content_hash and signature.
//   - metadata.previous_receipt (a UUID v4) needs metadata.chain_position
//     (a non-negative integer).
//   - agent_id, task_id and task_type are strings; when a receipt gives
//     one in two places (top level and metadata or task) they must agree.
//
// Unknown top-level, metadata, task, hashes and detail keys are accepted,
// and an optional field that is null counts as absent, except a hash the
// specification names (specification, output, tests), which must be a
// hash.
func Parse(data []byte) (*Receipt, error) {
	v, err := canonjson.Parse(data)
	if err != nil {
		var se *canonjson.SyntaxError
		if errors.As(err, &se) {
			return nil, &codec.MalformedError{Findings: []codec.Finding{se.Finding()}}
		}
		return nil, &codec.MalformedError{Findings: []codec.Finding{codec.Malformed("", codec.NoOffset, "%v", err)}}
	}
	return decode(v, data)
}

// FromValue checks an already parsed JSON value as a receipt, exactly as
// Parse does, except that findings carry no byte offsets.
func FromValue(v canonjson.Value) (*Receipt, error) { return decode(v, nil) }

// checker collects schema findings.
type checker struct {
	data    []byte // the input text, for offsets; nil when unknown
	fs      []codec.Finding
	dropped int
}

func (c *checker) bad(p fieldPath, format string, args ...any) {
	if len(c.fs) >= MaxFindings {
		c.dropped++
		return
	}
	c.fs = append(c.fs, codec.Malformed(p.String(), locate(c.data, p), format, args...))
}

func (c *checker) err() error {
	if len(c.fs) == 0 {
		return nil
	}
	fs := c.fs
	if c.dropped > 0 {
		fs = append(fs, codec.Malformed("", codec.NoOffset, "%d more problems not listed", c.dropped))
	}
	return &codec.MalformedError{Findings: fs}
}

// typeName names v's JSON type the way findings do, telling integers from
// floats: "want integer, got float 3.0".
func typeName(v canonjson.Value) string {
	switch v.Type() {
	case canonjson.Number:
		if v.IsInt() {
			return "integer"
		}
		return "float " + clip(v.Literal())
	case canonjson.String:
		s, _ := v.Str()
		return fmt.Sprintf("string %q", clip(s))
	}
	return v.Type().String()
}

// required returns obj's member key, recording a finding when it is
// missing.
func (c *checker) required(obj canonjson.Value, p fieldPath, key string) (canonjson.Value, bool) {
	v, ok := obj.Get(key)
	if !ok {
		c.bad(p.Key(key), "required field missing")
	}
	return v, ok
}

// optional returns obj's member key; null counts as absent.
func optional(obj canonjson.Value, key string) (canonjson.Value, bool) {
	v, ok := obj.Get(key)
	if !ok || v.IsNull() {
		return v, false
	}
	return v, true
}

func (c *checker) str(v canonjson.Value, p fieldPath) (string, bool) {
	s, ok := v.Str()
	if !ok {
		c.bad(p, "want string, got %s", typeName(v))
	}
	return s, ok
}

func (c *checker) object(v canonjson.Value, p fieldPath) bool {
	if v.Type() != canonjson.Object {
		c.bad(p, "want object, got %s", typeName(v))
		return false
	}
	return true
}

// count reads a non-negative integer.
func (c *checker) count(v canonjson.Value, p fieldPath) (int64, bool) {
	if !v.IsInt() {
		c.bad(p, "want integer, got %s", typeName(v))
		return 0, false
	}
	n, ok := v.Int64()
	if !ok {
		c.bad(p, "integer %s does not fit in 64 bits", clip(v.Literal()))
		return 0, false
	}
	if n < 0 {
		c.bad(p, "want a non-negative integer, got %d", n)
		return 0, false
	}
	return n, true
}

// enum reads a string that must be one of allowed.
func (c *checker) enum(v canonjson.Value, p fieldPath, allowed ...string) (string, bool) {
	s, ok := c.str(v, p)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if s == a {
			return s, true
		}
	}
	c.bad(p, "want one of %s, got %q", strings.Join(allowed, ", "), clip(s))
	return "", false
}

// optionalString reads an optional string member ("" when absent or null).
func (c *checker) optionalString(obj canonjson.Value, p fieldPath, key string) string {
	v, ok := optional(obj, key)
	if !ok {
		return ""
	}
	s, _ := c.str(v, p.Key(key))
	return s
}

// detectForm decides which encoding a receipt uses. The hashes object
// decides when it can (reference keys win over spec keys); otherwise a
// reference signer_id, then where the task fields sit. A receipt with no
// clue is judged by the specification text.
func detectForm(root canonjson.Value) codec.Form {
	h, _ := root.Get("hashes")
	switch {
	case h.Has("input_hash") || h.Has("output_hash") || h.Has("suite_hash"):
		return codec.FormReference
	case h.Has("specification") || h.Has("output"):
		return codec.FormSpec
	}
	if sig, ok := root.Get("signature"); ok {
		if id, ok := sig.Get("signer_id"); ok {
			if s, ok := id.Str(); ok && strings.HasPrefix(s, signerHexPrefix) {
				return codec.FormReference
			}
		}
	}
	if !root.Has("task") && (root.Has("task_id") || root.Has("task_type")) {
		return codec.FormReference
	}
	return codec.FormSpec
}

func decode(v canonjson.Value, data []byte) (*Receipt, error) {
	c := &checker{data: data}
	var root fieldPath
	if v.Type() != canonjson.Object {
		c.bad(root, "want a JSON object, got %s", typeName(v))
		return nil, c.err()
	}
	r := &Receipt{value: v, form: detectForm(v)}

	if x, ok := c.required(v, root, "vrf_version"); ok {
		if s, ok := c.str(x, root.Key("vrf_version")); ok && s != Version {
			c.bad(root.Key("vrf_version"), "want %q, got %q", Version, clip(s))
		}
	}
	if x, ok := c.required(v, root, "receipt_id"); ok {
		p := root.Key("receipt_id")
		if s, ok := c.str(x, p); ok {
			upper, reason := checkUUIDv4(s)
			if reason != "" {
				c.bad(p, "%s", reason)
			}
			r.id, r.idUpper = strings.ToLower(s), upper
		}
	}
	if x, ok := c.required(v, root, "verified_at"); ok {
		p := root.Key("verified_at")
		if s, ok := c.str(x, p); ok {
			t, reason := parseVerifiedAt(s)
			if reason != "" {
				c.bad(p, "%s", reason)
			}
			r.verifiedAt = t
		}
	}
	if x, ok := c.required(v, root, "tier"); ok {
		p := root.Key("tier")
		if !x.IsInt() {
			c.bad(p, "want integer, got %s", typeName(x))
		} else if n, ok := x.Int64(); !ok || n < 0 || n > 3 {
			c.bad(p, "want a tier from 0 to 3, got %s", clip(x.Literal()))
		} else {
			r.tier = int(n)
		}
	}
	if x, ok := c.required(v, root, "verdict"); ok {
		r.verdict, _ = c.enum(x, root.Key("verdict"), VerdictPass, VerdictFail, VerdictPartial, VerdictError)
	}
	c.results(r, v)
	c.hashes(r, v)
	c.metadata(r, v)
	c.task(r, v)
	c.signature(r, v)
	if err := c.err(); err != nil {
		return nil, err
	}
	sizeHint := len(data)
	if sizeHint == 0 {
		sizeHint = 1024
	}
	r.hashContent(sizeHint)
	return r, nil
}

func (c *checker) results(r *Receipt, root canonjson.Value) {
	p := path("results")
	res, ok := c.required(root, fieldPath{}, "results")
	if !ok || !c.object(res, p) {
		return
	}
	field := func(key string, dst *int64) {
		if x, ok := c.required(res, p, key); ok {
			*dst, _ = c.count(x, p.Key(key))
		}
	}
	field("total", &r.counts.Total)
	field("passed", &r.counts.Passed)
	field("failed", &r.counts.Failed)
	field("errors", &r.counts.Errors)

	dp := p.Key("details")
	d, ok := c.required(res, p, "details")
	if !ok {
		return
	}
	if d.Type() != canonjson.Array {
		c.bad(dp, "want array, got %s", typeName(d))
		return
	}
	r.details.Total = int64(d.Len())
	for i, item := range d.Elems() {
		ip := dp.Index(i)
		if !c.object(item, ip) {
			continue
		}
		if x, ok := c.required(item, ip, "name"); ok {
			c.str(x, ip.Key("name"))
		}
		x, ok := c.required(item, ip, "status")
		if !ok {
			continue
		}
		switch s, _ := c.enum(x, ip.Key("status"), StatusPass, StatusFail, StatusError, StatusTimeout); s {
		case StatusPass:
			r.details.Passed++
		case StatusFail:
			r.details.Failed++
		case StatusError, StatusTimeout:
			r.details.Errors++
		}
	}
}

// specHashes are the hashes the specification text names.
func isSpecHash(key string) bool {
	return key == "specification" || key == "output" || key == "tests"
}

func (c *checker) hashes(r *Receipt, root canonjson.Value) {
	p := path("hashes")
	h, ok := c.required(root, fieldPath{}, "hashes")
	if !ok || !c.object(h, p) {
		return
	}
	required := []string{"specification", "output"}
	if r.form == codec.FormReference {
		required = []string{"input_hash", "output_hash", "suite_hash"}
	}
	isRequired := func(key string) bool {
		for _, k := range required {
			if k == key {
				return true
			}
		}
		return false
	}
	for _, m := range h.Members() {
		kp := p.Key(m.Key)
		switch {
		case m.Key == "algorithm":
			if m.Value.IsNull() {
				continue
			}
			if s, ok := c.str(m.Value, kp); ok && s != "sha256" {
				c.bad(kp, `want "sha256" (every VRF hash is SHA-256), got %q`, clip(s))
			}
		case m.Value.IsNull() && isSpecHash(m.Key):
			c.bad(kp, "want a sha256: hash, got null (only hashes the specification does not name may be null)")
		case m.Value.IsNull() && isRequired(m.Key):
			c.bad(kp, "want a sha256: hash, got null (%s form requires it)", r.form)
		case m.Value.IsNull():
		default:
			if s, ok := c.str(m.Value, kp); ok {
				if reason := checkHashValue(s); reason != "" {
					c.bad(kp, "%s", reason)
				}
			}
		}
	}
	for _, k := range required {
		if !h.Has(k) {
			c.bad(p.Key(k), "required field missing (%s form)", r.form)
		}
	}
}

func (c *checker) metadata(r *Receipt, root canonjson.Value) {
	p := path("metadata")
	agent := c.optionalString(root, fieldPath{}, "agent_id")
	md, ok := optional(root, "metadata")
	if ok && c.object(md, p) {
		mdAgent := c.optionalString(md, p, "agent_id")
		switch {
		case agent == "":
			agent = mdAgent
		case mdAgent != "" && mdAgent != agent:
			c.bad(p.Key("agent_id"), "%q disagrees with top-level agent_id %q", clip(mdAgent), clip(agent))
		}
		prevPresent := false
		if x, ok := optional(md, "previous_receipt"); ok {
			prevPresent = true
			pp := p.Key("previous_receipt")
			if s, ok := c.str(x, pp); ok {
				if _, reason := checkUUIDv4(s); reason != "" {
					c.bad(pp, "%s", reason)
				}
				r.previous = strings.ToLower(s)
			}
		}
		if x, ok := optional(md, "chain_position"); ok {
			r.chainPosition, r.hasPosition = c.count(x, p.Key("chain_position"))
		} else if prevPresent {
			c.bad(p.Key("chain_position"), "required when metadata.previous_receipt is present")
		}
	}
	r.agentID = agent
}

func (c *checker) task(r *Receipt, root canonjson.Value) {
	r.taskID = c.optionalString(root, fieldPath{}, "task_id")
	r.taskType = c.optionalString(root, fieldPath{}, "task_type")
	p := path("task")
	t, ok := optional(root, "task")
	if !ok || !c.object(t, p) {
		return
	}
	merge := func(key string, dst *string) {
		s := c.optionalString(t, p, key)
		switch {
		case *dst == "":
			*dst = s
		case s != "" && s != *dst:
			c.bad(p.Key(key), "%q disagrees with top-level %s %q", clip(s), key, clip(*dst))
		}
	}
	merge("task_id", &r.taskID)
	merge("task_type", &r.taskType)
	c.optionalString(t, p, "description")
}

func (c *checker) signature(r *Receipt, root canonjson.Value) {
	p := path("signature")
	sv, ok := optional(root, "signature")
	if !ok {
		return
	}
	if sv.Type() != canonjson.Object {
		c.bad(p, "want object or null, got %s", typeName(sv))
		return
	}
	s := &signature{}
	if x, ok := c.required(sv, p, "algorithm"); ok {
		ap := p.Key("algorithm")
		if alg, ok := c.str(x, ap); ok && alg != "ed25519" {
			if strings.EqualFold(alg, "ed25519") {
				c.bad(ap, `want "ed25519", got %q (algorithm names are case-sensitive)`, alg)
			} else {
				c.bad(ap, `want "ed25519" (the only VRF v1 algorithm), got %q`, clip(alg))
			}
		}
	}
	get := func(key string, dst *string) {
		if x, ok := c.required(sv, p, key); ok {
			*dst, _ = c.str(x, p.Key(key))
		}
	}
	get("signer_id", &s.signerID)
	get("content_hash", &s.contentHash)
	get("signature", &s.sigHex)
	s.key, s.keyForm, s.keyReason = decodeSignerID(s.signerID, &s.keyBuf)
	s.sig, s.sigReason = decodeSignatureHex(s.sigHex, &s.sigBuf)
	r.sig = s
}

// hashContent computes the content hash once, and, for a signed receipt,
// which canonicalization (if any) its content_hash matches. sizeHint sizes
// the canonical buffer (the input length: canonical JSON is rarely longer).
func (r *Receipt) hashContent(sizeHint int) {
	canon, sorted := canonicalBody(r.value, sizeHint)
	sum := sha256.Sum256(canon)
	r.contentHash = hex.EncodeToString(sum[:])
	s := r.sig
	if s == nil {
		return
	}
	stated := strings.TrimPrefix(s.contentHash, hashPrefix)
	if strings.EqualFold(stated, r.contentHash) {
		s.matched = canonASCII
		return
	}
	// The specification text says only "UTF-8 encoding"; a producer that
	// read it as ensure_ascii=False hashes different bytes whenever the
	// receipt holds non-ASCII text.
	utf8Canon := canonjson.CanonicalUTF8(sorted)
	if bytes.Equal(utf8Canon, canon) {
		return
	}
	usum := sha256.Sum256(utf8Canon)
	s.utf8Hash = hex.EncodeToString(usum[:])
	if strings.EqualFold(stated, s.utf8Hash) {
		s.matched = canonUTF8
	}
}
