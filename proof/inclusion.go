package proof

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// InclusionProof shows that one event is in the tree of a signed
// checkpoint. Its text form is C2SP tlog-proof, with the event's Merkle
// leaf (Leaf.Encode) as the extra data:
//
//	c2sp.org/tlog-proof@v1
//	extra <base64 leaf>
//	index <seq>
//	<base64 hash>        (zero or more, from the leaf's sibling up)
//	                     (a blank line)
//	<signed checkpoint>
type InclusionProof struct {
	// Index is the proven leaf's index: the event's seq.
	Index int64
	// Leaf is the event's Merkle leaf; nil when the proof has no extra line.
	Leaf []byte
	// Hashes is the RFC 6962 audit path, from the leaf's sibling up.
	Hashes tlog.RecordProof
	// Checkpoint is the signed checkpoint note of the tree.
	Checkpoint []byte
}

// TlogProofHeader is the first line of an inclusion proof.
const TlogProofHeader = "c2sp.org/tlog-proof@v1"

// maxProofHashes bounds the hash lines of an inclusion proof: a tree of at
// most 2^63-1 leaves has audit paths of at most 63 hashes.
const maxProofHashes = 63

// Marshal writes the proof as C2SP tlog-proof text. The extra line is
// omitted when Leaf is empty.
func (p *InclusionProof) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(TlogProofHeader + "\n")
	if len(p.Leaf) > 0 {
		b.WriteString("extra " + b64(p.Leaf) + "\n")
	}
	fmt.Fprintf(&b, "index %d\n", p.Index)
	for _, h := range p.Hashes {
		b.WriteString(b64(h[:]) + "\n")
	}
	b.WriteString("\n")
	b.Write(p.Checkpoint)
	return b.Bytes()
}

// ParseInclusionProof reads C2SP tlog-proof text strictly: at most
// MaxProofSize bytes, no '\r' anywhere, the exact header line, an optional
// "extra <base64>" line (non-empty strict standard base64), "index <n>"
// with n in canonical decimal, zero to 63 hash lines (each exactly 32 bytes
// of strict base64), a blank line, then a signed checkpoint whose shape and
// text are checked (its signature is checked by Verify). Errors wrap
// ErrMalformed, or ErrInvalid for a size-0 checkpoint with a root other
// than EmptyRoot().
func ParseInclusionProof(data []byte) (*InclusionProof, error) {
	const what = "inclusion proof"
	if err := checkSize(what, len(data)); err != nil {
		return nil, err
	}
	if err := checkNoCR(what, data); err != nil {
		return nil, err
	}
	head, ckpt, ok := bytes.Cut(data, []byte("\n\n"))
	if !ok {
		return nil, malformed(what, "no blank line before the checkpoint")
	}
	lines := strings.Split(string(head), "\n")
	if lines[0] != TlogProofHeader {
		return nil, lineError(what, 1, "want %q, got %s", TlogProofHeader, quote(lines[0]))
	}
	p := &InclusionProof{}
	i := 1
	if i < len(lines) && strings.HasPrefix(lines[i], "extra") {
		enc, ok := strings.CutPrefix(lines[i], "extra ")
		if !ok {
			return nil, lineError(what, i+1, "want \"extra <base64>\", got %s", quote(lines[i]))
		}
		leaf, ok := decodeB64(enc)
		if !ok || len(leaf) == 0 {
			return nil, lineError(what, i+1, "extra: want non-empty standard base64, got %s", quote(enc))
		}
		p.Leaf = leaf
		i++
	}
	if i >= len(lines) {
		return nil, lineError(what, i+1, "want \"index <n>\", got the blank line")
	}
	num, ok := strings.CutPrefix(lines[i], "index ")
	if !ok {
		return nil, lineError(what, i+1, "want \"index <n>\", got %s", quote(lines[i]))
	}
	if p.Index, ok = parseDecimal(num); !ok {
		return nil, lineError(what, i+1, "index: want a decimal without sign or leading zeros, got %s", quote(num))
	}
	i++
	if n := len(lines) - i; n > maxProofHashes {
		return nil, malformed(what, "%d hash lines, more than an audit path has (%d)", n, maxProofHashes)
	}
	for ; i < len(lines); i++ {
		h, ok := parseHash(lines[i])
		if !ok {
			return nil, lineError(what, i+1, "want a hash (32 bytes in standard base64), got %s", quote(lines[i]))
		}
		p.Hashes = append(p.Hashes, h)
	}
	if err := checkSignedCheckpoint(what, ckpt); err != nil {
		return nil, err
	}
	p.Checkpoint = bytes.Clone(ckpt)
	return p, nil
}

// checkSignedCheckpoint checks the shape of the signed checkpoint that ends
// a proof, without its signature.
func checkSignedCheckpoint(what string, signed []byte) error {
	text, err := splitNote(what+": checkpoint", signed)
	if err != nil {
		return err
	}
	if _, err := ParseCheckpoint(text); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// VerifiedInclusion is what a verified inclusion proof establishes: the
// leaf is at Leaf.Seq in the tree of Checkpoint, signed by the log.
type VerifiedInclusion struct {
	Checkpoint Checkpoint
	Leaf       *Leaf
}

// Verify checks the proof offline against the log's verifier key: the
// checkpoint's signature and text (OpenCheckpoint), that the index is
// inside the tree, the Merkle path from the leaf's hash to the
// checkpoint's root, that the leaf parses (ParseLeaf) and names the proven
// index as its seq, and, when doc is not nil, that doc's SHA-256 and length
// are the leaf's digest and size. Errors wrap ErrInvalid, ErrMalformed
// (the checkpoint does not parse) or ErrVerifierKey.
func (p *InclusionProof) Verify(vkey string, doc []byte) (*VerifiedInclusion, error) {
	const what = "inclusion proof"
	c, err := OpenCheckpoint(p.Checkpoint, vkey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(p.Leaf) == 0 {
		return nil, invalid(what, "carries no leaf (extra line), so there is nothing to check")
	}
	if p.Index < 0 || p.Index >= c.Size {
		return nil, invalid(what, "index %d is outside the checkpoint's tree of size %d", p.Index, c.Size)
	}
	if err := tlog.CheckRecord(p.Hashes, c.Size, c.Root, p.Index, LeafHash(p.Leaf)); err != nil {
		return nil, invalid(what, "the leaf's Merkle path does not lead to the checkpoint's root (%v)", err)
	}
	leaf, err := ParseLeaf(p.Leaf)
	if err != nil {
		return nil, invalid(what, "%v", err)
	}
	if leaf.Seq != p.Index {
		return nil, invalid(what, "the leaf says seq %d, the proof's index is %d", leaf.Seq, p.Index)
	}
	if doc != nil {
		if sha256.Sum256(doc) != leaf.Digest || int64(len(doc)) != leaf.Size {
			return nil, invalid(what, "the document (%d bytes) does not match the leaf's digest and size (%d bytes): it is not event %d's document",
				len(doc), leaf.Size, leaf.Seq)
		}
	}
	return &VerifiedInclusion{Checkpoint: c, Leaf: leaf}, nil
}
