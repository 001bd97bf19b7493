package ledgertest

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/proofledger/ledger/codec/keys"
)

// Config fixes a corpus. The counts say how many documents of each kind to
// make; the other fields are knobs whose zero value means the default
// written in their comment. For the fractions, a negative value means
// "none" (zero would mean the default).
type Config struct {
	// Seed selects the corpus: keys, documents and times all derive from it.
	Seed uint64

	// Receipts, Bundles and Attestations are the numbers of VRF receipts,
	// RVWW witness bundles and AVIR attestations. When all three are zero
	// the corpus has 200 receipts, 100 bundles and 20 attestations.
	Receipts, Bundles, Attestations int

	// Start is the time of the first document (default
	// 2026-01-05T09:00:00Z); Span is how long the documents' own times
	// spread over (default 30 days).
	Start time.Time
	Span  time.Duration

	// Agents is the number of agents that own receipt chains (default 32).
	Agents int
	// AgentSkew makes a few agents much busier than the rest: agent k is
	// picked with weight 1/(k+1)^AgentSkew (default 0.8; a negative value
	// spreads receipts evenly, which benchmarks that append each agent's
	// chain from its own goroutine want).
	AgentSkew float64
	// VerifierKeys is the number of Ed25519 keys that sign receipts
	// (default 4).
	VerifierKeys int
	// SignerSwitch is the chance that a receipt is signed by another
	// verifier key than its predecessor in the chain (default 0.1), so one
	// chain carries several signers.
	SignerSwitch float64
	// Unchained is the fraction of agents whose receipts carry no chain
	// fields, as the reference implementation writes them (default 0.1).
	Unchained float64
	// MinDetails and MaxDetails bound the checks per receipt (default 1
	// and 20; at most 200).
	MinDetails, MaxDetails int
	// Tier1 is the fraction of tier 1 receipts; the rest are tier 0
	// (default 0.35).
	Tier1 float64
	// ReceiptPartial, ReceiptFail and ReceiptError are the fractions of
	// receipts with verdict partial (default 0.12), fail (default 0.06)
	// and error (default 0.05); the rest pass.
	ReceiptPartial, ReceiptFail, ReceiptError float64

	// TaskRepeat is the chance that a bundle re-runs a recent task (a
	// retry or a nightly re-run) instead of starting a new one (default
	// 0.25).
	TaskRepeat float64
	// Solved is the fraction of bundles whose outcome is solved (default
	// 0.65); the rest fail, error or are skipped.
	Solved float64
	// Violations is the fraction of bundles that break their policy: a
	// denied tool under the restricted policy, or a cost or call budget
	// overrun (default 0.03).
	Violations float64
	// Incomplete is the fraction of solved bundles that lack one of SPEC,
	// DIFF or TEST_LOG (default 0.05).
	Incomplete float64
	// TextScale scales the size of the bundles' text sections (SPEC, PLAN,
	// DIFF, TEST_LOG, POSTMORTEM): default 1, at most MaxTextScale; a
	// section keeps at least one byte. A bundle's header, trace and the
	// sections it has do not depend on TextScale, so the scorecard of a
	// corpus is the same at any scale: 0.05 makes compact bundles (about
	// 1.7 KB, mostly trace, instead of about 10 KB) for benchmarks of the
	// projections, which need many bundles but not their text. The default scale leaves every
	// document byte-identical to what the generator made before the knob
	// existed.
	TextScale float64

	// Systems is the number of AVIR systems under test (default 4, at most
	// 8) and Versions the number of versions of each (default 3, at most
	// 6).
	Systems, Versions int
	// AttestPartial and AttestFailed are the fractions of attestations
	// with verdict PARTIAL (default 0.25) and FAILED (default 0.15); the
	// rest are VERIFIED.
	AttestPartial, AttestFailed float64
	// Specs adds each AVIR specification to the documents, just before the
	// first attestation that verifies it. Specifications are not counted
	// in Attestations.
	Specs bool

	// Workers is the number of goroutines that build documents (default
	// GOMAXPROCS). It does not change the output.
	Workers int
}

// Default values of the knobs.
const (
	defaultAgents       = 32
	defaultVerifierKeys = 4
	defaultMaxDetails   = 20
	maxDetailsLimit     = 200
	defaultSystems      = 4
	defaultVersions     = 3
)

// MaxTextScale is the largest Config.TextScale.
const MaxTextScale = 100

// DefaultStart returns the time of the first document when Config.Start is
// zero: 2026-01-05T09:00:00Z.
func DefaultStart() time.Time { return time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC) }

// DefaultSpan is Config.Span's default.
const DefaultSpan = 30 * 24 * time.Hour

// frac returns f, or def when f is zero, or 0 when f is negative.
func frac(f, def float64) float64 {
	switch {
	case f == 0:
		return def
	case f < 0:
		return 0
	}
	return f
}

