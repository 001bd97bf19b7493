// Package rollback reads rollback records: the small JSON document that
// says a task's changes were rolled back and whether that restored a clean
// state (ADR-035's rollback_count and rollback_correctness come from them).
//
//	{"kind": "rollback", "task_id": "<uuid or 32 hex digits>",
//	 "restored_clean": true, "at": "2026-11-21T10:00:00Z",
//	 "reason": "optional text",
//	 "signature": {optional, as a VRF receipt's: algorithm "ed25519",
//	               signer_id, content_hash, signature}}
//
// The signature, when present, is an Ed25519 signature over the ASCII hex
// SHA-256 of the canonical JSON (Python json.dumps, sorted keys) of the
// record without its signature member: the VRF reference scheme.
//
// The package owns this format only; it must not import the other
// document codecs.
package rollback

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/keys"
)

// Kind is the document kind of rollback records.
const Kind codec.Kind = "rollback"

// Rollback is a parsed rollback record.
type Rollback struct {
	// TaskID is the task in the witness bundles' form: 8-4-4-4-12
	// lowercase hex.
	TaskID        string
	RestoredClean bool
	At            time.Time
	Reason        string

	value  canonjson.Value
	signed bool
	signer ed25519.PublicKey
	stated string // content_hash as written
	sigHex string
}

// IsRollback reports whether v looks like a rollback record (an object
// whose "kind" is "rollback").
func IsRollback(v canonjson.Value) bool {
	k, _ := v.Get("kind")
	s, _ := k.Str()
	return s == "rollback"
}

// Parse reads a rollback record.
func Parse(data []byte) (*Rollback, error) {
	v, err := canonjson.Parse(data)
	if err != nil {
		if se, ok := err.(*canonjson.SyntaxError); ok {
			return nil, codec.AsMalformed([]codec.Finding{se.Finding()})
		}
		return nil, err
	}
	var fs []codec.Finding
	bad := func(field, format string, args ...any) {
		fs = append(fs, codec.Malformed(field, codec.NoOffset, format, args...))
	}
	if v.Type() != canonjson.Object {
		bad("", "want a JSON object")
		return nil, codec.AsMalformed(fs)
	}
	r := &Rollback{value: v}
	str := func(key string, required bool) string {
		f, ok := v.Get(key)
		if !ok || f.IsNull() {
			if required {
				bad(key, "required field missing")
			}
			return ""
		}
		s, ok := f.Str()
		if !ok {
			bad(key, "want string, got %s", f.Type())
		}
		return s
	}
	if k := str("kind", true); k != "" && k != "rollback" {
		bad("kind", "want \"rollback\", got %q", k)
	}
	task := str("task_id", true)
	if task != "" {
		id, ok := normalizeTask(task)
		if !ok {
			bad("task_id", "want a UUID (8-4-4-4-12 hex) or 32 hex digits, got %q", task)
		}
		r.TaskID = id
	}
	if f, ok := v.Get("restored_clean"); !ok {
		bad("restored_clean", "required field missing")
	} else if b, ok := f.Bool(); !ok {
		bad("restored_clean", "want boolean, got %s", f.Type())
	} else {
		r.RestoredClean = b
	}
	if at := str("at", true); at != "" {
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			bad("at", "want an RFC 3339 time, got %q", at)
		}
		r.At = t.UTC()
	}
	r.Reason = str("reason", false)
	if sv, ok := v.Get("signature"); ok && !sv.IsNull() {
		r.signed = true
		sig := func(key string) string {
			f, _ := sv.Get(key)
			s, ok := f.Str()
			if !ok {
				bad("signature."+key, "want string")
			}
			return s
		}
		if sv.Type() != canonjson.Object {
			bad("signature", "want object, got %s", sv.Type())
		} else {
			if a := sig("algorithm"); a != "ed25519" {
				bad("signature.algorithm", "want exactly \"ed25519\", got %q", a)
			}
			pub, err := keys.ParsePublicKey(sig("signer_id"))
			if err != nil {
				bad("signature.signer_id", "%v", err)
			}
			r.signer = pub
			r.stated = sig("content_hash")
			r.sigHex = sig("signature")
		}
	}
	if err := codec.AsMalformed(fs); err != nil {
		return nil, err
	}
	return r, nil
}

