package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/rollback"
)

// LeafVersion is the version of the leaf encoding written by this binary.
const LeafVersion = 1

// KindRollback is the kind of a rollback record (codec/rollback): a small
// JSON document saying whether a task's rollback restored a clean state.
const KindRollback = rollback.Kind

// Link relations.
const (
	// RelPreviousReceipt links a VRF receipt to the receipt it continues.
	RelPreviousReceipt = "previous_receipt"
	// RelTaskPrevious links a witness bundle or rollback to the latest
	// earlier event of the same task.
	RelTaskPrevious = "task_previous"
)

// Link points from an event to an earlier one.
type Link struct {
	Rel string
	ID  string
	Seq int64
}

// Event is one entry of the log. Everything but Data is committed by the
// event's Merkle leaf; Data is committed through Digest.
type Event struct {
	Seq int64
	// AppendedAt is the submission's arrival time, clamped so that it never
	// goes backwards along the log.
	AppendedAt time.Time
	Kind       codec.Kind
	// ID is the document's identity within its kind.
	ID string
	// Subject is who the document speaks for: the agent of a receipt (see
	// the chain rules), the system of an attestation, the task of a bundle.
	Subject string
	// Signer is the Ed25519 signer ("ed25519:<hex>") or the HMAC key name.
	Signer string
	// Time is the document's own time; zero when it has none.
	Time  time.Time
	Links []Link
	// Position is a receipt's chain position (0 for a chain's first
	// receipt without one); -1 for other kinds.
	Position int64
	Digest   [sha256.Size]byte
	Size     int64
	// Attrs holds kind-specific facts recorded at append time (for example
	// governance violations of a bundle); an object, possibly empty.
	Attrs canonjson.Value
	// Data is the document's original bytes, when loaded.
	Data []byte
}

// Leaf returns the event's Merkle leaf: the canonical JSON of every field
// but Data.
func (e *Event) Leaf() []byte {
	members := []canonjson.Member{
		{Key: "appended_at", Value: canonjson.MakeString(formatTime(e.AppendedAt))},
		{Key: "digest", Value: canonjson.MakeString("sha256:" + hex.EncodeToString(e.Digest[:]))},
		{Key: "id", Value: canonjson.MakeString(e.ID)},
		{Key: "kind", Value: canonjson.MakeString(string(e.Kind))},
		{Key: "seq", Value: canonjson.MakeInt(e.Seq)},
		{Key: "size", Value: canonjson.MakeInt(e.Size)},
		{Key: "v", Value: canonjson.MakeInt(LeafVersion)},
	}
	if e.Subject != "" {
		members = append(members, canonjson.Member{Key: "subject", Value: canonjson.MakeString(e.Subject)})
	}
	if e.Signer != "" {
		members = append(members, canonjson.Member{Key: "signer", Value: canonjson.MakeString(e.Signer)})
	}
	if !e.Time.IsZero() {
		members = append(members, canonjson.Member{Key: "time", Value: canonjson.MakeString(formatTime(e.Time))})
	}
	if e.Position >= 0 {
		members = append(members, canonjson.Member{Key: "position", Value: canonjson.MakeInt(e.Position)})
	}
	if len(e.Links) > 0 {
		links := make([]canonjson.Value, len(e.Links))
		for i, l := range e.Links {
			links[i] = canonjson.MakeObject(
				canonjson.Member{Key: "id", Value: canonjson.MakeString(l.ID)},
				canonjson.Member{Key: "rel", Value: canonjson.MakeString(l.Rel)},
				canonjson.Member{Key: "seq", Value: canonjson.MakeInt(l.Seq)},
			)
		}
		members = append(members, canonjson.Member{Key: "links", Value: canonjson.MakeArray(links...)})
	}
	if e.Attrs.Len() > 0 {
		members = append(members, canonjson.Member{Key: "attrs", Value: e.Attrs})
	}
	return canonjson.Canonical(canonjson.MakeObject(members...))
}

// formatTime writes t in UTC as RFC 3339 with nanoseconds, trailing zeros
// dropped.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ErrCorrupt is wrapped by every error about stored data that does not
// decode: the store was damaged or written by something else.
var ErrCorrupt = errors.New("ledger: corrupt store")

// ParseLeaf decodes a leaf written by Leaf. It is used both on stored events
// and on the leaf carried in a proof, so it checks every field.
func ParseLeaf(leaf []byte) (*Event, error) {
	v, err := canonjson.Parse(leaf)
	if err != nil {
		return nil, fmt.Errorf("leaf: %w", err)
	}
	return leafEvent(v)
}

