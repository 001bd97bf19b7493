package proof

import (
	"crypto/ed25519"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Checkpoint is a tree head: the body of a C2SP tlog-checkpoint.
type Checkpoint struct {
	// Origin names the log; it is also the name of the log's key.
	Origin string
	// Size is the number of leaves in the tree.
	Size int64
	// Root is the RFC 6962 root hash of the tree of Size leaves
	// (EmptyRoot() when Size is 0).
	Root tlog.Hash
}

// EmptyRoot returns the RFC 6962 root of the empty tree: SHA-256 of the
// empty string, e3b0c442...b855.
func EmptyRoot() tlog.Hash {
	return tlog.Hash{
		0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14,
		0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
		0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c,
		0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55,
	}
}

// Text returns the checkpoint's note text: origin, size and base64 root,
// each on its own line ending in '\n'.
func (c Checkpoint) Text() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, b64(c.Root[:]))
}

// ParseCheckpoint reads a checkpoint's note text strictly: a non-empty
// origin line, the size in canonical decimal (no sign, no leading zeros
// except "0"), the root as exactly 32 bytes of strict standard base64, then
// any number of non-empty extension lines (ignored), every line ending in
// '\n'. The text is UTF-8 without control characters other than '\n' (so
// no '\r'). A tree of size 0 must have the root EmptyRoot(); that failure
// wraps ErrInvalid, every other one ErrMalformed.
func ParseCheckpoint(text string) (Checkpoint, error) {
	const what = "checkpoint"
	if err := checkSize(what, len(text)); err != nil {
		return Checkpoint{}, err
	}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && size == 1 {
			return Checkpoint{}, malformed(what, "offset %d: invalid UTF-8", i)
		}
		if r == '\r' {
			return Checkpoint{}, malformed(what, "offset %d: carriage return (lines end with \\n alone)", i)
		}
		if r < 0x20 && r != '\n' {
			return Checkpoint{}, malformed(what, "offset %d: control character 0x%02x", i, r)
		}
		i += size
	}
	body, ok := strings.CutSuffix(text, "\n")
	if !ok {
		return Checkpoint{}, malformed(what, "the text does not end with a newline")
	}
	lines := strings.Split(body, "\n")
	if len(lines) < 3 {
		return Checkpoint{}, malformed(what, "want origin, size and root lines, got %d line(s)", len(lines))
	}
	if lines[0] == "" {
		return Checkpoint{}, malformed(what, "line 1 (origin) is empty")
	}
	size, ok := parseDecimal(lines[1])
	if !ok {
		return Checkpoint{}, malformed(what, "line 2 (size): want a decimal without sign or leading zeros, got %s", quote(lines[1]))
	}
	root, ok := parseHash(lines[2])
	if !ok {
		return Checkpoint{}, malformed(what, "line 3 (root): want 32 bytes in standard base64 (44 characters), got %s", quote(lines[2]))
	}
	for i, ext := range lines[3:] {
		if ext == "" {
			return Checkpoint{}, malformed(what, "line %d: empty extension line", i+4)
		}
	}
	c := Checkpoint{Origin: lines[0], Size: size, Root: root}
	if size == 0 && root != EmptyRoot() {
		return Checkpoint{}, invalid(what, "a tree of size 0 has root %s (SHA-256 of nothing), not %s", EmptyRoot().String(), root.String())
	}
	return c, nil
}

// OpenCheckpoint verifies a signed checkpoint note against the verifier key
// vkey ("<origin>+<hash>+<base64 key>", surrounding space ignored) and
// returns its tree head. The note must carry a valid signature by that key
// (signatures by other keys, such as witness cosignatures, are ignored), its
// text must satisfy ParseCheckpoint, and its origin must equal the key's
// name.
func OpenCheckpoint(signed []byte, vkey string) (Checkpoint, error) {
	const what = "checkpoint"
	v, err := note.NewVerifier(strings.TrimSpace(vkey))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %s: %v", ErrVerifierKey, quote(strings.TrimSpace(vkey)), err)
	}
	text, err := splitNote(what, signed)
	if err != nil {
		return Checkpoint{}, err
	}
	c, err := ParseCheckpoint(text)
	if err != nil {
		return Checkpoint{}, err
	}
	if _, err := note.Open(signed, note.VerifierList(v)); err != nil {
		return Checkpoint{}, invalid(what, "signature by %s: %v", quote(v.Name()), err)
	}
	if c.Origin != v.Name() {
		return Checkpoint{}, invalid(what, "origin %s is not the key's name %s", quote(c.Origin), quote(v.Name()))
	}
	return c, nil
}

// VerifierKey returns the signed-note verifier key of the Ed25519 public
// key pub under the name origin: "<origin>+<8 hex key hash>+<base64 of
// 0x01 and pub>", the contents of a ledger's log.pub.
func VerifierKey(origin string, pub ed25519.PublicKey) (string, error) {
	if !validKeyName(origin) {
		return "", fmt.Errorf("%w: origin %s: a key name is non-empty, without spaces or '+'", ErrVerifierKey, quote(origin))
	}
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrVerifierKey, err)
	}
	return vkey, nil
}

// NewSigner returns a note signer that signs checkpoints of the log origin
// with the Ed25519 key priv, and the matching verifier key (VerifierKey).
func NewSigner(origin string, priv ed25519.PrivateKey) (note.Signer, string, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, "", fmt.Errorf("%w: private key has %d bytes, want %d", ErrVerifierKey, len(priv), ed25519.PrivateKeySize)
	}
	vkey, err := VerifierKey(origin, priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, "", err
	}
	// vkey is "<name>+<hash>+<base64 of 0x01||pub>"; the signer key
	// carries the same name and hash with the seed instead.
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return nil, "", fmt.Errorf("%w: verifier key %s: unexpected shape", ErrVerifierKey, quote(vkey))
	}
	skey := fmt.Sprintf("PRIVATE+KEY+%s+%s+%s", parts[0], parts[1], b64(append([]byte{1}, priv.Seed()...)))
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, "", fmt.Errorf("%w: checkpoint signer: %v", ErrVerifierKey, err)
	}
	return s, vkey, nil
}

// Sign returns c as a signed note by s. It refuses a checkpoint that
// OpenCheckpoint would refuse: one whose text does not parse back to c
// (an origin with a newline, a negative size, a size-0 tree whose root is
// not EmptyRoot()) or whose origin is not the signer's name.
func Sign(c Checkpoint, s note.Signer) ([]byte, error) {
	back, err := ParseCheckpoint(c.Text())
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	if back != c {
		return nil, malformed("sign", "checkpoint with origin %s does not survive its own text form", quote(c.Origin))
	}
	if s.Name() != c.Origin {
		return nil, invalid("sign", "origin %s is not the signer's name %s", quote(c.Origin), quote(s.Name()))
	}
	signed, err := note.Sign(&note.Note{Text: c.Text()}, s)
	if err != nil {
		return nil, fmt.Errorf("%w: sign checkpoint: %v", ErrVerifierKey, err)
	}
	return signed, nil
}