// Normalized returns c with every default filled in and the fractions
// resolved (a negative fraction becomes 0), or an error when c cannot be
// generated.
func (c Config) Normalized() (Config, error) {
	if c.Receipts < 0 || c.Bundles < 0 || c.Attestations < 0 {
		return c, errors.New("ledgertest: negative document count")
	}
	if c.Receipts == 0 && c.Bundles == 0 && c.Attestations == 0 {
		c.Receipts, c.Bundles, c.Attestations = 200, 100, 20
	}
	if c.Start.IsZero() {
		c.Start = DefaultStart()
	}
	c.Start = c.Start.UTC().Truncate(time.Microsecond)
	if c.Span == 0 {
		c.Span = DefaultSpan
	}
	if c.Span < 0 {
		return c, fmt.Errorf("ledgertest: negative span %v", c.Span)
	}
	if c.Agents == 0 {
		c.Agents = defaultAgents
	}
	if c.VerifierKeys == 0 {
		c.VerifierKeys = defaultVerifierKeys
	}
	if c.MinDetails == 0 {
		c.MinDetails = 1
	}
	if c.MaxDetails == 0 {
		c.MaxDetails = max(defaultMaxDetails, c.MinDetails)
	}
	if c.Systems == 0 {
		c.Systems = defaultSystems
	}
	if c.Versions == 0 {
		c.Versions = defaultVersions
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.TextScale == 0 {
		c.TextScale = 1
	}
	c.AgentSkew = frac(c.AgentSkew, 0.8)
	c.SignerSwitch = frac(c.SignerSwitch, 0.1)
	c.Unchained = frac(c.Unchained, 0.1)
	c.Tier1 = frac(c.Tier1, 0.35)
	c.ReceiptPartial = frac(c.ReceiptPartial, 0.12)
	c.ReceiptFail = frac(c.ReceiptFail, 0.06)
	c.ReceiptError = frac(c.ReceiptError, 0.05)
	c.TaskRepeat = frac(c.TaskRepeat, 0.25)
	c.Solved = frac(c.Solved, 0.65)
	c.Violations = frac(c.Violations, 0.03)
	c.Incomplete = frac(c.Incomplete, 0.05)
	c.AttestPartial = frac(c.AttestPartial, 0.25)
	c.AttestFailed = frac(c.AttestFailed, 0.15)

	switch {
	case c.Agents < 0 || c.VerifierKeys < 0 || c.Systems < 0 || c.Versions < 0:
		return c, errors.New("ledgertest: negative agent, key, system or version count")
	case c.MinDetails < 1 || c.MaxDetails < c.MinDetails || c.MaxDetails > maxDetailsLimit:
		return c, fmt.Errorf("ledgertest: details per receipt %d..%d: want 1 <= min <= max <= %d", c.MinDetails, c.MaxDetails, maxDetailsLimit)
	case c.Systems > len(systemNames) || c.Versions > len(versionNames):
		return c, fmt.Errorf("ledgertest: at most %d systems of %d versions", len(systemNames), len(versionNames))
	case !(c.TextScale > 0 && c.TextScale <= MaxTextScale):
		return c, fmt.Errorf("ledgertest: TextScale is %v, want more than 0 and at most %d", c.TextScale, MaxTextScale)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"SignerSwitch", c.SignerSwitch}, {"Unchained", c.Unchained}, {"Tier1", c.Tier1},
		{"ReceiptPartial+ReceiptFail+ReceiptError", c.ReceiptPartial + c.ReceiptFail + c.ReceiptError},
		{"TaskRepeat", c.TaskRepeat}, {"Solved", c.Solved}, {"Violations", c.Violations},
		{"Incomplete", c.Incomplete}, {"AttestPartial+AttestFailed", c.AttestPartial + c.AttestFailed},
	} {
		if f.v > 1 {
			return c, fmt.Errorf("ledgertest: %s is %v, want at most 1", f.name, f.v)
		}
	}
	return c, nil
}

// Keys are the keys a corpus is signed with, derived from its seed. A
// ledger that is given them verifies every document of the corpus.
type Keys struct {
	// Verifiers sign VRF receipts.
	Verifiers []ed25519.PrivateKey
	// AVIR signs attestations.
	AVIR ed25519.PrivateKey
	// HMAC signs witness bundles; its name is "ledgertest-hmac".
	HMAC keys.HMACKey
}

// HMACKeyName is the name of a corpus's HMAC key.
const HMACKeyName = "ledgertest-hmac"

// NewKeys derives the keys of a corpus from its seed: verifiers Ed25519
// receipt keys, the AVIR key and a 32-byte HMAC key.
func NewKeys(seed uint64, verifiers int) Keys {
	derive := func(label string, i int) []byte {
		h := sha256.New()
		h.Write([]byte("proofledger ledgertest/v1 " + label))
		h.Write(binary.LittleEndian.AppendUint64(nil, seed))
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(i)))
		return h.Sum(nil)
	}
	k := Keys{
		AVIR: ed25519.NewKeyFromSeed(derive("avir key", 0)),
		HMAC: keys.HMACKey{Name: HMACKeyName, Secret: derive("hmac key", 0)},
	}
	for i := range verifiers {
		k.Verifiers = append(k.Verifiers, ed25519.NewKeyFromSeed(derive("verifier key", i)))
	}
	return k
}

// Keys returns the keys the corpus of c is signed with.
func (c Config) Keys() Keys {
	n := c.VerifierKeys
	if n == 0 {
		n = defaultVerifierKeys
	}
	return NewKeys(c.Seed, max(n, 0))
}

// Signers returns the signer identities ("ed25519:<hex>") of every
// Ed25519 key: the verifier keys, then the AVIR key.
func (k Keys) Signers() []string {
	out := make([]string, 0, len(k.Verifiers)+1)
	for _, v := range k.Verifiers {
		out = append(out, keys.SignerID(v.Public().(ed25519.PublicKey)))
	}
	return append(out, keys.SignerID(k.AVIR.Public().(ed25519.PublicKey)))
}

// TrustedSigners returns Signers as a set, the shape of the ledger's
// AppendOptions.TrustedSigners.
func (k Keys) TrustedSigners() map[string]bool {
	out := make(map[string]bool)
	for _, s := range k.Signers() {
		out[s] = true
	}
	return out
}

// HMACKeys returns the HMAC key in a slice, the shape of the ledger's
// AppendOptions.HMACKeys and inspect.Options.HMACKeys.
func (k Keys) HMACKeys() []keys.HMACKey { return []keys.HMACKey{k.HMAC} }
