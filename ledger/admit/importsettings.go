package admit

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/index/attrs"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/registry"
	"github.com/proofledger/ledger/proof"
)

// settingsPlan is what an import writes into its staging ledger besides
// the events: the archive's settings and HMAC keys that the target ledger
// does not have already (the target's own are copied as they are).
type settingsPlan struct {
	settings []ledger.ArchiveSetting
	secrets  map[string][]byte // secret name → secret
}

// planSettings checks the archive's settings against the target's and
// finds the secret of every HMAC key the archive names, before anything is
// written.
func planSettings(target *ledger.Ledger, h ledger.ArchiveHeader, opts ImportOptions) (*settingsPlan, error) {
	tSettings, tSecrets := map[string][]byte{}, map[string][]byte{}
	if target != nil {
		if err := target.Settings("", func(n string, v []byte) error { tSettings[n] = v; return nil }); err != nil {
			return nil, fmt.Errorf("the target's settings: %w", err)
		}
		if err := target.Secrets("", func(n string, v []byte) error { tSecrets[n] = v; return nil }); err != nil {
			return nil, fmt.Errorf("the target's secrets: %w", err)
		}
	}
	plan := &settingsPlan{secrets: map[string][]byte{}}
	for _, s := range h.Settings {
		if tv, ok := tSettings[s.Name]; ok {
			if !bytes.Equal(tv, s.Value) {
				return nil, fmt.Errorf("%w: %w: the target ledger's setting %q differs from the archive's", ledger.ErrImport, ErrSettingConflict, s.Name)
			}
			continue
		}
		plan.settings = append(plan.settings, s)
	}
	// Keys given by name must be the archive's, before anything is asked.
	names := map[string]bool{}
	var archiveKeys []string
	for _, sec := range h.Secrets {
		name, ok := registry.HMACKeyName(sec.Name)
		if !ok {
			return nil, fmt.Errorf("%w: the archive names secret %q, which is not a registered HMAC key", ledger.ErrImport, sec.Name)
		}
		names[name] = true
		archiveKeys = append(archiveKeys, fmt.Sprintf("%q", name))
	}
	given := make([]string, 0, len(opts.HMACSecrets))
	for name := range opts.HMACSecrets {
		given = append(given, name)
	}
	sort.Strings(given)
	for _, name := range given {
		if !names[name] {
			theirs := "none"
			if len(archiveKeys) > 0 {
				theirs = strings.Join(archiveKeys, ", ")
			}
			return nil, fmt.Errorf("%w: HMAC key %q was given, but the archive's ledger had no key of that name (its keys: %s)", ErrWrongSecret, name, theirs)
		}
	}
	var missing []SecretRef
	for _, sec := range h.Secrets {
		name, _ := registry.HMACKeyName(sec.Name)
		if tv, ok := tSecrets[sec.Name]; ok {
			if id := registry.KeyID(tv); id != sec.ID {
				return nil, fmt.Errorf("%w: %w: the target ledger's HMAC key %q is %s, the archive's is %s", ledger.ErrImport, ErrSettingConflict, name, id, sec.ID)
			}
			continue
		}
		secret, err := findSecret(name, sec.ID, opts)
		switch {
		case errors.Is(err, ErrMissingSecret):
			missing = append(missing, SecretRef{Name: name, ID: sec.ID})
			continue
		case err != nil:
			return nil, err
		}
		plan.secrets[sec.Name] = secret
	}
	if len(missing) > 0 {
		return nil, &MissingSecretsError{Keys: missing}
	}
	return plan, nil
}

// findSecret finds the secret of the archive's HMAC key name with key id
// id: given by name, among the keys given for bundles (by id), or from
// SecretFor. A key file's trailing newline is dropped when the key
// without it has the id.
func findSecret(name, id string, opts ImportOptions) ([]byte, error) {
	wrong := func(s []byte) error {
		return fmt.Errorf("%w: the secret given for HMAC key %q has key id %s; the archive's %q is %s", ErrWrongSecret, name, registry.KeyID(s), name, id)
	}
	if s, ok := opts.HMACSecrets[name]; ok {
		if m := secretWithID(s, id); m != nil {
			return m, nil
		}
		return nil, wrong(s)
	}
	for _, k := range opts.HMACKeys {
		if m := secretWithID(k.Secret, id); m != nil {
			return m, nil
		}
	}
	if opts.SecretFor == nil {
		return nil, ErrMissingSecret
	}
	s, err := opts.SecretFor(name, id)
	if err != nil {
		return nil, err
	}
	if m := secretWithID(s, id); m != nil {
		return m, nil
	}
	return nil, wrong(s)
}

