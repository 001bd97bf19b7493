package registry

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/ledger"
)

// Sentinel errors callers branch on.
var (
	// ErrExists: a different key or policy is registered under that name.
	ErrExists = errors.New("already registered")
	// ErrUnknownPolicy: no policy has that name or hash.
	ErrUnknownPolicy = errors.New("no policy has that name or hash")
	// ErrAmbiguous: several policies have that name.
	ErrAmbiguous = errors.New("several policies have that name")
)

// Store is what the registry needs of a ledger: its settings and secrets
// (package ledger's *Ledger).
type Store interface {
	SetSetting(name string, value []byte) error
	DeleteSetting(name string) error
	Settings(prefix string, fn func(name string, value []byte) error) error
	PutSecret(name string, value []byte) error
	Secrets(prefix string, fn func(name string, value []byte) error) error
}

// Setting and secret names.
const (
	policyPrefix = "policy/"                 // policy/<16 hex hash> → policy JSON
	hmacPrefix   = ledger.LegacySecretPrefix // hmac-<name> → raw key
)

// Registry is the settings of one ledger, cached until it changes them
// itself. It is safe for concurrent use.
type Registry struct {
	s     Store
	mu    sync.Mutex
	hmac  []keys.HMACKey
	pols  []governance.Policy
	trust []string // sorted signer ids
	fresh Freshness
	valid bool
}

// New returns the registry of a ledger.
func New(s Store) *Registry { return &Registry{s: s} }

func (r *Registry) load() error {
	if r.valid {
		return nil
	}
	var ks []keys.HMACKey
	err := r.s.Secrets(hmacPrefix, func(name string, v []byte) error {
		ks = append(ks, keys.HMACKey{Name: strings.TrimPrefix(name, hmacPrefix), Secret: v})
		return nil
	})
	if err != nil {
		return err
	}
	var ps []governance.Policy
	err = r.s.Settings(policyPrefix, func(name string, v []byte) error {
		p, err := governance.ParsePolicy(v)
		if err != nil {
			return fmt.Errorf("%w: registered policy %s: %v", ledger.ErrCorrupt, name, err)
		}
		ps = append(ps, p)
		return nil
	})
	if err != nil {
		return err
	}
	trust, err := r.loadTrust()
	if err != nil {
		return err
	}
	fresh, err := r.loadFreshness()
	if err != nil {
		return err
	}
	r.hmac, r.pols, r.trust, r.fresh, r.valid = ks, ps, trust, fresh, true
	return nil
}

// HMACKeys returns the registered HMAC keys in name order.
func (r *Registry) HMACKeys() ([]keys.HMACKey, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.load(); err != nil {
		return nil, err
	}
	return append([]keys.HMACKey(nil), r.hmac...), nil
}

// ValidKeyName reports whether name can name a registered HMAC key: 1 to
// 64 letters, digits, '.', '_' or '-', not starting with '.'.
func ValidKeyName(name string) error {
	if name == "" || len(name) > 64 || name[0] == '.' {
		return fmt.Errorf("HMAC key name %.70q: want 1 to 64 characters, not starting with '.'", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("HMAC key name %q: only letters, digits, '.', '_' and '-'", name)
		}
	}
	return nil
}

