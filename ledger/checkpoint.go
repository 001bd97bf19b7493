package ledger

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// noteSigner signs checkpoints with the log key under the origin's name.
type noteSigner struct {
	note.Signer
	vkey string
}

// verifierKey returns the signed-note verifier key of pub named origin.
func verifierKey(origin string, pub ed25519.PublicKey) (string, error) {
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return "", fmt.Errorf("verifier key: %w", err)
	}
	return vkey, nil
}

func newNoteSigner(origin string, priv ed25519.PrivateKey) (*noteSigner, error) {
	vkey, err := verifierKey(origin, priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	// vkey is "<name>+<hash>+<base64 of 0x01||pub>"; the signer key
	// carries the same name and hash with the seed instead.
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return nil, fmt.Errorf("verifier key %q: unexpected shape", vkey)
	}
	skey := fmt.Sprintf("PRIVATE+KEY+%s+%s+%s", parts[0], parts[1],
		base64.StdEncoding.EncodeToString(append([]byte{1}, priv.Seed()...)))
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("checkpoint signer: %w", err)
	}
	return &noteSigner{Signer: s, vkey: vkey}, nil
}

// Checkpoint is a tree head: the C2SP tlog-checkpoint body.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
}

// Text returns the checkpoint body: origin, size and base64 root, one per line.
func (c Checkpoint) Text() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Root[:]))
}

// ErrProof is wrapped by every error about a proof or checkpoint that does
// not parse or does not verify.
var ErrProof = errors.New("proof does not verify")

// parseCheckpointText parses a checkpoint body (extension lines are allowed
// and ignored).
func parseCheckpointText(text string) (Checkpoint, error) {
	lines := strings.SplitN(text, "\n", 4)
	if len(lines) < 4 {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint: want origin, size and root lines", ErrProof)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || (len(lines[1]) > 1 && lines[1][0] == '0') {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint: size %q", ErrProof, lines[1])
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint: root hash %q", ErrProof, lines[2])
	}
	c := Checkpoint{Origin: lines[0], Size: size}
	copy(c.Root[:], root)
	return c, nil
}

// OpenCheckpoint verifies a signed checkpoint note against the verifier key
// vkey ("<origin>+<hash>+<base64>") and returns its tree head. The note's
// origin line must equal the key's name.
func OpenCheckpoint(signed []byte, vkey string) (Checkpoint, error) {
	v, err := note.NewVerifier(strings.TrimSpace(vkey))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: verifier key: %v", ErrProof, err)
	}
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint signature: %v", ErrProof, err)
	}
	c, err := parseCheckpointText(n.Text)
	if err != nil {
		return Checkpoint{}, err
	}
	if c.Origin != v.Name() {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint origin %q is not the key's name %q", ErrProof, c.Origin, v.Name())
	}
	return c, nil
}

func (s *noteSigner) sign(c Checkpoint) ([]byte, error) {
	signed, err := note.Sign(&note.Note{Text: c.Text()}, s.Signer)
	if err != nil {
		return nil, fmt.Errorf("sign checkpoint: %w", err)
	}
	return signed, nil
}

// InclusionProof shows that one event is in the tree of a signed
// checkpoint. Its text form is C2SP tlog-proof, with the event's leaf
// (see Event.Leaf) as the extra data.
type InclusionProof struct {
	Index      int64
	Leaf       []byte
	Hashes     tlog.RecordProof
	Checkpoint []byte
}

const tlogProofHeader = "c2sp.org/tlog-proof@v1"

// Marshal writes the proof as C2SP tlog-proof text.
func (p *InclusionProof) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(tlogProofHeader + "\n")
	b.WriteString("extra " + base64.StdEncoding.EncodeToString(p.Leaf) + "\n")
	fmt.Fprintf(&b, "index %d\n", p.Index)
	for _, h := range p.Hashes {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	b.WriteString("\n")
	b.Write(p.Checkpoint)
	return b.Bytes()
}

