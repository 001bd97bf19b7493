package proof

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

func TestEmptyRoot(t *testing.T) {
	if got, want := EmptyRoot(), tlog.Hash(sha256.Sum256(nil)); got != want {
		t.Fatalf("EmptyRoot() = %s, want SHA-256 of nothing %s", got, want)
	}
	if h, err := tlog.TreeHash(0, hashMap{}); err != nil || h != EmptyRoot() {
		t.Fatalf("tlog.TreeHash(0) = %s, %v; want EmptyRoot()", h, err)
	}
}

const goodRoot = "lpOTpsTkfuxYgpnZbZuHPfk7mUCHcOqrG0H3mcX++Qs="

func TestParseCheckpoint(t *testing.T) {
	empty := EmptyRoot().String()
	ok := []struct {
		name, text string
		want       Checkpoint
	}{
		{"plain", "example.org/log\n5\n" + goodRoot + "\n", Checkpoint{"example.org/log", 5, mustHash(t, goodRoot)}},
		{"empty tree", "o\n0\n" + empty + "\n", Checkpoint{"o", 0, EmptyRoot()}},
		{"extension lines", "o\n12\n" + goodRoot + "\next one\n— ext two\n", Checkpoint{"o", 12, mustHash(t, goodRoot)}},
		{"largest size", "o\n9223372036854775807\n" + goodRoot + "\n", Checkpoint{"o", 1<<63 - 1, mustHash(t, goodRoot)}},
		{"origin with spaces", "my log\n1\n" + goodRoot + "\n", Checkpoint{"my log", 1, mustHash(t, goodRoot)}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseCheckpoint(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if c != tc.want {
				t.Fatalf("got %+v, want %+v", c, tc.want)
			}
			if !strings.Contains(tc.name, "extension") && c.Text() != tc.text {
				t.Fatalf("Text() = %q, want %q", c.Text(), tc.text)
			}
		})
	}
	// 33 bytes also take 44 base64 characters; a root with its last
	// padding bits set decodes to the same bytes in a lenient decoder.
	root33 := b64(make([]byte, 33))
	badPad := goodRoot[:42] + "t="
	if b, err := base64.StdEncoding.DecodeString(badPad); err != nil || len(b) != 32 {
		t.Fatalf("test root %q should pass a lenient decoder: %v", badPad, err)
	}
	bad := []struct {
		name, text string
		want       error
	}{
		{"empty", "", ErrMalformed},
		{"no final newline", "o\n5\n" + goodRoot, ErrMalformed},
		{"two lines", "o\n5\n", ErrMalformed},
		{"empty origin", "\n5\n" + goodRoot + "\n", ErrMalformed},
		{"size with plus", "o\n+5\n" + goodRoot + "\n", ErrMalformed},
		{"negative size", "o\n-1\n" + goodRoot + "\n", ErrMalformed},
		{"leading zero", "o\n05\n" + goodRoot + "\n", ErrMalformed},
		{"double zero", "o\n00\n" + empty + "\n", ErrMalformed},
		{"space before size", "o\n 5\n" + goodRoot + "\n", ErrMalformed},
		{"space after size", "o\n5 \n" + goodRoot + "\n", ErrMalformed},
		{"hex size", "o\n0x5\n" + goodRoot + "\n", ErrMalformed},
		{"size overflow", "o\n9223372036854775808\n" + goodRoot + "\n", ErrMalformed},
		{"empty size", "o\n\n" + goodRoot + "\n", ErrMalformed},
		{"short root", "o\n5\n" + goodRoot[:43] + "\n", ErrMalformed},
		{"unpadded root", "o\n5\n" + strings.TrimSuffix(goodRoot, "=") + "\n", ErrMalformed},
		{"33-byte root", "o\n5\n" + root33 + "\n", ErrMalformed},
		{"padding bits set", "o\n5\n" + badPad + "\n", ErrMalformed},
		{"url base64 root", "o\n5\n" + strings.ReplaceAll(goodRoot, "+", "-") + "\n", ErrMalformed},
		{"root with space", "o\n5\n" + goodRoot + " \n", ErrMalformed},
		{"CRLF", "o\r\n5\r\n" + goodRoot + "\r\n", ErrMalformed},
		{"CR inside the root", "o\n5\n" + goodRoot[:20] + "\r" + goodRoot[20:] + "\n", ErrMalformed},
		{"empty extension line", "o\n5\n" + goodRoot + "\n\n", ErrMalformed},
		{"empty line between extensions", "o\n5\n" + goodRoot + "\na\n\nb\n", ErrMalformed},
		{"tab", "o\t\n5\n" + goodRoot + "\n", ErrMalformed},
		{"invalid UTF-8", "o\xff\n5\n" + goodRoot + "\n", ErrMalformed},
		{"size 0 with another root", "o\n0\n" + goodRoot + "\n", ErrInvalid},
		{"size 0 with zero root", "o\n0\n" + b64(make([]byte, 32)) + "\n", ErrInvalid},
		{"too large", "o\n5\n" + goodRoot + "\n" + strings.Repeat("x", MaxProofSize) + "\n", ErrMalformed},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseCheckpoint(tc.text)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ParseCheckpoint(%.60q) = %+v, %v; want an error wrapping %v", tc.text, c, err, tc.want)
			}
			shortError(t, err)
		})
	}
}

