package proof

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestInclusionRoundTrip(t *testing.T) {
	m := newMemLog(t, testOrigin, testKey(1)).grow(13)
	for n := int64(1); n <= 13; n++ {
		for i := int64(0); i < n; i++ {
			text := m.inclusion(i, n).Marshal()
			p, err := ParseInclusionProof(text)
			if err != nil {
				t.Fatalf("proof of %d in %d: %v", i, n, err)
			}
			if !bytes.Equal(p.Marshal(), text) {
				t.Fatalf("proof of %d in %d: Marshal(Parse(x)) != x", i, n)
			}
			v, err := p.Verify(m.vkey, m.docs[i])
			if err != nil {
				t.Fatalf("proof of %d in %d: %v", i, n, err)
			}
			if v.Leaf.Seq != i || v.Checkpoint.Size != n || v.Checkpoint.Root != m.root(n) || v.Checkpoint.Origin != testOrigin {
				t.Fatalf("proof of %d in %d: verified %+v, leaf seq %d", i, n, v.Checkpoint, v.Leaf.Seq)
			}
		}
	}
}

func TestInclusionVerifyRejects(t *testing.T) {
	m := newMemLog(t, testOrigin, testKey(1)).grow(9)
	other := newMemLog(t, testOrigin, testKey(2)).grow(9)
	good := func() *InclusionProof { return m.inclusion(6, 9) }
	// A log whose leaf 2 says it is event 1: its Merkle path verifies.
	liar := newMemLog(t, testOrigin, testKey(1)).grow(2)
	liar.appendLeaf(testLeaf(1, []byte("d")).Encode(), []byte("d"))
	liar.grow(4)
	// A log whose leaf 1 does not parse.
	junk := newMemLog(t, testOrigin, testKey(1)).grow(1)
	junk.appendLeaf([]byte(`{"seq":1}`), nil)
	cases := []struct {
		name string
		p    func() *InclusionProof
		doc  []byte
		vkey string
		want error
	}{
		{"other document", good, []byte("document 5"), m.vkey, ErrInvalid},
		{"document with a byte added", good, append([]byte("document 6"), ' '), m.vkey, ErrInvalid},
		{"empty document", good, []byte{}, m.vkey, ErrInvalid},
		{"other log's key", good, nil, other.vkey, ErrInvalid},
		{"bad key", good, nil, "x+y+z", ErrVerifierKey},
		{"other index", func() *InclusionProof { p := good(); p.Index = 5; return p }, nil, m.vkey, ErrInvalid},
		{"index past the tree", func() *InclusionProof { p := good(); p.Index = 9; return p }, nil, m.vkey, ErrInvalid},
		{"negative index", func() *InclusionProof { p := good(); p.Index = -1; return p }, nil, m.vkey, ErrInvalid},
		{"other leaf", func() *InclusionProof { p := good(); p.Leaf = m.leaves[5]; return p }, nil, m.vkey, ErrInvalid},
		{"no leaf", func() *InclusionProof { p := good(); p.Leaf = nil; return p }, nil, m.vkey, ErrInvalid},
		{"hash flipped", func() *InclusionProof { p := good(); p.Hashes[1][0] ^= 1; return p }, nil, m.vkey, ErrInvalid},
		{"hash dropped", func() *InclusionProof { p := good(); p.Hashes = p.Hashes[1:]; return p }, nil, m.vkey, ErrInvalid},
		{"hash added", func() *InclusionProof { p := good(); p.Hashes = append(p.Hashes, p.Hashes[0]); return p }, nil, m.vkey, ErrInvalid},
		{"other checkpoint", func() *InclusionProof { p := good(); p.Checkpoint = m.checkpoint(8); return p }, nil, m.vkey, ErrInvalid},
		{"leaf names another seq", func() *InclusionProof { return liar.inclusion(2, 4) }, nil, liar.vkey, ErrInvalid},
		{"leaf does not parse", func() *InclusionProof { return junk.inclusion(1, 2) }, nil, junk.vkey, ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := tc.p().Verify(tc.vkey, tc.doc)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %+v, %v; want an error wrapping %v", v, err, tc.want)
			}
			shortError(t, err)
		})
	}
}

