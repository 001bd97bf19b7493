package vrf

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// Sign signs doc in the reference form and returns the signed receipt
// written as Python's json.dumps(indent=2) writes it (document key order
// kept, no trailing newline). It sets or replaces doc's signature member
// with {"algorithm": "ed25519", "signer_id": "ed25519:<hex>",
// "content_hash": <hex SHA-256 of the canonical JSON without signature>,
// "signature": <hex Ed25519 signature of the content_hash string>}, which
// is what the reference verifier checks.
//
// Sign refuses to issue a receipt that would not pass Parse and Verify: the
// error then wraps codec.ErrMalformed or codec.ErrInvalid with the
// findings.
func Sign(doc canonjson.Value, priv ed25519.PrivateKey) ([]byte, error) {
	return sign(doc, priv, referenceSigning())
}

// signing describes how to sign; tests use the other settings to produce
// receipts the way other producers do.
type signing struct {
	signerID    func(ed25519.PublicKey) string
	canonical   func(canonjson.Value) []byte
	hashPrefix  string // written before the hex in content_hash
	messageBare bool   // sign the bare hex even when hashPrefix is set
	skipCheck   bool   // do not Parse and Verify the result
}

func referenceSigning() signing {
	return signing{signerID: signerIDHex, canonical: canonjson.Canonical}
}

func sign(doc canonjson.Value, priv ed25519.PrivateKey, cfg signing) ([]byte, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("vrf: sign: private key is %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	if doc.Type() != canonjson.Object {
		return nil, fmt.Errorf("vrf: sign: want a JSON object, got %s: %w", typeName(doc), codec.ErrMalformed)
	}
	pub := ed25519.PublicKey(priv[ed25519.SeedSize:])
	sum := sha256.Sum256(cfg.canonical(doc.Without("signature")))
	hexHash := hex.EncodeToString(sum[:])
	contentHash := cfg.hashPrefix + hexHash
	msg := contentHash
	if cfg.messageBare {
		msg = hexHash
	}
	sig := ed25519.Sign(priv, []byte(msg))
	signed := doc.With("signature", canonjson.MakeObject(
		canonjson.Member{Key: "algorithm", Value: canonjson.MakeString("ed25519")},
		canonjson.Member{Key: "signer_id", Value: canonjson.MakeString(cfg.signerID(pub))},
		canonjson.Member{Key: "content_hash", Value: canonjson.MakeString(contentHash)},
		canonjson.Member{Key: "signature", Value: canonjson.MakeString(hex.EncodeToString(sig))},
	))
	out := canonjson.Indent(signed)
	if cfg.skipCheck {
		return out, nil
	}
	r, err := Parse(out)
	if err != nil {
		return nil, fmt.Errorf("vrf: sign: %w", err)
	}
	if err := codec.AsInvalid(r.Verify()); err != nil {
		return nil, fmt.Errorf("vrf: sign: the signed receipt does not verify: %w", err)
	}
	return out, nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// ShortHash returns "sha256:" and the first 16 hex digits of the SHA-256
// of data: the reference implementation's spelling of the hashes values.
func ShortHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hashPrefix + hex.EncodeToString(sum[:8])
}

// DefaultVerifierVersion is written as metadata.verifier_version when a
// Draft leaves it empty.
const DefaultVerifierVersion = "proofledger-vrf/1.0"

// Draft describes a new receipt in the reference form. Build turns it into
// a document whose counts and verdict follow from Details; Sign signs it.
type Draft struct {
	// ReceiptID is a UUID v4; empty means a new random one.
	ReceiptID string
	// VerifiedAt is the verification time; zero means now. It is written
	// in UTC with microsecond precision, as Python's isoformat() does.
	VerifiedAt time.Time
	// Tier is the verification tier, 0 to 3.
	Tier int
	// Details are the individual checks, in order.
	Details []Detail
	// Hashes are the artifact hashes ("sha256:" + hex, see ShortHash).
	Hashes Hashes
	// Metadata describes the verifier run.
	Metadata Metadata
	// TaskID and TaskType, when set, are written at the top level.
	TaskID, TaskType string
	// AgentID, when set, is written as top-level agent_id.
	AgentID string
	// Chain, when set, links the receipt to the agent's previous one.
	Chain *ChainLink
}

// Detail is one check of a Draft: results.details[i].
type Detail struct {
	// Name identifies the check.
	Name string
	// Status is pass, fail, error or timeout.
	Status string
	// DurationMS is the check's run time, written as a float.
	DurationMS float64
	// Output and Error are written when non-empty.
	Output, Error string
}

// Hashes are a Draft's hashes in the reference names. Input, Output and
// Suite are required; an empty Environment is written as null (the
// reference does so for tier 1).
type Hashes struct {
	// Input is hashes.input_hash: the task specification or input.
	Input string
	// Output is hashes.output_hash: the work that was verified.
	Output string
	// Suite is hashes.suite_hash: the test suite or check definitions.
	Suite string
	// Environment is hashes.environment_hash, null when empty.
	Environment string
}

// Metadata is a Draft's metadata. Language and Runtime are written when
// non-empty.
type Metadata struct {
	// VerifierVersion names the verifier software; empty means
	// DefaultVerifierVersion.
	VerifierVersion string
	// ExecutionMS is the whole verification's run time, written as a float.
	ExecutionMS float64
	// Sandboxed reports whether the checks ran in a sandbox.
	Sandboxed bool
	// Language and Runtime describe the verified code ("python",
	// "python3.12").
	Language, Runtime string
}

