package ledger

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/keys"
)

// Settings configure how documents are checked; they are not part of the
// log. Registered governance policies live in the store under s/policy/
// (they are public); HMAC keys are secrets and live outside it
// (secrets.go).
var prefixPolicy = join(prefixConfig, []byte("policy/"))

// settings are the HMAC keys and policies registered in the ledger,
// cached until the Ledger changes them itself.
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

// AddPolicy registers a custom governance policy under its hash.
func (l *Ledger) AddPolicy(p governance.Policy) error {
	if l.readOnly {
		return ErrReadOnly
	}
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
			return fmt.Errorf("%w: registered policy %q: %v", ErrCorrupt, k, err)
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// scanPrefix calls fn for every key under p in the store as it is now
// (settings are not part of the log, so they are not read through views).
func (l *Ledger) scanPrefix(p []byte, fn func(k, v []byte) error) (err error) {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return storeErr(err)
	}
	defer closeIter(it, &err)
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	return storeErr(it.Error())
}