// leafEvent reads the event out of a parsed leaf.
func leafEvent(v canonjson.Value) (*Event, error) {
	if v.Type() != canonjson.Object {
		return nil, fmt.Errorf("leaf: not an object")
	}
	r := leafReader{v: v}
	e := &Event{Position: -1}
	if ver := r.int("v"); ver != LeafVersion && r.err == nil {
		return nil, fmt.Errorf("leaf: version %d, this binary reads %d", ver, LeafVersion)
	}
	e.Seq = r.int("seq")
	e.AppendedAt = r.time("appended_at", true)
	e.Kind = codec.Kind(r.str("kind", true))
	e.ID = r.str("id", true)
	e.Size = r.int("size")
	digest := r.str("digest", true)
	e.Subject = r.str("subject", false)
	e.Signer = r.str("signer", false)
	e.Time = r.time("time", false)
	if pv, ok := v.Get("position"); ok {
		p, ok := pv.Int64()
		if !ok || p < 0 {
			return nil, fmt.Errorf("leaf: position: want a non-negative integer")
		}
		e.Position = p
	}
	if lv, ok := v.Get("links"); ok {
		for i, l := range lv.Elems() {
			lr := leafReader{v: l}
			e.Links = append(e.Links, Link{Rel: lr.str("rel", true), ID: lr.str("id", true), Seq: lr.int("seq")})
			if lr.err != nil {
				return nil, fmt.Errorf("leaf: links[%d]: %w", i, lr.err)
			}
		}
	}
	e.Attrs = canonjson.MakeObject()
	if av, ok := v.Get("attrs"); ok && av.Type() == canonjson.Object {
		e.Attrs = av
	}
	if r.err != nil {
		return nil, fmt.Errorf("leaf: %w", r.err)
	}
	hexDigest, ok := strings.CutPrefix(digest, "sha256:")
	if b, err := hex.DecodeString(hexDigest); !ok || err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("leaf: digest: want sha256:<64 hex digits>")
	} else {
		copy(e.Digest[:], b)
	}
	return e, nil
}

type leafReader struct {
	v   canonjson.Value
	err error
}

func (r *leafReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *leafReader) str(key string, required bool) string {
	f, ok := r.v.Get(key)
	if !ok {
		if required {
			r.fail("%s: missing", key)
		}
		return ""
	}
	s, ok := f.Str()
	if !ok {
		r.fail("%s: want a string", key)
	}
	return s
}

func (r *leafReader) int(key string) int64 {
	f, ok := r.v.Get(key)
	if !ok {
		r.fail("%s: missing", key)
		return 0
	}
	i, ok := f.Int64()
	if !ok {
		r.fail("%s: want an integer", key)
	}
	return i
}

func (r *leafReader) time(key string, required bool) time.Time {
	s := r.str(key, required)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		r.fail("%s: %v", key, err)
	}
	return t
}

// An event is stored under two keys, so that scans of the log (rebuild,
// audit's first pass, log listings) read leaves without documents:
//
//	e/<seq>  byte 1 (leaf format), then the leaf
//	p/<seq>  byte payload codec (0 raw, 1 zstd), then the document bytes
const (
	leafFormat  = 1
	payloadRaw  = 0
	payloadZstd = 1 // written by versions before 2026-11; read still
)

// encodePayload returns a document as stored under p/: the codec byte and
// the document. Documents are stored raw: compressing each one on the
// append path cost more CPU than verifying its signature, and Pebble
// compresses whole blocks of documents with zstd at the bottom of the LSM
// (see PebbleOptions), which also finds what similar documents share.
// Payloads written zstd-compressed by earlier versions still read.
func encodePayload(data []byte) []byte {
	out := make([]byte, 1+len(data))
	out[0] = payloadRaw
	copy(out[1:], data)
	return out
}

// encodeLeafValue is the value stored under e/.
func encodeLeafValue(leaf []byte) []byte {
	return append([]byte{leafFormat}, leaf...)
}

// leafOf returns the leaf of a value stored under e/.
func leafOf(v []byte) ([]byte, error) {
	if len(v) < 1 || v[0] != leafFormat {
		return nil, fmt.Errorf("%w: event leaf format %v", ErrCorrupt, v[:min(1, len(v))])
	}
	return v[1:], nil
}

// decodePayload returns the document of a value stored under p/.
func (l *Ledger) decodePayload(v []byte) ([]byte, error) {
	if len(v) < 1 {
		return nil, fmt.Errorf("%w: event payload missing", ErrCorrupt)
	}
	switch v[0] {
	case payloadRaw:
		return append([]byte(nil), v[1:]...), nil
	case payloadZstd:
		d, err := l.zdec.DecodeAll(v[1:], nil)
		if err != nil {
			return nil, fmt.Errorf("%w: event payload: %v", ErrCorrupt, err)
		}
		return d, nil
	}
	return nil, fmt.Errorf("%w: event payload codec %d", ErrCorrupt, v[0])
}
