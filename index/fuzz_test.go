package index

import (
	"bytes"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/proofledger/ledger/ledger"
)

// FuzzValues feeds bytes to every decoder of stored values: no input may
// panic; an error wraps ErrCorrupt and names the key; a value that decodes
// re-encodes to the same bytes (the decoders accept only what the index
// writes).
func FuzzValues(f *testing.F) {
	m, err := project(sampleEvents())
	if err != nil {
		f.Fatal(err)
	}
	for k, v := range m {
		for i, d := range valueDecoders {
			if bytes.HasPrefix([]byte(k), d.prefix) {
				f.Add(uint8(i), []byte(k[len(d.prefix):]), v)
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, rest, value []byte) {
		d := valueDecoders[int(which)%len(valueDecoders)]
		key := append(bytes.Clone(d.prefix), rest...)
		r, err := d.decode(key, value)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), quoteKey(key)) {
				t.Fatalf("%s: error %v does not wrap ErrCorrupt and name the key", d.name, err)
			}
			return
		}
		if got := r.encode(); !bytes.Equal(got, value) {
			t.Fatalf("%s: %x decodes and re-encodes to %x", d.name, value, got)
		}
	})
}

// keyParsers parse the keys of each keyspace and rebuild them from what
// they parsed.
var keyParsers = []struct {
	prefix []byte
	parse  func(k []byte) ([]byte, error) // the key rebuilt
}{
	{pAgent, func(k []byte) ([]byte, error) {
		s, err := subjectFromKey(k, pAgent)
		return join(pAgent, []byte(s), []byte{0}), err
	}},
	{pSystem, func(k []byte) ([]byte, error) {
		name, seq, err := nameSeqFromKey(k, pSystem)
		return join(pSystem, []byte(name), []byte{0}, seqKey(seq)), err
	}},
	{pRollback, func(k []byte) ([]byte, error) {
		ns, seq, err := timeSeqFromKey(k, pRollback)
		return join(pRollback, nsKey(ns), seqKey(seq)), err
	}},
	{pRollup, func(k []byte) ([]byte, error) {
		r, err := rollupFromKey(k)
		known := byte(0)
		if r.known {
			known = 1
		}
		return join(pRollup, r.day.key(), r.policy[:], []byte{r.mode, known}), err
	}},
	{pTier, func(k []byte) ([]byte, error) {
		tier, verdict, err := tierFromKey(k)
		return join(pTier, []byte{byte(tier)}, []byte(verdict)), err
	}},
	{pRegression, func(k []byte) ([]byte, error) {
		day, task, err := regressionFromKey(k)
		return join(pRegression, day.key(), []byte(task)), err
	}},
}

// FuzzKeys feeds bytes to every key parser: no input may panic; an error
// wraps ErrCorrupt and names the key; a key that parses is rebuilt
// byte for byte from what was parsed.
func FuzzKeys(f *testing.F) {
	m, err := project(sampleEvents())
	if err != nil {
		f.Fatal(err)
	}
	for k := range m {
		for i, p := range keyParsers {
			if bytes.HasPrefix([]byte(k), p.prefix) {
				f.Add(uint8(i), []byte(k[len(p.prefix):]))
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, rest []byte) {
		p := keyParsers[int(which)%len(keyParsers)]
		key := append(bytes.Clone(p.prefix), rest...)
		again, err := p.parse(key)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), quoteKey(key)) {
				t.Fatalf("error %v does not wrap ErrCorrupt and name the key", err)
			}
			return
		}
		if !bytes.Equal(again, key) {
			t.Fatalf("key %q parses and rebuilds to %q", key, again)
		}
	})
}

// keyspaces are the prefixes a FuzzQueries input picks from.
var keyspaces = [][]byte{pAgent, pAgentDay, pAgentTask, pSigner, pSignerDay, pTier, pSystem, pVerifier, pRollup, pBundle, pRollback, pTask, pRegression, pTaskBundle,
	pAgentEvent, pSubjectEvent}

// storeOf reads a FuzzQueries input: entries of a keyspace byte, a key
// length byte, the key after the keyspace's prefix, a value length byte
// and the value.
func storeOf(data []byte) memStore {
	m := memStore{}
	for len(data) >= 2 {
		prefix := keyspaces[int(data[0])%len(keyspaces)]
		n := min(int(data[1]), len(data)-2)
		key := join(prefix, data[2:2+n])
		data = data[2+n:]
		if len(data) == 0 {
			m[string(key)] = nil
			break
		}
		n = min(int(data[0]), len(data)-1)
		m[string(key)] = data[1 : 1+n]
		data = data[1+n:]
	}
	return m
}

// inputOf writes a store as a FuzzQueries input (keys and values of at
// most 255 bytes).
func inputOf(m memStore) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []byte
	for _, k := range keys {
		for i, p := range keyspaces {
			if strings.HasPrefix(k, string(p)) {
				rest, v := k[len(p):], m[k]
				out = append(out, byte(i), byte(len(rest)))
				out = append(out, rest...)
				out = append(out, byte(len(v)))
				out = append(out, v...)
				break
			}
		}
	}
	return out
}

// FuzzQueries runs every query, and projects the sample events, over a
// store of arbitrary keys and values under x/: no input may panic, and
// every error wraps ErrCorrupt (or is ledger.ErrNotFound for a subject
// without figures).
func FuzzQueries(f *testing.F) {
	m, err := project(sampleEvents())
	if err != nil {
		f.Fatal(err)
	}
	in := inputOf(m)
	if len(storeOf(in)) != len(m) {
		f.Fatal("inputOf and storeOf disagree")
	}
	f.Add(in)
	f.Add(in[:len(in)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		m := storeOf(data)
		for q, err := range queries(m) {
			if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ledger.ErrNotFound) {
				t.Fatalf("%s: %v", q, err)
			}
		}
		for _, ev := range sampleEvents() {
			b := New().Begin()
			if err := b.Project(m, ev); err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("project event %d: %v", ev.Seq, err)
				}
				continue
			}
			if err := b.Flush(m); err != nil {
				t.Fatal(err)
			}
		}
	})
}