// ParseInclusionProof reads C2SP tlog-proof text.
func ParseInclusionProof(data []byte) (*InclusionProof, error) {
	head, ckpt, ok := bytes.Cut(data, []byte("\n\n"))
	if !ok {
		return nil, fmt.Errorf("%w: tlog-proof: no blank line before the checkpoint", ErrProof)
	}
	lines := strings.Split(string(head), "\n")
	if lines[0] != tlogProofHeader {
		return nil, fmt.Errorf("%w: tlog-proof: first line %q, want %q", ErrProof, lines[0], tlogProofHeader)
	}
	p := &InclusionProof{Checkpoint: ckpt}
	i := 1
	if i < len(lines) && strings.HasPrefix(lines[i], "extra ") {
		leaf, err := base64.StdEncoding.DecodeString(lines[i][len("extra "):])
		if err != nil {
			return nil, fmt.Errorf("%w: tlog-proof: extra: %v", ErrProof, err)
		}
		p.Leaf = leaf
		i++
	}
	if i >= len(lines) || !strings.HasPrefix(lines[i], "index ") {
		return nil, fmt.Errorf("%w: tlog-proof: want an index line", ErrProof)
	}
	idx, err := strconv.ParseInt(lines[i][len("index "):], 10, 64)
	if err != nil || idx < 0 {
		return nil, fmt.Errorf("%w: tlog-proof: index %q", ErrProof, lines[i])
	}
	p.Index = idx
	for _, line := range lines[i+1:] {
		h, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(h) != tlog.HashSize {
			return nil, fmt.Errorf("%w: tlog-proof: hash line %q", ErrProof, line)
		}
		p.Hashes = append(p.Hashes, tlog.Hash(h))
	}
	return p, nil
}

// VerifiedInclusion is what a verified inclusion proof establishes.
type VerifiedInclusion struct {
	Checkpoint Checkpoint
	Event      *Event // decoded from the proof's leaf
}

// Verify checks the proof offline: the checkpoint's signature under vkey,
// the Merkle path from the leaf to the checkpoint's root, that the leaf
// names the proven index, and, when doc is not nil, that doc's SHA-256 is
// the leaf's digest.
func (p *InclusionProof) Verify(vkey string, doc []byte) (*VerifiedInclusion, error) {
	c, err := OpenCheckpoint(p.Checkpoint, vkey)
	if err != nil {
		return nil, err
	}
	if p.Leaf == nil {
		return nil, fmt.Errorf("%w: proof carries no leaf (extra line)", ErrProof)
	}
	if p.Index >= c.Size {
		return nil, fmt.Errorf("%w: index %d is outside the checkpoint's tree of size %d", ErrProof, p.Index, c.Size)
	}
	if err := tlog.CheckRecord(p.Hashes, c.Size, c.Root, p.Index, tlog.RecordHash(p.Leaf)); err != nil {
		return nil, fmt.Errorf("%w: inclusion: %v", ErrProof, err)
	}
	ev, err := ParseLeaf(p.Leaf)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProof, err)
	}
	if ev.Seq != p.Index {
		return nil, fmt.Errorf("%w: leaf says seq %d, proof index is %d", ErrProof, ev.Seq, p.Index)
	}
	if doc != nil {
		if d := sha256Sum(doc); d != ev.Digest || int64(len(doc)) != ev.Size {
			return nil, fmt.Errorf("%w: document does not match the leaf's digest (it is not event %d's document)", ErrProof, ev.Seq)
		}
	}
	return &VerifiedInclusion{Checkpoint: c, Event: ev}, nil
}

// ConsistencyProof shows that the tree of a signed checkpoint extends an
// older tree: the log was only appended to between the two sizes.
type ConsistencyProof struct {
	OldSize int64
	OldRoot tlog.Hash
	Hashes  tlog.TreeProof
	// Checkpoint is the newer signed checkpoint.
	Checkpoint []byte
	// OldCheckpoint is the signed checkpoint at OldSize when the ledger
	// kept one; verifiers can also compare OldRoot with one they saved.
	OldCheckpoint []byte
}

const consistencyHeader = "ledger.consistency-proof@v1"

// Marshal writes the proof: a header line, "old <size> <base64 root>",
// an optional "old-checkpoint <base64 note>" line, the proof hashes, a
// blank line, and the newer signed checkpoint.
func (p *ConsistencyProof) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(consistencyHeader + "\n")
	fmt.Fprintf(&b, "old %d %s\n", p.OldSize, base64.StdEncoding.EncodeToString(p.OldRoot[:]))
	if p.OldCheckpoint != nil {
		b.WriteString("old-checkpoint " + base64.StdEncoding.EncodeToString(p.OldCheckpoint) + "\n")
	}
	for _, h := range p.Hashes {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	b.WriteString("\n")
	b.Write(p.Checkpoint)
	return b.Bytes()
}

