package proof

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// LeafVersion is the version of the leaf encoding (the leaf's "v").
const LeafVersion = 1

// KindRollback is the kind of a rollback record (codec/rollback). The
// other kinds are codec.KindVRF, codec.KindAVIRAttestation,
// codec.KindAVIRSpec and codec.KindRVWW.
const KindRollback codec.Kind = "rollback"

// KnownKind reports whether k is one of the kinds a version-1 leaf can
// have: vrf, avir-attestation, avir-spec, rvww, rollback.
func KnownKind(k codec.Kind) bool {
	switch k {
	case codec.KindVRF, codec.KindAVIRAttestation, codec.KindAVIRSpec, codec.KindRVWW, KindRollback:
		return true
	}
	return false
}

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
	// Rel is RelPreviousReceipt or RelTaskPrevious.
	Rel string
	// ID is the identity (Leaf.ID) of the earlier event.
	ID string
	// Seq is the earlier event's seq.
	Seq int64
}

// Leaf is what an event's Merkle leaf commits to: every fact of the event
// but its document bytes, which are committed through Digest and Size.
type Leaf struct {
	// Seq is the event's sequence number, dense from 0: its leaf index.
	Seq int64
	// AppendedAt is the submission's arrival time, never decreasing along
	// the log.
	AppendedAt time.Time
	// Kind is the document kind (see KnownKind).
	Kind codec.Kind
	// ID is the document's identity within its kind.
	ID string
	// Subject is who the document speaks for: the agent of a receipt, the
	// system ("name vX") of an AVIR document, the task of a bundle or
	// rollback. Empty when there is none.
	Subject string
	// Signer is "ed25519:<hex public key>" or, for a witness bundle,
	// "hmac:<16 hex>" (a fingerprint of its HMAC key); empty when unsigned.
	Signer string
	// Time is the document's own time; zero when it has none.
	Time time.Time
	// Links point to earlier events.
	Links []Link
	// Position is a receipt's chain position (0 for a chain's first
	// receipt); -1 for the other kinds.
	Position int64
	// Digest and Size are the SHA-256 and length of the document's
	// original bytes.
	Digest [sha256.Size]byte
	Size   int64
	// Attrs holds kind-specific facts recorded at append time: a JSON
	// object, omitted from the leaf when empty. The zero Value counts as
	// empty.
	Attrs canonjson.Value
}

// LeafHash returns the RFC 6962 hash of a leaf: SHA-256(0x00 || leaf).
func LeafHash(leaf []byte) tlog.Hash { return tlog.RecordHash(leaf) }

// Encode returns the leaf's bytes: the canonical JSON (canonjson.Canonical:
// keys sorted, no spaces, ensure_ascii) of the object described in
// docs/FORMAT.md. subject, signer and time are omitted when empty or zero,
// position when negative, links when there are none, attrs when it has no
// members. Attrs must be an object.
func (l *Leaf) Encode() []byte { return l.AppendEncode(make([]byte, 0, 512)) }