// ChainLink places a receipt in an agent's receipt chain:
// metadata.previous_receipt (omitted when empty, for the first receipt)
// and metadata.chain_position.
type ChainLink struct {
	// PreviousReceipt is the receipt_id of the agent's previous receipt,
	// empty for the first.
	PreviousReceipt string
	// Position is the receipt's place in the chain, from 0.
	Position int64
}

// Build returns the receipt document in the reference key order with
// results counts and verdict derived from Details. The document is checked
// as Parse would check it; a Draft that breaks the schema yields an error
// wrapping codec.ErrMalformed.
func (d Draft) Build() (canonjson.Value, error) {
	id := d.ReceiptID
	if id == "" {
		u, err := uuid.NewRandom()
		if err != nil {
			return canonjson.Value{}, fmt.Errorf("vrf: draft: receipt_id: %w", err)
		}
		id = u.String()
	}
	at := d.VerifiedAt
	if at.IsZero() {
		at = time.Now()
	}
	if !finite(d.Metadata.ExecutionMS) {
		return canonjson.Value{}, fmt.Errorf("vrf: draft: metadata.execution_ms is %v, want a finite number: %w", d.Metadata.ExecutionMS, codec.ErrMalformed)
	}
	for i, dt := range d.Details {
		if !finite(dt.DurationMS) {
			return canonjson.Value{}, fmt.Errorf("vrf: draft: results.details[%d].duration_ms is %v, want a finite number: %w", i, dt.DurationMS, codec.ErrMalformed)
		}
	}
	type m = canonjson.Member
	str := canonjson.MakeString

	var counts Counts
	details := make([]canonjson.Value, 0, len(d.Details))
	for _, dt := range d.Details {
		counts.Total++
		switch dt.Status {
		case StatusPass:
			counts.Passed++
		case StatusFail:
			counts.Failed++
		case StatusError, StatusTimeout:
			counts.Errors++
		}
		item := []m{
			{Key: "name", Value: str(dt.Name)},
			{Key: "status", Value: str(dt.Status)},
			{Key: "duration_ms", Value: canonjson.MakeFloat(dt.DurationMS)},
		}
		if dt.Output != "" {
			item = append(item, m{Key: "output", Value: str(dt.Output)})
		}
		if dt.Error != "" {
			item = append(item, m{Key: "error", Value: str(dt.Error)})
		}
		details = append(details, canonjson.MakeObject(item...))
	}

	env := canonjson.MakeNull()
	if d.Hashes.Environment != "" {
		env = str(d.Hashes.Environment)
	}
	verifier := d.Metadata.VerifierVersion
	if verifier == "" {
		verifier = DefaultVerifierVersion
	}
	meta := []m{
		{Key: "verifier_version", Value: str(verifier)},
		{Key: "execution_ms", Value: canonjson.MakeFloat(d.Metadata.ExecutionMS)},
		{Key: "sandboxed", Value: canonjson.MakeBool(d.Metadata.Sandboxed)},
	}
	if d.Metadata.Language != "" {
		meta = append(meta, m{Key: "language", Value: str(d.Metadata.Language)})
	}
	if d.Metadata.Runtime != "" {
		meta = append(meta, m{Key: "runtime", Value: str(d.Metadata.Runtime)})
	}
	if d.Chain != nil {
		if d.Chain.PreviousReceipt != "" {
			meta = append(meta, m{Key: "previous_receipt", Value: str(d.Chain.PreviousReceipt)})
		}
		meta = append(meta, m{Key: "chain_position", Value: canonjson.MakeInt(d.Chain.Position)})
	}

	top := []m{
		{Key: "vrf_version", Value: str(Version)},
		{Key: "receipt_id", Value: str(id)},
		{Key: "verified_at", Value: str(formatVerifiedAt(at))},
		{Key: "tier", Value: canonjson.MakeInt(int64(d.Tier))},
		{Key: "verdict", Value: str(counts.ExpectedVerdict())},
		{Key: "results", Value: canonjson.MakeObject(
			m{Key: "total", Value: canonjson.MakeInt(counts.Total)},
			m{Key: "passed", Value: canonjson.MakeInt(counts.Passed)},
			m{Key: "failed", Value: canonjson.MakeInt(counts.Failed)},
			m{Key: "errors", Value: canonjson.MakeInt(counts.Errors)},
			m{Key: "details", Value: canonjson.MakeArray(details...)},
		)},
		{Key: "hashes", Value: canonjson.MakeObject(
			m{Key: "input_hash", Value: str(d.Hashes.Input)},
			m{Key: "output_hash", Value: str(d.Hashes.Output)},
			m{Key: "suite_hash", Value: str(d.Hashes.Suite)},
			m{Key: "environment_hash", Value: env},
			m{Key: "algorithm", Value: str("sha256")},
		)},
		{Key: "metadata", Value: canonjson.MakeObject(meta...)},
	}
	if d.TaskID != "" {
		top = append(top, m{Key: "task_id", Value: str(d.TaskID)})
	}
	if d.TaskType != "" {
		top = append(top, m{Key: "task_type", Value: str(d.TaskType)})
	}
	if d.AgentID != "" {
		top = append(top, m{Key: "agent_id", Value: str(d.AgentID)})
	}
	doc := canonjson.MakeObject(top...)
	if _, err := FromValue(doc); err != nil {
		return canonjson.Value{}, fmt.Errorf("vrf: draft: %w", err)
	}
	return doc, nil
}