// secretWithID returns s, or s without a trailing newline, when its key
// id is id; nil otherwise.
func secretWithID(s []byte, id string) []byte {
	for _, c := range (keys.HMACKey{Secret: s}).Candidates() {
		if registry.KeyID(c.Secret) == id {
			return c.Secret
		}
	}
	return nil
}

// apply writes the target's settings and secrets, then the planned ones,
// into the staging store.
func (p *settingsPlan) apply(target, staging *ledger.Ledger) error {
	if target != nil {
		if err := target.Settings("", staging.SetSetting); err != nil {
			return err
		}
		if err := target.Secrets("", staging.PutSecret); err != nil {
			return err
		}
	}
	for _, s := range p.settings {
		if err := staging.SetSetting(s.Name, s.Value); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(p.secrets))
	for n := range p.secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := staging.PutSecret(n, p.secrets[n]); err != nil {
			return err
		}
	}
	return nil
}

// policyTracker keeps the set of registered policies an import's appends
// know: for each witness bundle, exactly those its archived leaf says were
// known (policy_known) when it was appended, so that its re-created leaf
// is the same.
type policyTracker struct {
	avail map[[8]byte]governance.Policy
	on    map[[8]byte]bool
	list  []governance.Policy
	b     attrs.Bundle
}

func newPolicyTracker(reg *registry.Registry) (*policyTracker, error) {
	reg.Reload() // the settings were written through the store
	ps, err := reg.Policies()
	if err != nil {
		return nil, err
	}
	t := &policyTracker{avail: map[[8]byte]governance.Policy{}, on: map[[8]byte]bool{}, list: []governance.Policy{}}
	for _, p := range ps {
		t.avail[p.Hash()] = p
	}
	return t, nil
}

// known returns the custom policies the next appends know (never nil: nil
// would mean the registry's).
func (t *policyTracker) known() []governance.Policy { return t.list }

// needs returns nil when ev can be appended knowing the current policies,
// or the change of the set it needs, to make once the events before it are
// appended.
func (t *policyTracker) needs(ev *ledger.ArchiveEvent) (func(), error) {
	if ev.Kind != string(codec.KindRVWW) {
		return nil, nil
	}
	lf, err := proof.ParseLeaf(ev.Leaf)
	if err != nil {
		return nil, fmt.Errorf("%w: line %d: event %d: leaf: %v", ledger.ErrImport, ev.Line, ev.Seq, err)
	}
	if err := t.b.Decode(lf.Attrs); err != nil {
		return nil, fmt.Errorf("%w: line %d: event %d: leaf: %v", ledger.ErrImport, ev.Line, ev.Seq, err)
	}
	h := t.b.Policy
	if _, ok := governance.DefaultByHash(h); ok || t.b.PolicyKnown == t.on[h] {
		return nil, nil
	}
	if !t.b.PolicyKnown {
		return func() { delete(t.on, h); t.rebuild() }, nil
	}
	if _, ok := t.avail[h]; !ok {
		return nil, fmt.Errorf("%w: event %d: its bundle was checked against policy %x, which neither the archive nor the target ledger has registered (register it in the target with ledger policy add, then import again)", ledger.ErrImport, ev.Seq, h)
	}
	return func() { t.on[h] = true; t.rebuild() }, nil
}

func (t *policyTracker) rebuild() {
	t.list = t.list[:0]
	for h := range t.on {
		t.list = append(t.list, t.avail[h])
	}
	sort.Slice(t.list, func(i, j int) bool { return t.list[i].HashString() < t.list[j].HashString() })
}
