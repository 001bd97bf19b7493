package registry

import (
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/proofledger/ledger/ledger"
)

// Trusted signers are a setting: trust/ed25519/<64 hex> → "ed25519:<hex>",
// one per Ed25519 public key the ledger admits signed documents from.
// While there is none, any signer is admitted (as before the setting
// existed); a per-call list (admit.Options.TrustedSigners) overrides them.
const trustPrefix = "trust/ed25519/"

// ErrSignerID: not a signer id "ed25519:<64 lowercase hex>".
var ErrSignerID = errors.New("not an Ed25519 signer id")

// trustName returns the setting name of a signer id.
func trustName(id string) (string, error) {
	h, ok := strings.CutPrefix(id, "ed25519:")
	if b, err := hex.DecodeString(h); !ok || err != nil || len(b) != 32 || hex.EncodeToString(b) != h {
		return "", fmt.Errorf("%w: %.80q: want ed25519: and 64 lowercase hex digits", ErrSignerID, id)
	}
	return trustPrefix + h, nil
}

// TrustedSigners returns the ledger's trusted signer ids as a set, or nil
// when it has none (any signer is admitted).
func (r *Registry) TrustedSigners() (map[string]bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.load(); err != nil {
		return nil, err
	}
	if len(r.trust) == 0 {
		return nil, nil
	}
	out := make(map[string]bool, len(r.trust))
	for _, id := range r.trust {
		out[id] = true
	}
	return out, nil
}

// TrustedSignerList returns the trusted signer ids in order (empty when
// any signer is admitted).
func (r *Registry) TrustedSignerList() ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.load(); err != nil {
		return nil, err
	}
	return append([]string{}, r.trust...), nil
}

// AddTrustedSigner adds a signer id ("ed25519:<hex>", keys.SignerID) to
// the trusted signers; added is false when it was there already.
func (r *Registry) AddTrustedSigner(id string) (added bool, err error) {
	name, err := trustName(id)
	if err != nil {
		return false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.load(); err != nil {
		return false, err
	}
	if i := sort.SearchStrings(r.trust, id); i < len(r.trust) && r.trust[i] == id {
		return false, nil
	}
	if err := r.s.SetSetting(name, []byte(id)); err != nil {
		return false, err
	}
	r.valid = false
	return true, nil
}

// RemoveTrustedSigner removes a signer id from the trusted signers;
// removed is false when it was not there. Removing the last one admits
// any signer again.
func (r *Registry) RemoveTrustedSigner(id string) (removed bool, err error) {
	name, err := trustName(id)
	if err != nil {
		return false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.load(); err != nil {
		return false, err
	}
	if i := sort.SearchStrings(r.trust, id); i == len(r.trust) || r.trust[i] != id {
		return false, nil
	}
	if err := r.s.DeleteSetting(name); err != nil {
		return false, err
	}
	r.valid = false
	return true, nil
}

// loadTrust reads the trusted signers, in id order. A setting under
// trust/ed25519/ whose name is not a key's, or whose value is not its id,
// is corrupt.
func (r *Registry) loadTrust() ([]string, error) {
	var ids []string
	err := r.s.Settings(trustPrefix, func(name string, v []byte) error {
		id := "ed25519:" + strings.TrimPrefix(name, trustPrefix)
		if n, err := trustName(id); err != nil || n != name || string(v) != id {
			return fmt.Errorf("%w: trusted signer setting %q holds %.80q", ledger.ErrCorrupt, name, v)
		}
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(ids)
	return ids, nil
}
