package proof

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/rollback"
)

// referenceLeaf is ledger.Event.Leaf as it was when this package was
// written (ledger/event.go at 339041c), built with canonjson objects: the
// bytes every existing ledger has committed. Leaf.AppendEncode writes the
// same bytes by hand.
func referenceLeaf(e *Leaf) []byte {
	formatTime := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
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

// randString returns a string mixing ASCII, JSON specials, control
// characters, non-ASCII and astral code points; sometimes empty.
func randString(r *rand.Rand) string {
	alphabet := []string{"a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "\u2028", "€", "😀", "\ufeff", "@", "+", "\xed\xa0\x80"}
	n := r.IntN(12)
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

// randLeaf returns a valid leaf with random contents.
func randLeaf(r *rand.Rand) *Leaf {
	kinds := []codec.Kind{codec.KindVRF, codec.KindAVIRAttestation, codec.KindAVIRSpec, codec.KindRVWW, KindRollback}
	nonEmpty := func() string {
		if s := randString(r); s != "" {
			return s
		}
		return "x"
	}
	randTime := func() time.Time {
		ns := r.Int64N(1 << 62)
		if r.IntN(3) == 0 {
			ns -= ns % 1e9 // whole seconds
		}
		return time.Unix(0, ns).In(time.FixedZone("x", 3600*r.IntN(5)))
	}
	l := &Leaf{
		Seq:        r.Int64N(1 << 40),
		AppendedAt: randTime(),
		Kind:       kinds[r.IntN(len(kinds))],
		ID:         nonEmpty(),
		Subject:    randString(r),
		Signer:     randString(r),
		Position:   -1,
		Size:       r.Int64N(1 << 30),
	}
	if r.IntN(2) == 0 {
		l.Time = randTime()
	}
	for i := range l.Digest {
		l.Digest[i] = byte(r.Uint32())
	}
	if l.Kind == codec.KindVRF {
		l.Position = r.Int64N(1000)
	}
	for i := r.IntN(3); i > 0 && l.Seq > 0; i-- {
		rel := RelPreviousReceipt
		if r.IntN(2) == 0 {
			rel = RelTaskPrevious
		}
		l.Links = append(l.Links, Link{Rel: rel, ID: nonEmpty(), Seq: r.Int64N(l.Seq)})
	}
	if n := r.IntN(4); n > 0 {
		var ms []canonjson.Member
		for i := 0; i < n; i++ {
			var v canonjson.Value
			switch r.IntN(5) {
			case 0:
				v = canonjson.MakeInt(r.Int64() - r.Int64())
			case 1:
				v = canonjson.MakeString(randString(r))
			case 2:
				v = canonjson.MakeBool(r.IntN(2) == 0)
			case 3:
				v = canonjson.MakeArray(canonjson.MakeObject(
					canonjson.Member{Key: "tool", Value: canonjson.MakeString(randString(r))},
					canonjson.Member{Key: "call", Value: canonjson.MakeInt(r.Int64N(100))}))
			default:
				v = canonjson.MakeArray()
			}
			ms = append(ms, canonjson.Member{Key: string(rune('z'-i)) + randString(r), Value: v})
		}
		l.Attrs = canonjson.MakeObject(ms...)
	}
	return l
}

func TestEncodeMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var p LeafParser
	for i := 0; i < 20000; i++ {
		l := randLeaf(r)
		got, want := l.Encode(), referenceLeaf(l)
		if !bytes.Equal(got, want) {
			t.Fatalf("leaf %+v:\n Encode    %s\n reference %s", l, got, want)
		}
		back, err := ParseLeaf(got)
		if err != nil {
			t.Fatalf("ParseLeaf(%s): %v", got, err)
		}
		if again := back.Encode(); !bytes.Equal(again, got) {
			t.Fatalf("round trip changed the leaf:\n%s\n%s", got, again)
		}
		if back.Seq != l.Seq || back.Kind != l.Kind || back.ID != l.ID || back.Digest != l.Digest ||
			!back.AppendedAt.Equal(l.AppendedAt) || back.AppendedAt.Location() != time.UTC {
			t.Fatalf("parsed %+v from %+v", back, l)
		}
		fast, err := p.ParseString(string(got))
		if err != nil || !bytes.Equal(fast.Encode(), got) {
			t.Fatalf("LeafParser.ParseString(%s) = %v", got, err)
		}
	}
}

func TestKinds(t *testing.T) {
	if KindRollback != rollback.Kind {
		t.Fatalf("KindRollback = %q, codec/rollback says %q", KindRollback, rollback.Kind)
	}
	for _, k := range []codec.Kind{"vrf", "avir-attestation", "avir-spec", "rvww", "rollback"} {
		if !KnownKind(k) {
			t.Errorf("KnownKind(%q) = false", k)
		}
	}
	for _, k := range []codec.Kind{"", "VRF", "avir", "bundle"} {
		if KnownKind(k) {
			t.Errorf("KnownKind(%q) = true", k)
		}
	}
}

// goodLeaf is a valid leaf with every optional key.
const goodLeaf = `{"appended_at":"2026-11-23T02:50:15.035718123Z","attrs":{"restored_clean":true},` +
	`"digest":"sha256:974ea1905096bfd49f8e10a78879513ba348b54cbe8865ce2e95e5da707c1eb5",` +
	`"id":"t@rollback@2026-11-21T10:00:00.5Z","kind":"rollback",` +
	`"links":[{"id":"t@1795322099824745397","rel":"task_previous","seq":3}],` +
	`"seq":4,"signer":"ed25519:00","size":171,"subject":"t","time":"2026-11-21T10:00:00.5Z","v":1}`

// leafRejects are leaves ParseLeaf must refuse, each a small edit of
// goodLeaf (or of its receipt variant).
func leafRejects() []struct{ name, leaf string } {
	vrf := strings.Replace(strings.Replace(goodLeaf, `"kind":"rollback"`, `"kind":"vrf"`, 1),
		`"seq":4,`, `"position":0,"seq":4,`, 1)
	edit := func(old, new string) string {
		if !strings.Contains(goodLeaf, old) {
			panic("test leaf has no " + old)
		}
		return strings.Replace(goodLeaf, old, new, 1)
	}
	return []struct{ name, leaf string }{
		{"empty", ""},
		{"not an object", `[1]`},
		{"truncated", goodLeaf[:len(goodLeaf)-1]},
		{"trailing garbage", goodLeaf + "x"},
		{"trailing newline", goodLeaf + "\n"},
		{"leading space", " " + goodLeaf},
		{"BOM", "\xef\xbb\xbf" + goodLeaf},
		{"space after colon", edit(`"seq":4`, `"seq": 4`)},
		{"keys out of order", edit(`"size":171,"subject":"t"`, `"subject":"t","size":171`)},
		{"duplicate key", edit(`"seq":4,`, `"seq":4,"seq":4,`)},
		{"unknown key", edit(`"v":1`, `"v":1,"w":1`)},
		{"version 2", edit(`"v":1`, `"v":2`)},
		{"version as float", edit(`"v":1`, `"v":1.0`)},
		{"missing v", edit(`,"v":1`, ``)},
		{"missing seq", edit(`"seq":4,`, ``)},
		{"missing id", edit(`"id":"t@rollback@2026-11-21T10:00:00.5Z",`, ``)},
		{"missing digest", edit(`"digest":"sha256:974ea1905096bfd49f8e10a78879513ba348b54cbe8865ce2e95e5da707c1eb5",`, ``)},
		{"missing appended_at", edit(`"appended_at":"2026-11-23T02:50:15.035718123Z",`, ``)},
		{"negative seq", edit(`"seq":4`, `"seq":-4`)},
		{"seq as string", edit(`"seq":4`, `"seq":"4"`)},
		{"seq as float", edit(`"seq":4`, `"seq":4.0`)},
		{"seq with exponent", edit(`"seq":4`, `"seq":4e0`)},
		{"seq too large", edit(`"seq":4`, `"seq":9223372036854775808`)},
		{"negative size", edit(`"size":171`, `"size":-1`)},
		{"unknown kind", edit(`"kind":"rollback"`, `"kind":"bundle"`)},
		{"kind in capitals", edit(`"kind":"rollback"`, `"kind":"ROLLBACK"`)},
		{"empty id", edit(`"id":"t@rollback@2026-11-21T10:00:00.5Z"`, `"id":""`)},
		{"empty subject", edit(`"subject":"t"`, `"subject":""`)},
		{"empty signer", edit(`"signer":"ed25519:00"`, `"signer":""`)},
		{"subject null", edit(`"subject":"t"`, `"subject":null`)},
		{"digest in capitals", edit(`974ea19`, `974EA19`)},
		{"digest short", edit(`974ea19`, `974ea1`)},
		{"digest not hex", edit(`974ea19`, `974ea1g`)},
		{"digest without prefix", edit(`"sha256:974ea19`, `"974ea19`)},
		{"digest of another hash", edit(`"sha256:974ea19`, `"sha512:974ea19`)},
		{"time with an offset", edit(`"time":"2026-11-21T10:00:00.5Z"`, `"time":"2026-11-21T11:00:00.5+01:00"`)},
		{"time with a trailing zero", edit(`"time":"2026-11-21T10:00:00.5Z"`, `"time":"2026-11-21T10:00:00.50Z"`)},
		{"time in lower case", edit(`"time":"2026-11-21T10:00:00.5Z"`, `"time":"2026-11-21t10:00:00.5z"`)},
		{"time not a time", edit(`"time":"2026-11-21T10:00:00.5Z"`, `"time":"yesterday"`)},
		{"zero time", edit(`"time":"2026-11-21T10:00:00.5Z"`, `"time":"0001-01-01T00:00:00Z"`)},
		{"empty time", edit(`"time":"2026-11-21T10:00:00.5Z"`, `"time":""`)},
		{"appended_at as a number", edit(`"appended_at":"2026-11-23T02:50:15.035718123Z"`, `"appended_at":1795322099`)},
		{"position in a rollback", edit(`"seq":4,`, `"position":0,"seq":4,`)},
		{"receipt without position", strings.Replace(vrf, `"position":0,`, ``, 1)},
		{"negative position", strings.Replace(vrf, `"position":0,`, `"position":-1,`, 1)},
		{"empty links", edit(`[{"id":"t@1795322099824745397","rel":"task_previous","seq":3}]`, `[]`)},
		{"links an object", edit(`[{"id":"t@1795322099824745397","rel":"task_previous","seq":3}]`, `{"id":"x"}`)},
		{"link to a later event", edit(`"rel":"task_previous","seq":3}`, `"rel":"task_previous","seq":4}`)},
		{"link of unknown relation", edit(`"rel":"task_previous"`, `"rel":"parent"`)},
		{"link without seq", edit(`,"rel":"task_previous","seq":3}`, `,"rel":"task_previous"}`)},
		{"link with an extra key", edit(`"seq":3}`, `"seq":3,"x":1}`)},
		{"link not an object", edit(`[{"id":"t@1795322099824745397","rel":"task_previous","seq":3}]`, `["t"]`)},
		{"attrs an array", edit(`{"restored_clean":true}`, `[true]`)},
		{"attrs empty", edit(`{"restored_clean":true}`, `{}`)},
		{"attrs null", edit(`{"restored_clean":true}`, `null`)},
		{"float in attrs", edit(`{"restored_clean":true}`, `{"rate":0.5}`)},
		{"deep float in attrs", edit(`{"restored_clean":true}`, `{"v":[{"c":1e2}]}`)},
		{"huge integer in attrs", edit(`{"restored_clean":true}`, `{"n":123456789012345678901234567890}`)},
		{"attrs keys out of order", edit(`{"restored_clean":true}`, `{"b":1,"a":2}`)},
		{"raw UTF-8", edit(`"subject":"t"`, `"subject":"é"`)},
		{"escaped ASCII", edit(`"subject":"t"`, `"subject":"\u0074"`)},
		{"upper-case escape", edit(`"subject":"t"`, `"subject":"\u00E9"`)},
		{"escaped slash", edit(`"subject":"t"`, `"subject":"a\/b"`)},
		{"raw DEL", edit(`"subject":"t"`, "\"subject\":\"\x7f\"")},
	}
}

func TestParseLeafRejects(t *testing.T) {
	if _, err := ParseLeaf([]byte(goodLeaf)); err != nil {
		t.Fatalf("test leaf: %v", err)
	}
	vrf := strings.Replace(strings.Replace(goodLeaf, `"kind":"rollback"`, `"kind":"vrf"`, 1),
		`"seq":4,`, `"position":0,"seq":4,`, 1)
	if _, err := ParseLeaf([]byte(vrf)); err != nil {
		t.Fatalf("test receipt leaf: %v", err)
	}
	cases := leafRejects()
	var p LeafParser
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ParseLeaf([]byte(tc.leaf))
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseLeaf(%q) = %+v, %v; want ErrMalformed", tc.leaf, l, err)
			}
			shortError(t, err)
			if _, err2 := p.ParseString(tc.leaf); !errors.Is(err2, ErrMalformed) {
				t.Fatalf("LeafParser.ParseString accepted what ParseLeaf refused (%v)", err)
			}
		})
	}
	// The parser survives its errors.
	if _, err := p.ParseString(goodLeaf); err != nil {
		t.Fatalf("after errors: %v", err)
	}
}

