package proof

import (
	"bytes"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// ConsistencyProof shows that the tree of a signed checkpoint extends an
// older tree: the log was only appended to between the two sizes. Its text
// form (ledger.consistency-proof@v1) is
//
//	ledger.consistency-proof@v1
//	old <old size> <base64 old root>
//	old-checkpoint <base64 signed note>   (optional)
//	<base64 hash>                         (zero or more)
//	                                      (a blank line)
//	<signed checkpoint of the newer tree>
type ConsistencyProof struct {
	// OldSize and OldRoot are the older tree's size and root. The root of
	// the empty tree (OldSize 0) is EmptyRoot().
	OldSize int64
	OldRoot tlog.Hash
	// Hashes is the RFC 6962 consistency proof from OldSize to the newer
	// checkpoint's size; empty when OldSize is 0.
	Hashes tlog.TreeProof
	// Checkpoint is the newer signed checkpoint.
	Checkpoint []byte
	// OldCheckpoint is the signed checkpoint at OldSize when the ledger
	// kept one; nil otherwise. Verifiers can also compare OldRoot with a
	// root they saved themselves.
	OldCheckpoint []byte
}

// ConsistencyHeader is the first line of a consistency proof.
const ConsistencyHeader = "ledger.consistency-proof@v1"

// maxTreeProofHashes bounds the hash lines of a consistency proof (a
// proof between trees of fewer than 2^63 leaves has fewer).
const maxTreeProofHashes = 128

// Marshal writes the proof: the header line, "old <size> <base64 root>",
// the "old-checkpoint <base64 note>" line when OldCheckpoint is not nil,
// the hashes, a blank line, and the newer signed checkpoint.
func (p *ConsistencyProof) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(ConsistencyHeader + "\n")
	fmt.Fprintf(&b, "old %d %s\n", p.OldSize, p.OldRoot.String())
	if p.OldCheckpoint != nil {
		b.WriteString("old-checkpoint " + b64(p.OldCheckpoint) + "\n")
	}
	for _, h := range p.Hashes {
		b.WriteString(b64(h[:]) + "\n")
	}
	b.WriteString("\n")
	b.Write(p.Checkpoint)
	return b.Bytes()
}

// ParseConsistencyProof reads the text Marshal writes, strictly: at most
// MaxProofSize bytes, no '\r' anywhere, the exact header line, "old <size>
// <root>" with single spaces, the size in canonical decimal and the root
// exactly 32 bytes of strict standard base64, an optional
// "old-checkpoint <base64>" line holding a well-formed signed checkpoint,
// at most 128 hash lines, a blank line, then a signed checkpoint whose
// shape and text are checked (signatures are checked by Verify).
func ParseConsistencyProof(data []byte) (*ConsistencyProof, error) {
	const what = "consistency proof"
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
	if lines[0] != ConsistencyHeader {
		return nil, lineError(what, 1, "want %q, got %s", ConsistencyHeader, quote(lines[0]))
	}
	if len(lines) < 2 {
		return nil, lineError(what, 2, "want \"old <size> <base64 root>\", got the blank line")
	}
	rest, ok := strings.CutPrefix(lines[1], "old ")
	sizeText, rootText, ok2 := strings.Cut(rest, " ")
	if !ok || !ok2 {
		return nil, lineError(what, 2, "want \"old <size> <base64 root>\", got %s", quote(lines[1]))
	}
	p := &ConsistencyProof{}
	if p.OldSize, ok = parseDecimal(sizeText); !ok {
		return nil, lineError(what, 2, "old size: want a decimal without sign or leading zeros, got %s", quote(sizeText))
	}
	if p.OldRoot, ok = parseHash(rootText); !ok {
		return nil, lineError(what, 2, "old root: want 32 bytes in standard base64 (44 characters), got %s", quote(rootText))
	}
	i := 2
	if i < len(lines) && strings.HasPrefix(lines[i], "old-checkpoint") {
		enc, ok := strings.CutPrefix(lines[i], "old-checkpoint ")
		if !ok {
			return nil, lineError(what, i+1, "want \"old-checkpoint <base64>\", got %s", quote(lines[i]))
		}
		oc, ok := decodeB64(enc)
		if !ok || len(oc) == 0 {
			return nil, lineError(what, i+1, "old-checkpoint: want non-empty standard base64, got %s", quote(enc))
		}
		if err := checkSignedCheckpoint(what+": old-checkpoint", oc); err != nil {
			return nil, err
		}
		p.OldCheckpoint = oc
		i++
	}
	if n := len(lines) - i; n > maxTreeProofHashes {
		return nil, malformed(what, "%d hash lines, more than a consistency proof has (%d)", n, maxTreeProofHashes)
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

// VerifiedConsistency is what a verified consistency proof establishes:
// the tree of New extends the tree of Old.
type VerifiedConsistency struct {
	// Old is the older tree. Its Origin is set only when the proof carried
	// an old checkpoint, which was then verified.
	Old Checkpoint
	New Checkpoint
}

// Verify checks the proof offline against the log's verifier key: the
// newer checkpoint (OpenCheckpoint); that the old size is at most the new
// one; the old checkpoint too when the proof carries one (its size and root
// must be OldSize and OldRoot); for OldSize 0, that OldRoot is EmptyRoot()
// and there are no hashes; otherwise the RFC 6962 consistency proof
// (tlog.CheckTree). Errors wrap ErrInvalid, ErrMalformed (a checkpoint
// does not parse) or ErrVerifierKey.
func (p *ConsistencyProof) Verify(vkey string) (*VerifiedConsistency, error) {
	const what = "consistency proof"
	newC, err := OpenCheckpoint(p.Checkpoint, vkey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if p.OldSize < 0 || p.OldSize > newC.Size {
		return nil, invalid(what, "old size %d is not between 0 and the new size %d", p.OldSize, newC.Size)
	}
	out := &VerifiedConsistency{New: newC, Old: Checkpoint{Size: p.OldSize, Root: p.OldRoot}}
	if p.OldCheckpoint != nil {
		oldC, err := OpenCheckpoint(p.OldCheckpoint, vkey)
		if err != nil {
			return nil, fmt.Errorf("%s: old checkpoint: %w", what, err)
		}
		if oldC.Size != p.OldSize || oldC.Root != p.OldRoot {
			return nil, invalid(what, "the old checkpoint (size %d, root %s) is not the proof's old tree (size %d, root %s)",
				oldC.Size, oldC.Root.String(), p.OldSize, p.OldRoot.String())
		}
		out.Old = oldC
	}
	if p.OldSize == 0 {
		if p.OldRoot != EmptyRoot() {
			return nil, invalid(what, "old root of the empty tree is %s, want %s (SHA-256 of nothing)", p.OldRoot.String(), EmptyRoot().String())
		}
		if len(p.Hashes) != 0 {
			return nil, invalid(what, "a proof from the empty tree has no hashes, this one has %d", len(p.Hashes))
		}
		return out, nil
	}
	if err := tlog.CheckTree(p.Hashes, newC.Size, newC.Root, p.OldSize, p.OldRoot); err != nil {
		return nil, invalid(what, "the tree of size %d does not extend the old tree of size %d (%v)", newC.Size, p.OldSize, err)
	}
	return out, nil
}
