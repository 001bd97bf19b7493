package registry

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/proofledger/ledger/ledger"
)

// memStore is a Store in memory.
type memStore struct {
	settings, secrets map[string][]byte
}

func newMemStore() *memStore {
	return &memStore{settings: map[string][]byte{}, secrets: map[string][]byte{}}
}

func (m *memStore) SetSetting(name string, v []byte) error { m.settings[name] = v; return nil }
func (m *memStore) DeleteSetting(name string) error        { delete(m.settings, name); return nil }
func (m *memStore) PutSecret(name string, v []byte) error  { m.secrets[name] = v; return nil }

func each(m map[string][]byte, prefix string, fn func(string, []byte) error) error {
	var names []string
	for n := range m {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if err := fn(n, m[n]); err != nil {
			return err
		}
	}
	return nil
}

func (m *memStore) Settings(prefix string, fn func(string, []byte) error) error {
	return each(m.settings, prefix, fn)
}

func (m *memStore) Secrets(prefix string, fn func(string, []byte) error) error {
	return each(m.secrets, prefix, fn)
}

const (
	idA = "ed25519:03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8"
	idB = "ed25519:4241e281723f8bd050eaa9cdaa8074791bd8ef4950ed935eba806313d8323596"
)

func TestTrustedSigners(t *testing.T) {
	s := newMemStore()
	r := New(s)
	if set, err := r.TrustedSigners(); err != nil || set != nil {
		t.Fatalf("new registry: %v %v, want nil (any signer)", set, err)
	}
	for _, tc := range []struct {
		op      string
		id      string
		changed bool
		want    []string
	}{
		{"add", idB, true, []string{idB}},
		{"add", idA, true, []string{idA, idB}},
		{"add", idA, false, []string{idA, idB}},
		{"remove", idB, true, []string{idA}},
		{"remove", idB, false, []string{idA}},
		{"remove", idA, true, []string{}},
	} {
		var changed bool
		var err error
		if tc.op == "add" {
			changed, err = r.AddTrustedSigner(tc.id)
		} else {
			changed, err = r.RemoveTrustedSigner(tc.id)
		}
		if err != nil || changed != tc.changed {
			t.Fatalf("%s %s: changed %v, %v; want %v", tc.op, tc.id, changed, err, tc.changed)
		}
		got, err := r.TrustedSignerList()
		if err != nil || !slices.Equal(got, tc.want) {
			t.Fatalf("after %s %s: %v %v, want %v", tc.op, tc.id, got, err, tc.want)
		}
		// A new registry on the same store reads the same.
		if again, _ := New(s).TrustedSignerList(); !slices.Equal(again, tc.want) {
			t.Fatalf("reread after %s %s: %v", tc.op, tc.id, again)
		}
		set, _ := r.TrustedSigners()
		if len(tc.want) == 0 && set != nil || len(set) != len(tc.want) {
			t.Fatalf("set after %s %s: %v", tc.op, tc.id, set)
		}
	}
	for _, bad := range []string{"", "ed25519:", "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8",
		strings.ToUpper(idA), idA + "00", "hmac:0011223344556677"} {
		if _, err := r.AddTrustedSigner(bad); !errors.Is(err, ErrSignerID) {
			t.Errorf("AddTrustedSigner(%q) = %v", bad, err)
		}
		if _, err := r.RemoveTrustedSigner(bad); !errors.Is(err, ErrSignerID) {
			t.Errorf("RemoveTrustedSigner(%q) = %v", bad, err)
		}
	}
	// A trusted-signer setting that is not one is corrupt, not ignored.
	for name, v := range map[string]string{
		"trust/ed25519/nothex": "ed25519:nothex",
		"trust/ed25519/03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8": idB,
	} {
		s := newMemStore()
		s.settings[name] = []byte(v)
		if _, err := New(s).TrustedSigners(); !errors.Is(err, ledger.ErrCorrupt) {
			t.Errorf("setting %s = %s: %v, want ErrCorrupt", name, v, err)
		}
	}
}