func TestLeafErrorsNameTheField(t *testing.T) {
	cases := map[string]string{
		strings.Replace(goodLeaf, `"seq":4`, `"seq":"4"`, 1):                                   "seq: want an integer",
		strings.Replace(goodLeaf, `974ea19`, `974EA19`, 1):                                     "digest: want sha256:<64 lowercase hex digits>",
		strings.Replace(goodLeaf, `"rel":"task_previous"`, `"rel":"parent"`, 1):                "links[0].rel: want \"previous_receipt\" or \"task_previous\", got string \"parent\"",
		strings.Replace(goodLeaf, `{"restored_clean":true}`, `{"a":{"b":[1,2.5]}}`, 1):         "attrs.a.b[1]: want an integer",
		strings.Replace(goodLeaf, `"subject":"t"`, `"subject": "t"`, 1):                        fmt.Sprintf("offset %d: not in canonical form", strings.Index(goodLeaf, `"subject":"t"`)+len(`"subject":`)),
		strings.Replace(goodLeaf, `"time":"2026-11-21T10:00:00.5Z"`, `"time":"2026-13-01"`, 1): "time: want an RFC 3339 time",
	}
	for leaf, want := range cases {
		_, err := ParseLeaf([]byte(leaf))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseLeaf(%.60q...) = %v, want an error saying %q", leaf, err, want)
		}
	}
}

func TestLeafHash(t *testing.T) {
	leaf := []byte(goodLeaf)
	want := sha256.Sum256(append([]byte{0}, leaf...))
	if got := LeafHash(leaf); got != want {
		t.Fatalf("LeafHash = %x, want SHA-256(0x00 || leaf) = %x", got, want)
	}
}
