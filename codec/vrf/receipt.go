package vrf

import (
	"crypto/ed25519"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// Version is the only vrf_version this package reads and writes.
const Version = "1.0"

// The verdicts a receipt may carry.
const (
	VerdictPass    = "pass"
	VerdictFail    = "fail"
	VerdictPartial = "partial"
	VerdictError   = "error"
)

// The statuses a results.details item may carry. StatusTimeout is the
// reference implementation's addition; it counts as an error.
const (
	StatusPass    = "pass"
	StatusFail    = "fail"
	StatusError   = "error"
	StatusTimeout = "timeout"
)

// Counts are a receipt's results totals as written in the receipt.
type Counts struct {
	// Total is results.total: the number of checks.
	Total int64 `json:"total"`
	// Passed is results.passed: checks with status pass.
	Passed int64 `json:"passed"`
	// Failed is results.failed: checks with status fail.
	Failed int64 `json:"failed"`
	// Errors is results.errors: checks with status error or timeout.
	Errors int64 `json:"errors"`
}

// ExpectedVerdict returns the verdict the reference implementation derives
// from the counts: "error" when any check errored, else "fail" when checks
// failed and none passed, "partial" when some passed and some failed, and
// "pass" otherwise (including when there were no checks at all).
func (c Counts) ExpectedVerdict() string {
	switch {
	case c.Errors > 0:
		return VerdictError
	case c.Failed > 0 && c.Passed == 0:
		return VerdictFail
	case c.Failed > 0:
		return VerdictPartial
	}
	return VerdictPass
}

// String renders the counts as "3/3 passed, 0 failed, 0 errors".
func (c Counts) String() string {
	return fmt.Sprintf("%d/%d passed, %d failed, %d errors", c.Passed, c.Total, c.Failed, c.Errors)
}

// canonicalization names the canonical JSON flavour whose hash matched the
// receipt's content_hash.
type canonicalization uint8

const (
	canonNone  canonicalization = iota // no flavour matched
	canonASCII                         // json.dumps default, ensure_ascii=True (reference)
	canonUTF8                          // ensure_ascii=False, raw UTF-8 (spec text reading)
)

func (c canonicalization) String() string {
	switch c {
	case canonASCII:
		return "python json.dumps, ensure_ascii=True (reference)"
	case canonUTF8:
		return "python json.dumps, ensure_ascii=False (raw UTF-8)"
	}
	return "none matched"
}

// signerForm names the spelling of signature.signer_id.
type signerForm uint8

const (
	signerUnknown    signerForm = iota
	signerHex                   // "ed25519:" + hex, the reference spelling
	signerRawBase64             // base64 of the 32 raw key bytes
	signerSPKIBase64            // base64 of a DER SubjectPublicKeyInfo, the spec example
)

func (f signerForm) String() string {
	switch f {
	case signerHex:
		return `"ed25519:" + hex (reference)`
	case signerRawBase64:
		return "base64 of the raw 32-byte key"
	case signerSPKIBase64:
		return "base64 of a DER SubjectPublicKeyInfo (spec example)"
	}
	return "unreadable"
}

// signature is the decoded signature object. Every field is filled by
// Parse: the key and the signature bytes are decoded and the content hash
// compared once there, so that Verify only checks one Ed25519 signature.
type signature struct {
	signerID    string // as written
	contentHash string // as written
	sigHex      string // as written

	key       ed25519.PublicKey // nil when signer_id is unreadable; else a slice of keyBuf
	keyForm   signerForm
	keyReason string // why signer_id is unreadable

	sig       []byte // nil when the signature is not 64 bytes of hex; else a slice of sigBuf
	sigReason string

	keyBuf [ed25519.PublicKeySize]byte
	sigBuf [ed25519.SignatureSize]byte

	// Outcome of comparing content_hash with the recomputed hashes.
	matched  canonicalization
	utf8Hash string // hex SHA-256 of the ensure_ascii=False form, when it was tried
}

// Receipt is a parsed, schema-checked VRF receipt. It is immutable: every
// method may be called concurrently.
type Receipt struct {
	value canonjson.Value
	form  codec.Form

	id         string // lower-case
	idUpper    bool   // receipt_id was written with upper-case hex
	verifiedAt time.Time
	tier       int
	verdict    string
	counts     Counts
	details    Counts // what results.details adds up to (Total = len(details))

	taskID, taskType string
	agentID          string
	previous         string // lower-case, "" when none
	chainPosition    int64
	hasPosition      bool

	contentHash string     // hex SHA-256 of the canonical receipt without "signature"
	sig         *signature // nil when unsigned
}

// ID returns the receipt_id in lower case (UUIDs compare case-insensitively;
// the receipt's own bytes keep the case it was written in).
func (r *Receipt) ID() string { return r.id }

// Form reports whether the receipt uses the spec-text or the reference
// encoding.
func (r *Receipt) Form() codec.Form { return r.form }

// Value returns the whole receipt as parsed. Its slices must not be
// modified.
func (r *Receipt) Value() canonjson.Value { return r.value }

// VerifiedAt returns verified_at in UTC.
func (r *Receipt) VerifiedAt() time.Time { return r.verifiedAt }

// Tier returns the verification tier (0 to 3).
func (r *Receipt) Tier() int { return r.tier }

// Verdict returns the verdict as written: pass, fail, partial or error.
func (r *Receipt) Verdict() string { return r.verdict }

// Counts returns results.total, passed, failed and errors as written.
func (r *Receipt) Counts() Counts { return r.counts }

// TaskID returns the task identifier (top-level task_id in the reference
// form, task.task_id in the spec form), or "" when there is none.
func (r *Receipt) TaskID() string { return r.taskID }

// TaskType returns the task type (top-level task_type or task.task_type),
// or "" when there is none.
func (r *Receipt) TaskType() string { return r.taskType }

// AgentID returns the agent the receipt speaks for: top-level agent_id,
// else metadata.agent_id, else "".
func (r *Receipt) AgentID() string { return r.agentID }

// PreviousReceipt returns metadata.previous_receipt in lower case, or ""
// when the receipt does not link to a previous one.
func (r *Receipt) PreviousReceipt() string { return r.previous }

// ChainPosition returns metadata.chain_position and whether it is present.
func (r *Receipt) ChainPosition() (int64, bool) { return r.chainPosition, r.hasPosition }

// Signed reports whether the receipt carries a signature object.
func (r *Receipt) Signed() bool { return r.sig != nil }

// Signer returns the signing key as "ed25519:" + 64 lower-case hex digits
// whatever spelling signer_id used, or "" when the receipt is unsigned or
// its signer_id cannot be read as an Ed25519 key.
func (r *Receipt) Signer() string {
	if r.sig == nil || r.sig.key == nil {
		return ""
	}
	return signerIDHex(r.sig.key)
}

// SignerKey returns a copy of the signing key, or nil when the receipt is
// unsigned or its signer_id cannot be read.
func (r *Receipt) SignerKey() ed25519.PublicKey {
	if r.sig == nil || r.sig.key == nil {
		return nil
	}
	return slices.Clone(r.sig.key)
}

// ContentHash returns the lower-case hex SHA-256 of the canonical JSON
// (ensure_ascii=True) of the receipt without its signature: the value a
// reference signer writes into signature.content_hash. It is defined for
// unsigned receipts too.
func (r *Receipt) ContentHash() string { return r.contentHash }

// Summary returns the kind-independent view of the receipt. Signature
// checking is part of Verify; Summary reports SignatureChecked = Signed
// because a caller that verifies always checks a present signature.
func (r *Receipt) Summary() codec.Summary {
	s := codec.Summary{
		Kind:             codec.KindVRF,
		Form:             r.form,
		ID:               r.id,
		Signed:           r.Signed(),
		SignatureChecked: r.Signed(),
		Signer:           r.Signer(),
		Subject:          r.agentID,
		Time:             r.verifiedAt,
	}
	add := func(label, value string) { s.Facts = append(s.Facts, codec.Fact{Label: label, Value: value}) }
	add("verdict", r.verdict)
	add("tier", strconv.Itoa(r.tier))
	add("results", r.counts.String())
	add("task", describeTask(r.taskID, r.taskType))
	add("agent", orNone(r.agentID))
	switch {
	case r.previous != "" && r.hasPosition:
		add("chain", fmt.Sprintf("previous %s at position %d", r.previous, r.chainPosition))
	case r.hasPosition:
		add("chain", fmt.Sprintf("position %d, no previous receipt", r.chainPosition))
	}
	if r.idUpper {
		add("receipt id", "written in upper-case hex, reported in lower case")
	}
	add("content hash", r.contentHash)
	if r.sig != nil {
		add("canonicalization", r.sig.matched.String())
		add("signer id", r.sig.keyForm.String())
	}
	return s
}

func describeTask(id, typ string) string {
	switch {
	case id != "" && typ != "":
		return id + " (" + typ + ")"
	case id != "":
		return id
	case typ != "":
		return "(" + typ + ")"
	}
	return "none"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
