package proof

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

func TestConsistencyRoundTrip(t *testing.T) {
	m := newMemLog(t, testOrigin, testKey(1)).grow(12)
	for n := int64(0); n <= 12; n++ {
		for old := int64(0); old <= n; old++ {
			for _, withOld := range []bool{false, true} {
				text := m.consistency(old, n, withOld).Marshal()
				p, err := ParseConsistencyProof(text)
				if err != nil {
					t.Fatalf("%d -> %d: %v", old, n, err)
				}
				if !bytes.Equal(p.Marshal(), text) {
					t.Fatalf("%d -> %d: Marshal(Parse(x)) != x", old, n)
				}
				v, err := p.Verify(m.vkey)
				if err != nil {
					t.Fatalf("%d -> %d (old checkpoint %v): %v", old, n, withOld, err)
				}
				if v.New.Size != n || v.New.Root != m.root(n) || v.Old.Size != old || v.Old.Root != m.root(old) {
					t.Fatalf("%d -> %d: verified %+v", old, n, v)
				}
				if (v.Old.Origin != "") != withOld {
					t.Fatalf("%d -> %d: old origin %q with old checkpoint %v", old, n, v.Old.Origin, withOld)
				}
			}
		}
	}
}

func TestConsistencyVerifyRejects(t *testing.T) {
	m := newMemLog(t, testOrigin, testKey(1)).grow(9)
	other := newMemLog(t, testOrigin, testKey(2)).grow(9)
	good := func() *ConsistencyProof { return m.consistency(5, 9, true) }
	fromEmpty := func() *ConsistencyProof { return m.consistency(0, 9, false) }
	cases := []struct {
		name string
		p    func() *ConsistencyProof
		vkey string
		want error
	}{
		{"other log's key", good, other.vkey, ErrInvalid},
		{"bad key", good, "x", ErrVerifierKey},
		{"old root changed", func() *ConsistencyProof { p := good(); p.OldRoot[3] ^= 1; p.OldCheckpoint = nil; return p }, m.vkey, ErrInvalid},
		{"old size changed", func() *ConsistencyProof { p := good(); p.OldSize = 4; p.OldCheckpoint = nil; return p }, m.vkey, ErrInvalid},
		{"old checkpoint of another size", func() *ConsistencyProof { p := good(); p.OldCheckpoint = m.checkpoint(4); return p }, m.vkey, ErrInvalid},
		{"old checkpoint of another log", func() *ConsistencyProof { p := good(); p.OldCheckpoint = other.checkpoint(5); return p }, m.vkey, ErrInvalid},
		{"old checkpoint by another key", func() *ConsistencyProof {
			p := good()
			p.OldRoot = other.root(5)
			p.OldCheckpoint = other.checkpoint(5)
			return p
		}, m.vkey, ErrInvalid},
		{"hash flipped", func() *ConsistencyProof { p := good(); p.Hashes[0][31] ^= 0x80; return p }, m.vkey, ErrInvalid},
		{"hash dropped", func() *ConsistencyProof { p := good(); p.Hashes = p.Hashes[:len(p.Hashes)-1]; return p }, m.vkey, ErrInvalid},
		{"old larger than new", func() *ConsistencyProof {
			p := m.consistency(5, 5, false)
			p.Checkpoint = m.checkpoint(4)
			return p
		}, m.vkey, ErrInvalid},
		{"negative old size", func() *ConsistencyProof { p := fromEmpty(); p.OldSize = -1; return p }, m.vkey, ErrInvalid},
		{"empty tree with zero root", func() *ConsistencyProof { p := fromEmpty(); p.OldRoot = tlog.Hash{}; return p }, m.vkey, ErrInvalid},
		{"empty tree with another root", func() *ConsistencyProof { p := fromEmpty(); p.OldRoot = m.root(1); return p }, m.vkey, ErrInvalid},
		{"empty tree with hashes", func() *ConsistencyProof { p := fromEmpty(); p.Hashes = good().Hashes; return p }, m.vkey, ErrInvalid},
		{"same size, other root", func() *ConsistencyProof { p := m.consistency(9, 9, false); p.OldRoot = m.root(8); return p }, m.vkey, ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := tc.p().Verify(tc.vkey)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %+v, %v; want an error wrapping %v", v, err, tc.want)
			}
			shortError(t, err)
		})
	}
}