// ParseConsistencyProof reads the text written by Marshal.
func ParseConsistencyProof(data []byte) (*ConsistencyProof, error) {
	head, ckpt, ok := bytes.Cut(data, []byte("\n\n"))
	if !ok {
		return nil, fmt.Errorf("%w: consistency proof: no blank line before the checkpoint", ErrProof)
	}
	lines := strings.Split(string(head), "\n")
	if lines[0] != consistencyHeader {
		return nil, fmt.Errorf("%w: consistency proof: first line %q, want %q", ErrProof, lines[0], consistencyHeader)
	}
	p := &ConsistencyProof{Checkpoint: ckpt}
	if len(lines) < 2 {
		return nil, fmt.Errorf("%w: consistency proof: want an old line", ErrProof)
	}
	f := strings.Fields(lines[1])
	if len(f) != 3 || f[0] != "old" {
		return nil, fmt.Errorf("%w: consistency proof: old line %q", ErrProof, lines[1])
	}
	size, err := strconv.ParseInt(f[1], 10, 64)
	root, err2 := base64.StdEncoding.DecodeString(f[2])
	if err != nil || err2 != nil || size < 0 || len(root) != tlog.HashSize {
		return nil, fmt.Errorf("%w: consistency proof: old line %q", ErrProof, lines[1])
	}
	p.OldSize = size
	copy(p.OldRoot[:], root)
	rest := lines[2:]
	if len(rest) > 0 && strings.HasPrefix(rest[0], "old-checkpoint ") {
		oc, err := base64.StdEncoding.DecodeString(rest[0][len("old-checkpoint "):])
		if err != nil {
			return nil, fmt.Errorf("%w: consistency proof: old-checkpoint: %v", ErrProof, err)
		}
		p.OldCheckpoint = oc
		rest = rest[1:]
	}
	for _, line := range rest {
		h, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(h) != tlog.HashSize {
			return nil, fmt.Errorf("%w: consistency proof: hash line %q", ErrProof, line)
		}
		p.Hashes = append(p.Hashes, tlog.Hash(h))
	}
	return p, nil
}

// VerifiedConsistency is what a verified consistency proof establishes.
type VerifiedConsistency struct {
	Old Checkpoint // Origin set only when an old checkpoint was verified
	New Checkpoint
}

// Verify checks the proof offline: the newer checkpoint's signature, the
// older one's too when the proof carries it (its root must be OldRoot), and
// that the newer tree extends the older one.
func (p *ConsistencyProof) Verify(vkey string) (*VerifiedConsistency, error) {
	newC, err := OpenCheckpoint(p.Checkpoint, vkey)
	if err != nil {
		return nil, err
	}
	out := &VerifiedConsistency{New: newC, Old: Checkpoint{Size: p.OldSize, Root: p.OldRoot}}
	if p.OldCheckpoint != nil {
		oldC, err := OpenCheckpoint(p.OldCheckpoint, vkey)
		if err != nil {
			return nil, fmt.Errorf("old checkpoint: %w", err)
		}
		if oldC.Size != p.OldSize || oldC.Root != p.OldRoot {
			return nil, fmt.Errorf("%w: old checkpoint (size %d) does not match the proof's old tree (size %d)", ErrProof, oldC.Size, p.OldSize)
		}
		out.Old = oldC
	}
	if p.OldSize > newC.Size {
		return nil, fmt.Errorf("%w: old size %d is larger than the new size %d", ErrProof, p.OldSize, newC.Size)
	}
	if p.OldSize == 0 {
		if len(p.Hashes) != 0 {
			return nil, fmt.Errorf("%w: a proof from the empty tree has no hashes", ErrProof)
		}
		return out, nil
	}
	if err := tlog.CheckTree(p.Hashes, newC.Size, newC.Root, p.OldSize, p.OldRoot); err != nil {
		return nil, fmt.Errorf("%w: consistency: %v", ErrProof, err)
	}
	return out, nil
}