// AddHMACKey registers a named HMAC key. It returns added false (and no
// error) when the same key is registered under that name already, and an
// error wrapping ErrExists when a different one is.
func (r *Registry) AddHMACKey(k keys.HMACKey) (added bool, err error) {
	if err := ValidKeyName(k.Name); err != nil {
		return false, err
	}
	if len(k.Secret) == 0 {
		return false, fmt.Errorf("HMAC key %q: empty secret", k.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.load(); err != nil {
		return false, err
	}
	for _, h := range r.hmac {
		if h.Name == k.Name {
			if subtle.ConstantTimeCompare(h.Secret, k.Secret) == 1 {
				return false, nil
			}
			return false, fmt.Errorf("HMAC key %q: %w with another secret (%s)", k.Name, ErrExists, KeyID(h.Secret))
		}
	}
	if err := r.s.PutSecret(hmacPrefix+k.Name, k.Secret); err != nil {
		return false, err
	}
	r.valid = false
	return true, nil
}

// KeyID names an HMAC key by a fingerprint that does not reveal it: "hmac:"
// and the first 8 bytes of HMAC-SHA256(key, "ledger hmac key id"). It is
// what the ledger records as the signer of a bundle the key verified.
func KeyID(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("ledger hmac key id"))
	return "hmac:" + hex.EncodeToString(m.Sum(nil)[:8])
}

// Policies returns the registered custom policies (the three defaults are
// always known and not included), in hash order.
func (r *Registry) Policies() ([]governance.Policy, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.load(); err != nil {
		return nil, err
	}
	return append([]governance.Policy(nil), r.pols...), nil
}

// AddPolicy registers a custom governance policy under its hash. It
// returns added false when that policy (same hash, same text) is
// registered already; a default policy is never registered (it is always
// known) and also returns false.
func (r *Registry) AddPolicy(p governance.Policy) (added bool, err error) {
	if _, ok := governance.DefaultByHash(p.Hash()); ok {
		return false, nil
	}
	data, err := p.MarshalJSON()
	if err != nil {
		return false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.load(); err != nil {
		return false, err
	}
	for _, q := range r.pols {
		if q.Hash() == p.Hash() {
			if qd, err := q.MarshalJSON(); err == nil && string(qd) == string(data) {
				return false, nil
			}
		}
	}
	if err := r.s.SetSetting(policyPrefix+p.HashString(), data); err != nil {
		return false, err
	}
	r.valid = false
	return true, nil
}

// Source says where a known policy comes from.
type Source string

// The sources of a known policy.
const (
	SourceDefault    Source = "default"
	SourceRegistered Source = "registered"
)

// Known is a policy the ledger knows and where it comes from.
type Known struct {
	Policy governance.Policy
	Source Source
}

// All returns the default policies, then the registered ones.
func (r *Registry) All() ([]Known, error) {
	reg, err := r.Policies()
	if err != nil {
		return nil, err
	}
	var out []Known
	for _, p := range governance.Defaults() {
		out = append(out, Known{p, SourceDefault})
	}
	for _, p := range reg {
		out = append(out, Known{p, SourceRegistered})
	}
	return out, nil
}

// ResolvePolicy reads a policy reference: 16 hex digits of a policy hash
// (known or not), or the name of a default policy (restricted, approved,
// autonomous) or of a registered one. It returns the 8-byte hash and a
// label for reports ("<hash> (<name>)").
func (r *Registry) ResolvePolicy(ref string) ([]byte, string, error) {
	all, err := r.All()
	if err != nil {
		return nil, "", err
	}
	if h, err := hex.DecodeString(strings.ToLower(ref)); err == nil && len(h) == 8 {
		label := hex.EncodeToString(h)
		for _, k := range all {
			if k.Policy.HashString() == label && k.Policy.Name != "" {
				return h, fmt.Sprintf("%s (%s)", label, k.Policy.Name), nil
			}
		}
		return h, label + " (not a known policy)", nil
	}
	var found []governance.Policy
	for _, k := range all {
		if k.Policy.Name == ref {
			found = append(found, k.Policy)
		}
	}
	switch len(found) {
	case 0:
		return nil, "", fmt.Errorf("policy %.70q: %w", ref, ErrUnknownPolicy)
	case 1:
		h := found[0].Hash()
		return h[:], fmt.Sprintf("%s (%s)", found[0].HashString(), ref), nil
	}
	hashes := make([]string, len(found))
	for i, p := range found {
		hashes[i] = p.HashString()
	}
	return nil, "", fmt.Errorf("policy %q: %w (%d policies have that name: %s); give the hash", ref, ErrAmbiguous, len(found), strings.Join(hashes, ", "))
}

// ParsePolicyFile parses a policy file (JSON or YAML); its errors wrap
// codec.ErrMalformed.
func ParsePolicyFile(data []byte) (governance.Policy, error) {
	p, err := governance.ParsePolicy(data)
	if err != nil {
		var me *codec.MalformedError
		if errors.As(err, &me) {
			return p, err
		}
		return p, fmt.Errorf("%w: %v", codec.ErrMalformed, err)
	}
	return p, nil
}

// HMACSecretName returns the name of the secret that holds the registered
// HMAC key name.
func HMACSecretName(name string) string { return hmacPrefix + name }

// HMACKeyName returns the HMAC key name a secret holds (ok false when the
// secret is not a registered HMAC key).
func HMACKeyName(secret string) (name string, ok bool) {
	name, ok = strings.CutPrefix(secret, hmacPrefix)
	return name, ok && ValidKeyName(name) == nil
}

// SecretID names a secret by a fingerprint that does not reveal it: the
// key id (KeyID) of an HMAC key. Export archives carry it instead of the
// secret, and an import asks for the secret by it.
func SecretID(name string, value []byte) (string, error) {
	if _, ok := HMACKeyName(name); !ok {
		return "", fmt.Errorf("secret %q is not a registered HMAC key", name)
	}
	return KeyID(value), nil
}

// Reload drops what the registry read, so that its next question reads
// the store again: for a caller that wrote settings or secrets through the
// store itself (an import restoring an archive's).
func (r *Registry) Reload() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.valid = false
}