func normalizeTask(s string) (string, bool) {
	h := strings.ReplaceAll(strings.ToLower(s), "-", "")
	if len(h) != 32 {
		return "", false
	}
	if _, err := hex.DecodeString(h); err != nil {
		return "", false
	}
	if strings.Contains(s, "-") && (len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-') {
		return "", false
	}
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
}

// ID is the record's identity: "<task>@rollback@<at, RFC 3339 ns>".
func (r *Rollback) ID() string { return r.TaskID + "@rollback@" + r.At.Format(time.RFC3339Nano) }

// Signed reports whether the record carries a signature.
func (r *Rollback) Signed() bool { return r.signed }

// Verify checks the signature of a signed record.
func (r *Rollback) Verify() []codec.Finding {
	if !r.signed {
		return nil
	}
	sum := sha256.Sum256(canonjson.Canonical(r.value.Without("signature")))
	want := hex.EncodeToString(sum[:])
	stated := strings.TrimPrefix(r.stated, "sha256:")
	if !strings.EqualFold(stated, want) {
		return []codec.Finding{{Code: "content_hash_mismatch", Field: "signature.content_hash", Offset: codec.NoOffset,
			Reason: fmt.Sprintf("content_hash is %q but the record without its signature hashes to %s", r.stated, want)}}
	}
	sig, err := hex.DecodeString(r.sigHex)
	if err != nil || len(sig) != ed25519.SignatureSize || !ed25519.Verify(r.signer, []byte(r.stated), sig) {
		return []codec.Finding{{Code: "signature_invalid", Field: "signature.signature", Offset: codec.NoOffset,
			Reason: "Ed25519 signature over content_hash does not verify under " + keys.SignerID(r.signer)}}
	}
	return nil
}

// Summary returns the kind-independent view.
func (r *Rollback) Summary() codec.Summary {
	s := codec.Summary{Kind: Kind, ID: r.ID(), Signed: r.signed, SignatureChecked: r.signed, Subject: r.TaskID, Time: r.At,
		Facts: []codec.Fact{{Label: "restored clean", Value: fmt.Sprint(r.RestoredClean)}}}
	if r.signed {
		s.Signer = keys.SignerID(r.signer)
	}
	if r.Reason != "" {
		s.Facts = append(s.Facts, codec.Fact{Label: "reason", Value: r.Reason})
	}
	return s
}

// Sign returns the record's bytes (canonjson.Indent) signed with priv.
func Sign(task string, restoredClean bool, at time.Time, reason string, priv ed25519.PrivateKey) ([]byte, error) {
	m := []canonjson.Member{
		{Key: "kind", Value: canonjson.MakeString("rollback")},
		{Key: "task_id", Value: canonjson.MakeString(task)},
		{Key: "restored_clean", Value: canonjson.MakeBool(restoredClean)},
		{Key: "at", Value: canonjson.MakeString(at.UTC().Format(time.RFC3339Nano))},
	}
	if reason != "" {
		m = append(m, canonjson.Member{Key: "reason", Value: canonjson.MakeString(reason)})
	}
	doc := canonjson.MakeObject(m...)
	if priv == nil {
		return append(canonjson.Indent(doc), '\n'), nil
	}
	sum := sha256.Sum256(canonjson.Canonical(doc))
	ch := hex.EncodeToString(sum[:])
	sig := ed25519.Sign(priv, []byte(ch))
	doc = doc.With("signature", canonjson.MakeObject(
		canonjson.Member{Key: "algorithm", Value: canonjson.MakeString("ed25519")},
		canonjson.Member{Key: "signer_id", Value: canonjson.MakeString(keys.SignerID(priv.Public().(ed25519.PublicKey)))},
		canonjson.Member{Key: "content_hash", Value: canonjson.MakeString(ch)},
		canonjson.Member{Key: "signature", Value: canonjson.MakeString(hex.EncodeToString(sig))},
	))
	out := append(canonjson.Indent(doc), '\n')
	if _, err := Parse(out); err != nil {
		return nil, err
	}
	return out, nil
}