func TestParseConsistencyProofRejects(t *testing.T) {
	m := newMemLog(t, testOrigin, testKey(1)).grow(9)
	text := m.consistency(5, 9, true).Marshal()
	lines, ckpt := proofParts(t, text) // header, old, old-checkpoint, hashes
	if len(lines) < 4 || !strings.HasPrefix(lines[1], "old 5 ") {
		t.Fatalf("unexpected test proof %q", lines)
	}
	root := strings.TrimPrefix(lines[1], "old 5 ")
	with := func(i int, s string) []byte {
		l := append([]string{}, lines...)
		l[i] = s
		return joinProof(l, ckpt)
	}
	insert := func(i int, s string) []byte {
		l := append([]string{}, lines[:i]...)
		l = append(l, s)
		return joinProof(append(l, lines[i:]...), ckpt)
	}
	badNote := b64([]byte("example.org/test-log\n5\n" + root + "\n"))
	crNote := b64([]byte(strings.ReplaceAll(string(m.checkpoint(5)), "\n", "\r\n")))
	cases := []struct {
		name string
		text []byte
	}{
		{"empty", nil},
		{"other header", with(0, TlogProofHeader)},
		{"no old line", []byte(ConsistencyHeader + "\n\n" + ckpt)},
		{"old 05", with(1, "old 05 "+root)},
		{"old +5", with(1, "old +5 "+root)},
		{"old -5", with(1, "old -5 "+root)},
		{"two spaces", with(1, "old  5 "+root)},
		{"two spaces before the root", with(1, "old 5  "+root)},
		{"trailing space", with(1, "old 5 "+root+" ")},
		{"fourth field", with(1, "old 5 "+root+" x")},
		{"no root", with(1, "old 5")},
		{"short root", with(1, "old 5 "+root[:43])},
		{"root of 33 bytes", with(1, "old 5 "+b64(make([]byte, 33)))},
		{"OLD", with(1, "OLD 5 "+root)},
		{"old-checkpoint without data", with(2, "old-checkpoint ")},
		{"old-checkpoint without space", with(2, "old-checkpoint")},
		{"old-checkpoint not base64", with(2, "old-checkpoint !!")},
		{"old-checkpoint unsigned", with(2, "old-checkpoint "+badNote)},
		{"old-checkpoint with CRLF inside", with(2, "old-checkpoint "+crNote)},
		{"old-checkpoint twice", insert(2, lines[2])},
		{"old-checkpoint after a hash", joinProof(append([]string{lines[0], lines[1], lines[3], lines[2]}, lines[4:]...), ckpt)},
		{"short hash", with(3, lines[3][:40])},
		{"empty hash line", insert(3, "")},
		{"129 hash lines", joinProof(append(lines[:3:3], strings.Split(strings.Repeat(lines[3]+"\n", 129), "\n")[:129]...), ckpt)},
		{"CRLF", bytes.ReplaceAll(text, []byte("\n"), []byte("\r\n"))},
		{"CR in the old line", with(1, "old 5 "+root[:10]+"\r"+root[10:])},
		{"no blank line", []byte(strings.Join(lines, "\n") + "\n" + ckpt)},
		{"trailing garbage", append(append([]byte{}, text...), "x\n"...)},
		{"no checkpoint", joinProof(lines, "")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseConsistencyProof(tc.text)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseConsistencyProof(%.80q) = %+v, %v; want ErrMalformed", tc.text, p, err)
			}
			shortError(t, err)
		})
	}
}

// Every proper prefix of a proof must fail to parse or to verify.
func TestConsistencyTruncated(t *testing.T) {
	m := newMemLog(t, testOrigin, testKey(1)).grow(9)
	text := m.consistency(5, 9, true).Marshal()
	for n := 0; n < len(text); n++ {
		p, err := ParseConsistencyProof(text[:n])
		if err == nil {
			_, err = p.Verify(m.vkey)
		}
		if err == nil {
			t.Fatalf("prefix of %d bytes (of %d) verifies", n, len(text))
		}
	}
}