// proofParts returns the lines of a marshalled proof before the blank line,
// and the checkpoint after it.
func proofParts(t *testing.T, text []byte) ([]string, string) {
	t.Helper()
	head, ckpt, ok := strings.Cut(string(text), "\n\n")
	if !ok {
		t.Fatal("no blank line")
	}
	return strings.Split(head, "\n"), ckpt
}

func joinProof(lines []string, ckpt string) []byte {
	return []byte(strings.Join(lines, "\n") + "\n\n" + ckpt)
}

func TestParseInclusionProofRejects(t *testing.T) {
	m := newMemLog(t, testOrigin, testKey(1)).grow(9)
	text := m.inclusion(7, 9).Marshal()
	lines, ckpt := proofParts(t, text) // header, extra, index 7, 4 hashes
	if len(lines) != 7 || lines[2] != "index 7" {
		t.Fatalf("unexpected test proof %q", lines)
	}
	with := func(i int, s string) []byte {
		l := append([]string{}, lines...)
		l[i] = s
		return joinProof(l, ckpt)
	}
	without := func(i int) []byte {
		l := append([]string{}, lines[:i]...)
		return joinProof(append(l, lines[i+1:]...), ckpt)
	}
	insert := func(i int, s string) []byte {
		l := append([]string{}, lines[:i]...)
		l = append(l, s)
		return joinProof(append(l, lines[i:]...), ckpt)
	}
	hash := lines[3]
	extra := lines[1]
	cases := []struct {
		name string
		text []byte
	}{
		{"empty", nil},
		{"header only", []byte(TlogProofHeader + "\n")},
		{"other header", with(0, "c2sp.org/tlog-proof@v2")},
		{"header with space", with(0, TlogProofHeader+" ")},
		{"consistency header", with(0, ConsistencyHeader)},
		{"index 07", with(2, "index 07")},
		{"index +7", with(2, "index +7")},
		{"index -1", with(2, "index -1")},
		{"two spaces", with(2, "index  7")},
		{"trailing space", with(2, "index 7 ")},
		{"tab", with(2, "index\t7")},
		{"no number", with(2, "index ")},
		{"no space", with(2, "index7")},
		{"index overflow", with(2, "index 9223372036854775808")},
		{"upper case", with(2, "INDEX 7")},
		{"no index line", without(2)},
		{"index before extra", with(1, "index 7")},
		{"extra with no data", with(1, "extra ")},
		{"extra without space", with(1, "extra")},
		{"extra twice", insert(1, extra)},
		{"extra not base64", with(1, "extra ???")},
		{"extra truncated", with(1, extra[:len(extra)-1])},
		{"extra URL base64", with(1, "extra "+strings.NewReplacer("+", "-", "/", "_").Replace(extra[6:])+"-_")},
		{"short hash", with(3, hash[:43])},
		{"long hash", with(3, hash+"A")},
		{"hash with space", with(3, hash+" ")},
		{"hash of 33 bytes", with(3, b64(make([]byte, 33)))},
		{"hash with padding bits", with(3, hash[:42]+"B=")},
		{"empty hash line", insert(3, "")},
		{"64 hash lines", joinProof(append(lines[:3:3], strings.Split(strings.Repeat(hash+"\n", 64), "\n")[:64]...), ckpt)},
		{"CRLF", bytes.ReplaceAll(text, []byte("\n"), []byte("\r\n"))},
		{"CR inside extra", with(1, extra[:30]+"\r"+extra[30:])},
		{"CR inside a hash", with(3, hash[:20]+"\r"+hash[20:])},
		{"CR at the end", append(append([]byte{}, text...), '\r')},
		{"no blank line", []byte(strings.Join(lines, "\n") + "\n" + ckpt)},
		{"no checkpoint", joinProof(lines, "")},
		{"trailing garbage", append(append([]byte{}, text...), "garbage\n"...)},
		{"trailing newline", append(append([]byte{}, text...), '\n')},
		{"checkpoint without signature", joinProof(lines, strings.SplitN(ckpt, "\n\n", 2)[0]+"\n")},
		{"checkpoint with a bad size", joinProof(lines, strings.Replace(ckpt, "\n9\n", "\n09\n", 1))},
		{"NUL", with(3, hash[:10]+"\x00"+hash[11:])},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseInclusionProof(tc.text)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseInclusionProof(%.80q) = %+v, %v; want ErrMalformed", tc.text, p, err)
			}
			shortError(t, err)
		})
	}
	if _, padErr := ParseInclusionProof(with(3, hash[:42]+"B=")); padErr == nil {
		t.Fatal("accepted a hash with padding bits set")
	}
}

