package ledger

import (
	"errors"
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

// AddHMACKey registers a named HMAC key for verifying witness bundles.
func (l *Ledger) AddHMACKey(k keys.HMACKey) error {
	if k.Name == "" || len(k.Secret) == 0 {
		return fmt.Errorf("HMAC key needs a name and a secret")
	}
	key := join(prefixHMAC, []byte(k.Name))
	if _, err := l.get(key); err == nil {
		return fmt.Errorf("HMAC key %q: %w", k.Name, ErrExists)
	}
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

var _ = errors.New
