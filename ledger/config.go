package ledger

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/keys"
)

// Settings live under s/ and are not part of the log: they configure how
// documents are checked (HMAC keys are secrets and never enter the log).
var (
	prefixHMAC   = join(prefixConfig, []byte("hmac/"))
	prefixPolicy = join(prefixConfig, []byte("policy/"))
)

// settings are the HMAC keys and policies registered in the store, cached
// by the Ledger until it changes them itself.
type settings struct {
	hmac     []keys.HMACKey
	policies []governance.Policy
}

// loadSettings returns the cached settings, reading them on first use.
func (l *Ledger) loadSettings() (*settings, error) {
	l.setMu.Lock()
	defer l.setMu.Unlock()
	if l.settings != nil {
		return l.settings, nil
	}
	h, err := l.HMACKeys()
	if err != nil {
		return nil, err
	}
	p, err := l.Policies()
	if err != nil {
		return nil, err
	}
	l.settings = &settings{hmac: h, policies: p}
	return l.settings, nil
}

func (l *Ledger) dropSettings() {
	l.setMu.Lock()
	l.settings = nil
	l.setMu.Unlock()
}

// AddHMACKey registers a named HMAC key for verifying witness bundles.
func (l *Ledger) AddHMACKey(k keys.HMACKey) error {
	if k.Name == "" || len(k.Secret) == 0 {
		return fmt.Errorf("HMAC key needs a name and a secret")
	}
	key := join(prefixHMAC, []byte(k.Name))
	if _, err := l.get(key); err == nil {
		return fmt.Errorf("HMAC key %q: %w", k.Name, ErrExists)
	}
	defer l.dropSettings()
	return l.db.Set(key, k.Secret, pebble.Sync)
}

// HMACKeys returns the registered HMAC keys in name order.
func (l *Ledger) HMACKeys() ([]keys.HMACKey, error) {
	var out []keys.HMACKey
	err := l.scanPrefix(prefixHMAC, func(k, v []byte) error {
		out = append(out, keys.HMACKey{Name: string(k[len(prefixHMAC):]), Secret: append([]byte(nil), v...)})
		return nil
	})
	return out, err
}

// AddPolicy registers a custom governance policy under its hash.
func (l *Ledger) AddPolicy(p governance.Policy) error {
	data, err := p.MarshalJSON()
	if err != nil {
		return err
	}
	defer l.dropSettings()
	return l.db.Set(join(prefixPolicy, []byte(p.HashString())), data, pebble.Sync)
}

// Policies returns the registered custom policies (the three defaults are
// always known and not included).
func (l *Ledger) Policies() ([]governance.Policy, error) {
	var out []governance.Policy
	err := l.scanPrefix(prefixPolicy, func(k, v []byte) error {
		p, err := governance.ParsePolicy(v)
		if err != nil {
			return fmt.Errorf("%w: registered policy %s: %v", ErrCorrupt, k[len(prefixPolicy):], err)
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

func (l *Ledger) scanPrefix(p []byte, fn func(k, v []byte) error) error {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}