// Every proper prefix of a proof must fail to parse or to verify.
func TestInclusionTruncated(t *testing.T) {
	m := newMemLog(t, testOrigin, testKey(1)).grow(9)
	text := m.inclusion(7, 9).Marshal()
	for n := 0; n < len(text); n++ {
		p, err := ParseInclusionProof(text[:n])
		if err == nil {
			_, err = p.Verify(m.vkey, nil)
		}
		if err == nil {
			t.Fatalf("prefix of %d bytes (of %d) verifies", n, len(text))
		}
	}
}

// A huge input is refused before it is read, and an error never quotes
// much of an offending line.
func TestHugeInput(t *testing.T) {
	huge := bytes.Repeat([]byte("x"), 50<<20)
	under := bytes.Repeat([]byte("y"), MaxProofSize-200)
	m := newMemLog(t, testOrigin, testKey(1)).grow(3)
	lines, ckpt := proofParts(t, m.inclusion(1, 3).Marshal())
	parsers := map[string]func([]byte) error{
		"inclusion":   func(b []byte) error { _, err := ParseInclusionProof(b); return err },
		"consistency": func(b []byte) error { _, err := ParseConsistencyProof(b); return err },
		"checkpoint":  func(b []byte) error { _, err := ParseCheckpoint(string(b)); return err },
		"signed":      func(b []byte) error { _, err := OpenCheckpoint(b, m.vkey); return err },
		"leaf":        func(b []byte) error { _, err := ParseLeaf(b); return err },
	}
	inputs := map[string][]byte{
		"50 MB first line":          append(huge, "\n\n"...),
		"50 MB proof":               append(m.inclusion(1, 3).Marshal(), huge...),
		"1 MB first line":           append(under, "\n\n"...),
		"1 MB index line":           joinProof([]string{lines[0], lines[1], "index " + string(under)}, ckpt),
		"1 MB hash line":            joinProof([]string{lines[0], lines[1], lines[2], string(under)}, ckpt),
		"1 MB old line":             []byte(ConsistencyHeader + "\nold 1 " + string(under) + "\n\n" + ckpt),
		"1 MB checkpoint root line": []byte("o\n5\n" + string(under) + "\n"),
		"1 MB checkpoint size line": []byte("o\n" + string(under) + "\n" + goodRoot + "\n"),
		"1 MB JSON string":          []byte(`{"appended_at":"` + string(under[:len(under)/2]) + `"}`),
		"1 MB duplicate key":        []byte(`{"` + string(under[:len(under)/2]) + `":1,"` + string(under[:len(under)/2]) + `":1}`),
	}
	for in, data := range inputs {
		for name, parse := range parsers {
			err := parse(data)
			if err == nil {
				t.Errorf("%s: %s parser accepted it", in, name)
				continue
			}
			if len(err.Error()) > 300 {
				t.Errorf("%s: %s parser: error of %d bytes: %.200s...", in, name, len(err.Error()), err)
			}
		}
	}
	err := parsers["inclusion"](inputs["50 MB first line"])
	if want := fmt.Sprintf("more than the %d-byte (1 MiB) limit", MaxProofSize); !strings.Contains(err.Error(), want) {
		t.Errorf("50 MB proof: error %q does not say %q", err, want)
	}
}