func mustHash(t *testing.T, s string) tlog.Hash {
	t.Helper()
	h, ok := parseHash(s)
	if !ok {
		t.Fatalf("bad test hash %q", s)
	}
	return h
}

func TestOpenCheckpoint(t *testing.T) {
	m := newMemLog(t, testOrigin, testKey(1)).grow(7)
	signed := m.checkpoint(7)
	c, err := OpenCheckpoint(signed, m.vkey)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Checkpoint{testOrigin, 7, m.root(7)}); c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
	if _, err := OpenCheckpoint(signed, "  "+m.vkey+"\n"); err != nil {
		t.Fatalf("surrounding space in the key: %v", err)
	}

	// A cosignature by another key (a witness) is ignored.
	witness, _, err := NewSigner("witness.example", testKey(9))
	if err != nil {
		t.Fatal(err)
	}
	cosigned, err := note.Sign(&note.Note{Text: c.Text()}, m.signer, witness)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCheckpoint(cosigned, m.vkey); err != nil {
		t.Fatalf("cosigned checkpoint: %v", err)
	}

	other := newMemLog(t, testOrigin, testKey(2)).grow(7)
	otherName := newMemLog(t, "other.example", testKey(1))
	// A note by the right key whose origin line is not the key's name.
	misnamed, err := note.Sign(&note.Note{Text: Checkpoint{"other.example", 7, m.root(7)}.Text()}, m.signer)
	if err != nil {
		t.Fatal(err)
	}
	zeroRoot, err := note.Sign(&note.Note{Text: testOrigin + "\n0\n" + b64(make([]byte, 32)) + "\n"}, m.signer)
	if err != nil {
		t.Fatal(err)
	}
	extBlank, err := note.Sign(&note.Note{Text: c.Text() + "\nx\n"}, m.signer)
	if err != nil {
		t.Fatal(err)
	}
	tampered := []byte(strings.Replace(string(signed), "\n7\n", "\n8\n", 1))
	bad := []struct {
		name   string
		signed []byte
		vkey   string
		want   error
	}{
		{"other key of the same name", signed, other.vkey, ErrInvalid},
		{"key of another name", signed, otherName.vkey, ErrInvalid},
		{"origin is not the key name", misnamed, m.vkey, ErrInvalid},
		{"size changed", tampered, m.vkey, ErrInvalid},
		{"size 0 with zero root", zeroRoot, m.vkey, ErrInvalid},
		{"blank line in the text", extBlank, m.vkey, ErrMalformed},
		{"not a key", signed, "nonsense", ErrVerifierKey},
		{"empty key", signed, "", ErrVerifierKey},
		{"no signature", []byte(c.Text()), m.vkey, ErrMalformed},
		{"trailing garbage", append(append([]byte{}, signed...), "garbage\n"...), m.vkey, ErrMalformed},
		{"no final newline", signed[:len(signed)-1], m.vkey, ErrMalformed},
		{"CRLF", []byte(strings.ReplaceAll(string(signed), "\n", "\r\n")), m.vkey, ErrMalformed},
		{"truncated", signed[:len(signed)/2], m.vkey, ErrMalformed},
		{"empty", nil, m.vkey, ErrMalformed},
		{"oversized", append([]byte(strings.Repeat("x", MaxProofSize)), signed...), m.vkey, ErrMalformed},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			c, err := OpenCheckpoint(tc.signed, tc.vkey)
			if !errors.Is(err, tc.want) {
				t.Fatalf("OpenCheckpoint = %+v, %v; want an error wrapping %v", c, err, tc.want)
			}
			shortError(t, err)
		})
	}
}

func TestSign(t *testing.T) {
	m := newMemLog(t, testOrigin, testKey(1)).grow(3)
	bad := []struct {
		name string
		c    Checkpoint
	}{
		{"origin of another log", Checkpoint{"other.example", 3, m.root(3)}},
		{"origin with a newline", Checkpoint{testOrigin + "\n4", 3, m.root(3)}},
		{"empty origin", Checkpoint{"", 3, m.root(3)}},
		{"negative size", Checkpoint{testOrigin, -1, m.root(3)}},
		{"empty tree with zero root", Checkpoint{testOrigin, 0, tlog.Hash{}}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if signed, err := Sign(tc.c, m.signer); err == nil {
				t.Fatalf("Sign(%+v) = %q, want an error", tc.c, signed)
			}
		})
	}
	signed, err := Sign(Checkpoint{testOrigin, 0, EmptyRoot()}, m.signer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCheckpoint(signed, m.vkey); err != nil {
		t.Fatalf("empty tree: %v", err)
	}
}

func TestNewSigner(t *testing.T) {
	if _, _, err := NewSigner(testOrigin, testKey(1)[:32]); !errors.Is(err, ErrVerifierKey) {
		t.Fatalf("short private key: %v", err)
	}
	for _, origin := range []string{"", "two words", "a+b"} {
		if _, _, err := NewSigner(origin, testKey(1)); !errors.Is(err, ErrVerifierKey) {
			t.Errorf("origin %q: %v, want ErrVerifierKey", origin, err)
		}
	}
	s, vkey, err := NewSigner(testOrigin, testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	if v.Name() != testOrigin || v.KeyHash() != s.KeyHash() {
		t.Fatalf("verifier %s/%08x does not match signer %s/%08x", v.Name(), v.KeyHash(), s.Name(), s.KeyHash())
	}
}