// AppendEncode appends Encode's bytes to dst.
func (l *Leaf) AppendEncode(dst []byte) []byte {
	// Keys in sorted order: appended_at attrs digest id kind links
	// position seq signer size subject time v.
	dst = append(dst, `{"appended_at":`...)
	dst = appendTime(dst, l.AppendedAt)
	if l.Attrs.Len() > 0 {
		dst = append(dst, `,"attrs":`...)
		dst = canonjson.AppendCanonical(dst, l.Attrs)
	}
	dst = append(dst, `,"digest":"sha256:`...)
	dst = hex.AppendEncode(dst, l.Digest[:])
	dst = append(dst, `","id":`...)
	dst = appendString(dst, l.ID)
	dst = append(dst, `,"kind":`...)
	dst = appendString(dst, string(l.Kind))
	if len(l.Links) > 0 {
		dst = append(dst, `,"links":[`...)
		for i, k := range l.Links {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"id":`...)
			dst = appendString(dst, k.ID)
			dst = append(dst, `,"rel":`...)
			dst = appendString(dst, k.Rel)
			dst = append(dst, `,"seq":`...)
			dst = strconv.AppendInt(dst, k.Seq, 10)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if l.Position >= 0 {
		dst = append(dst, `,"position":`...)
		dst = strconv.AppendInt(dst, l.Position, 10)
	}
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, l.Seq, 10)
	if l.Signer != "" {
		dst = append(dst, `,"signer":`...)
		dst = appendString(dst, l.Signer)
	}
	dst = append(dst, `,"size":`...)
	dst = strconv.AppendInt(dst, l.Size, 10)
	if l.Subject != "" {
		dst = append(dst, `,"subject":`...)
		dst = appendString(dst, l.Subject)
	}
	if !l.Time.IsZero() {
		dst = append(dst, `,"time":`...)
		dst = appendTime(dst, l.Time)
	}
	dst = append(dst, `,"v":`...)
	dst = strconv.AppendInt(dst, LeafVersion, 10)
	return append(dst, '}')
}

// appendString appends s as a canonical JSON string (ensure_ascii).
func appendString(dst []byte, s string) []byte {
	return canonjson.AppendCanonical(dst, canonjson.MakeString(s))
}

// appendTime appends t as a JSON string: RFC 3339 in UTC with nanoseconds,
// trailing zeros of the fraction dropped (Go's time.RFC3339Nano).
func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

// ParseLeaf reads a leaf strictly: the JSON of Encode, with every key of
// the right type and range, a known kind, version LeafVersion, a position
// for receipts only, links to earlier events with known relations, attrs
// an object holding no non-integer number, and the whole in canonical form
// (Encode of the result gives back exactly leaf): its hash is what the
// tree commits to, so no other spelling of the same facts is accepted.
// Errors wrap ErrMalformed.
func ParseLeaf(leaf []byte) (*Leaf, error) {
	var p LeafParser
	return p.Parse(leaf)
}

// LeafParser parses leaves like ParseLeaf, keeping its work space from one
// call to the next: scans of many leaves allocate little more than the
// leaves themselves. The zero LeafParser is ready to use; it is not safe
// for concurrent use.
type LeafParser struct {
	json canonjson.Parser
	buf  []byte
}

// Parse is ParseLeaf with p's work space.
func (p *LeafParser) Parse(leaf []byte) (*Leaf, error) {
	v, err := p.json.Parse(leaf)
	if err != nil {
		return nil, jsonError(err)
	}
	l, err := leafOf(v)
	if err != nil {
		return nil, err
	}
	p.buf = l.AppendEncode(p.buf[:0])
	if !bytes.Equal(p.buf, leaf) {
		return nil, notCanonical(string(leaf), p.buf)
	}
	return l, nil
}

// ParseString is Parse of the bytes of leaf without copying them: the
// strings of the result (ID, Subject, Signer, link IDs, Attrs) share
// leaf's memory.
func (p *LeafParser) ParseString(leaf string) (*Leaf, error) {
	v, err := p.json.ParseString(leaf)
	if err != nil {
		return nil, jsonError(err)
	}
	l, err := leafOf(v)
	if err != nil {
		return nil, err
	}
	p.buf = l.AppendEncode(p.buf[:0])
	if string(p.buf) != leaf {
		return nil, notCanonical(leaf, p.buf)
	}
	return l, nil
}

// jsonError reports JSON that does not parse, keeping the message short
// (a syntax error can quote a whole key).
func jsonError(err error) error {
	var se *canonjson.SyntaxError
	if errors.As(err, &se) {
		reason := se.Reason
		if len(reason) > 2*maxQuote {
			reason = reason[:2*maxQuote] + "..."
		}
		return fmt.Errorf("%w: leaf: offset %d: %s", ErrMalformed, se.Offset, reason)
	}
	return fmt.Errorf("%w: leaf: %v", ErrMalformed, err)
}

// notCanonical reports where leaf and its canonical encoding part.
func notCanonical(leaf string, canon []byte) error {
	i := 0
	for i < len(leaf) && i < len(canon) && leaf[i] == canon[i] {
		i++
	}
	const show = 16
	return fmt.Errorf("%w: leaf: offset %d: not in canonical form: %s where the canonical encoding has %s",
		ErrMalformed, i, quote(leaf[i:min(len(leaf), i+show)]), quote(string(canon[i:min(len(canon), i+show)])))
}

// leafOf reads the leaf's fields out of its parsed JSON, checking each.
func leafOf(v canonjson.Value) (*Leaf, error) {
	if v.Type() != canonjson.Object {
		return nil, leafError("", "want a JSON object, got %s", v.Type())
	}
	l := &Leaf{Position: -1}
	var have struct{ v, seq, appendedAt, kind, id, size, digest bool }
	for _, m := range v.Members() {
		f := m.Value
		var err error
		switch m.Key {
		case "v":
			var ver int64
			if ver, err = leafInt(m.Key, f); err == nil && ver != LeafVersion {
				err = leafError(m.Key, "version %d, this package reads %d", ver, LeafVersion)
			}
			have.v = true
		case "seq":
			l.Seq, err = leafInt(m.Key, f)
			have.seq = true
		case "appended_at":
			l.AppendedAt, err = leafTime(m.Key, f)
			have.appendedAt = true
		case "kind":
			var k string
			if k, err = leafString(m.Key, f); err == nil && !KnownKind(codec.Kind(k)) {
				err = leafError(m.Key, "unknown kind %s (want vrf, avir-attestation, avir-spec, rvww or rollback)", quote(k))
			}
			l.Kind = codec.Kind(k)
			have.kind = true
		case "id":
			l.ID, err = leafString(m.Key, f)
			have.id = true
		case "size":
			l.Size, err = leafInt(m.Key, f)
			have.size = true
		case "digest":
			l.Digest, err = leafDigest(m.Key, f)
			have.digest = true
		case "subject":
			l.Subject, err = leafString(m.Key, f)
		case "signer":
			l.Signer, err = leafString(m.Key, f)
		case "time":
			l.Time, err = leafTime(m.Key, f)
		case "position":
			l.Position, err = leafInt(m.Key, f)
		case "links":
			l.Links, err = leafLinks(f)
		case "attrs":
			err = leafAttrs(f)
			l.Attrs = f
		default:
			err = leafError("", "unknown key %s", quote(m.Key))
		}
		if err != nil {
			return nil, err
		}
	}
	for _, req := range []struct {
		key  string
		seen bool
	}{{"v", have.v}, {"seq", have.seq}, {"appended_at", have.appendedAt}, {"kind", have.kind},
		{"id", have.id}, {"size", have.size}, {"digest", have.digest}} {
		if !req.seen {
			return nil, leafError(req.key, "missing")
		}
	}
	if (l.Kind == codec.KindVRF) != (l.Position >= 0) {
		if l.Kind == codec.KindVRF {
			return nil, leafError("position", "missing: a receipt's leaf has its chain position")
		}
		return nil, leafError("position", "present in a %s leaf: only receipts have one", l.Kind)
	}
	for i, k := range l.Links {
		if k.Seq >= l.Seq {
			return nil, leafError(fmt.Sprintf("links[%d].seq", i), "%d is not an earlier event than seq %d", k.Seq, l.Seq)
		}
	}
	return l, nil
}

func leafError(field, format string, args ...any) error {
	if field == "" {
		return fmt.Errorf("%w: leaf: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("%w: leaf: %s: %s", ErrMalformed, field, fmt.Sprintf(format, args...))
}

// leafString reads a non-empty string: empty strings are never written
// (optional keys are omitted instead).
func leafString(key string, f canonjson.Value) (string, error) {
	s, ok := f.Str()
	if !ok {
		return "", leafError(key, "want a string, got %s", f.Type())
	}
	if s == "" {
		return "", leafError(key, "empty string")
	}
	return s, nil
}

// leafInt reads a non-negative integer.
func leafInt(key string, f canonjson.Value) (int64, error) {
	if f.Type() != canonjson.Number || !f.IsInt() {
		return 0, leafError(key, "want an integer, got %s %s", f.Type(), quote(f.Literal()))
	}
	i, ok := f.Int64()
	if !ok || i < 0 {
		return 0, leafError(key, "want an integer from 0 to 2^63-1, got %s", quote(f.Literal()))
	}
	return i, nil
}

// leafTime reads a time written by appendTime.
func leafTime(key string, f canonjson.Value) (time.Time, error) {
	s, err := leafString(key, f)
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, leafError(key, "want an RFC 3339 time, got %s", quote(s))
	}
	if t.IsZero() {
		return time.Time{}, leafError(key, "the zero time %s is never written", quote(s))
	}
	return t.UTC(), nil
}

// leafDigest reads "sha256:" and 64 lowercase hex digits.
func leafDigest(key string, f canonjson.Value) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	s, err := leafString(key, f)
	if err != nil {
		return d, err
	}
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 2*sha256.Size {
		return d, leafError(key, "want sha256:<64 lowercase hex digits>, got %s", quote(s))
	}
	for i := 0; i < len(h); i += 2 {
		hi, ok1 := lowerHex(h[i])
		lo, ok2 := lowerHex(h[i+1])
		if !ok1 || !ok2 {
			return d, leafError(key, "want sha256:<64 lowercase hex digits>, got %s", quote(s))
		}
		d[i/2] = hi<<4 | lo
	}
	return d, nil
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// leafLinks reads a non-empty array of {"id","rel","seq"} objects.
func leafLinks(f canonjson.Value) ([]Link, error) {
	if f.Type() != canonjson.Array {
		return nil, leafError("links", "want an array, got %s", f.Type())
	}
	if f.Len() == 0 {
		return nil, leafError("links", "empty array (omitted when there are no links)")
	}
	links := make([]Link, 0, f.Len())
	for i, e := range f.Elems() {
		k, err := leafLink(e)
		if err != nil {
			return nil, fmt.Errorf("%w: leaf: links[%d]%s", ErrMalformed, i, err)
		}
		links = append(links, k)
	}
	return links, nil
}

// linkError is a problem with one link; leafLinks says which link.
type linkError string

func (e linkError) Error() string { return string(e) }

// leafLink reads one link.
func leafLink(e canonjson.Value) (Link, error) {
	bad := func(format string, args ...any) (Link, error) {
		return Link{}, linkError(fmt.Sprintf(format, args...))
	}
	if e.Type() != canonjson.Object {
		return bad(": want an object, got %s", e.Type())
	}
	var k Link
	var have struct{ id, rel, seq bool }
	for _, m := range e.Members() {
		switch m.Key {
		case "id":
			s, ok := m.Value.Str()
			if !ok || s == "" {
				return bad(".id: want a non-empty string")
			}
			k.ID, have.id = s, true
		case "rel":
			s, _ := m.Value.Str()
			if s != RelPreviousReceipt && s != RelTaskPrevious {
				return bad(".rel: want %q or %q, got %s %s", RelPreviousReceipt, RelTaskPrevious, m.Value.Type(), quote(s))
			}
			k.Rel, have.rel = s, true
		case "seq":
			n, ok := m.Value.Int64()
			if !ok || n < 0 {
				return bad(".seq: want an integer from 0 to 2^63-1, got %s %s", m.Value.Type(), quote(m.Value.Literal()))
			}
			k.Seq, have.seq = n, true
		default:
			return bad(": unknown key %s", quote(m.Key))
		}
	}
	switch {
	case !have.id:
		return bad(".id: missing")
	case !have.rel:
		return bad(".rel: missing")
	case !have.seq:
		return bad(".seq: missing")
	}
	return k, nil
}

// leafAttrs checks attrs: a non-empty object whose numbers, at any depth,
// are integers in the int64 range (the ledger writes no floats).
func leafAttrs(f canonjson.Value) error {
	if f.Type() != canonjson.Object {
		return leafError("attrs", "want an object, got %s", f.Type())
	}
	if f.Len() == 0 {
		return leafError("attrs", "empty object (omitted when there are no attrs)")
	}
	if allInts(f) {
		return nil
	}
	return attrNumbers("attrs", f)
}

// allInts reports whether every number in v is an integer in the int64
// range.
func allInts(v canonjson.Value) bool {
	switch v.Type() {
	case canonjson.Number:
		_, ok := v.Int64()
		return ok
	case canonjson.Array:
		for _, e := range v.Elems() {
			if !allInts(e) {
				return false
			}
		}
	case canonjson.Object:
		for _, m := range v.Members() {
			if !allInts(m.Value) {
				return false
			}
		}
	}
	return true
}

// attrNumbers finds and names the first number of v that is not an
// int64 integer.
func attrNumbers(path string, v canonjson.Value) error {
	switch v.Type() {
	case canonjson.Number:
		if _, ok := v.Int64(); !ok {
			return leafError(path, "want an integer (leaves hold no floats), got %s", quote(v.Literal()))
		}
	case canonjson.Array:
		for i, e := range v.Elems() {
			if err := attrNumbers(path+"["+strconv.Itoa(i)+"]", e); err != nil {
				return err
			}
		}
	case canonjson.Object:
		for _, m := range v.Members() {
			if err := attrNumbers(path+"."+m.Key, m.Value); err != nil {
				return err
			}
		}
	}
	return nil
}
