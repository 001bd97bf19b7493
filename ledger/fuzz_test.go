package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/proofledger/ledger/proof"
)

// FuzzProofs feeds arbitrary text to the proof and leaf parsers and to
// offline verification, seeded with proofs this ledger made: none may
// panic, and nothing but the real proofs may verify.
func FuzzProofs(f *testing.F) {
	l := newLedger(f, Options{})
	if _, err := l.Append(context.Background(), []*Entry{rawEntry(0), rawEntry(1), rawEntry(2)}); err != nil {
		f.Fatal(err)
	}
	vkey := l.VerifierKey()
	for seq := int64(0); seq < 3; seq++ {
		p, err := l.ProveInclusion(seq, 0)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p.Marshal())
		f.Add(p.Leaf)
	}
	for old := int64(0); old < 3; old++ {
		p, err := l.ProveConsistency(old, 0)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p.Marshal())
	}
	// The results of parsers called only for their panics are dropped.
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = proof.ParseLeaf(data)
		if p, err := proof.ParseInclusionProof(data); err == nil {
			if v, err := p.Verify(vkey, nil); err == nil && v.Leaf.Seq != p.Index {
				t.Fatalf("verified proof of index %d for event %d", p.Index, v.Leaf.Seq)
			}
		}
		if p, err := proof.ParseConsistencyProof(data); err == nil {
			_, _ = p.Verify(vkey)
		}
		_, _ = proof.OpenCheckpoint(data, vkey)
	})
}

// FuzzStoredValues feeds arbitrary bytes to every decoder of the ledger's
// own stored keys and values: damaged bytes must be an error, never a
// panic, and whatever decodes must encode back to the same bytes.
func FuzzStoredValues(f *testing.F) {
	ev := &Event{Leaf: proof.Leaf{Seq: 7, Kind: "vrf", ID: "r1", Position: 2, Subject: "agent"}}
	f.Add(identValue{seq: 7}.encode())
	f.Add(digestValue(ev))
	f.Add(u64(9))
	f.Add(timeKey(1234, 5))
	f.Add(encodeLeafValue(ev.Encode()))
	f.Add(encodePayload([]byte("{}")))
	f.Add(encodeFormatFile(2))
	f.Add(encodeCkptRecords([]byte("example\n1\nAAAA\n\n— example sig\n")))
	f.Add([]byte{})
	zdec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(64<<20))
	if err != nil {
		f.Fatal(err)
	}
	l := &Ledger{zdec: zdec}
	f.Fuzz(func(t *testing.T, b []byte) {
		k := []byte("id/\x01x")
		if iv, err := decodeIdent(k, b); err == nil && string(iv.encode()) != string(b) {
			t.Fatalf("identity entry does not round-trip")
		}
		if seq, kind, id, err := decodeDigest(k, b); err == nil {
			if seq < 0 || kind == "" || len(id) != len(b)-9 {
				t.Fatalf("digest entry decoded to %d %q %q", seq, kind, id)
			}
		}
		if s, err := decodeSeq(k, b); err == nil && (s < 0 || string(u64(uint64(s))) != string(b)) {
			t.Fatalf("seq does not round-trip")
		}
		// The rest only must not panic.
		_, _, _ = decodeTimeKey(b)
		_, _ = decodeKeySeq(prefixLeaf, b)
		if leaf, err := leafOf(b); err == nil {
			var lp proof.LeafParser
			_, _ = parseLeafEvent(&lp, leaf)
		}
		_, _ = l.decodePayload(b)
		_, _ = parseFormatFile(b)
		_, _, _ = parseCkptRecord(b)
	})
}

// FuzzArchive feeds arbitrary archive text (compressed here) to the
// archive reader, seeded with archives of versions 1 to 3: none may panic,
// and settings that verify under the ledger's key are the ones it signed.
func FuzzArchive(f *testing.F) {
	dir := settingsLedger(f)
	l, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := l.Export(context.Background(), &buf, ExportOptions{SecretID: fakeSecretID}); err != nil {
		f.Fatal(err)
	}
	vkey := l.VerifierKey()
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	raw := decompress(f, buf.Bytes())
	lines := bytes.SplitAfter(raw, []byte("\n"))
	signed := fmt.Sprint(settingsOfArchive(f, buf.Bytes()))
	f.Add(raw)
	// Versions 2 and 1: the header without what they lack, no settings.
	var hdr map[string]any
	if err := json.Unmarshal(lines[0], &hdr); err != nil {
		f.Fatal(err)
	}
	events := bytes.Join(lines[5:], nil)
	for _, v := range []struct {
		version int
		drop    []string
	}{{2, []string{"settings", "secrets", "settings_note"}}, {1, []string{"settings", "secrets", "settings_note", "checkpoint", "verifier_key"}}} {
		h := maps.Clone(hdr)
		h["version"] = v.version
		for _, k := range v.drop {
			delete(h, k)
		}
		b, err := json.Marshal(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append(append(b, '\n'), events...))
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		ar, err := NewArchiveReader(bytes.NewReader(enc.EncodeAll(text, nil)))
		if err != nil {
			return
		}
		defer ar.Close()
		h := ar.Header()
		if _, err := h.VerifyCheckpoint(vkey); err == nil && h.Version >= 3 {
			if got := fmt.Sprint(h.Settings, h.Secrets); got != signed {
				t.Fatalf("settings %s verified; the ledger signed %s", got, signed)
			}
		}
		for i := 0; i < 100; i++ {
			if _, err := ar.Next(); err != nil {
				return
			}
		}
	})
}

// settingsOfArchive returns the settings and secrets of an archive.
func settingsOfArchive(t testing.TB, archive []byte) ([]ArchiveSetting, []ArchiveSecret) {
	t.Helper()
	ar, err := NewArchiveReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	defer ar.Close()
	return ar.Header().Settings, ar.Header().Secrets
}
