package codec

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind names a document kind.
type Kind string

// The document kinds the ledger understands.
const (
	KindVRF             Kind = "vrf"
	KindAVIRAttestation Kind = "avir-attestation"
	KindAVIRSpec        Kind = "avir-spec"
	KindRVWW            Kind = "rvww"
)

// Form says which of a kind's encodings a document used: the one its
// specification text describes, or the one its public reference
// implementation emits. Kinds with a single encoding leave it empty.
type Form string

// The two forms.
const (
	FormSpec      Form = "spec"
	FormReference Form = "reference"
)

// Sentinel errors that callers branch on with errors.Is.
var (
	// ErrMalformed: the input cannot be parsed, or it parses but breaks the
	// kind's schema (a missing required field, a wrong type, a bad enum).
	ErrMalformed = errors.New("malformed document")
	// ErrInvalid: the input is well formed but fails verification (a hash,
	// signature, recomputed verdict or governance check disagrees).
	ErrInvalid = errors.New("verification failed")
)

// Finding is one named problem with a document. Code is a stable,
// machine-readable name (for example "content_hash_mismatch"); Field is a
// dotted JSON path ("metadata.chain_position") or a binary field name
// ("header.total_bundle_size"); Offset is the byte offset in the input where
// the problem sits, or -1 when it is not tied to one place.
type Finding struct {
	Code   string `json:"code"`
	Field  string `json:"field,omitempty"`
	Offset int64  `json:"offset"`
	Reason string `json:"reason"`
}

// NoOffset marks a Finding that is not tied to a byte offset.
const NoOffset = -1

// String renders the finding on one line: "offset 60: header.total_bundle_size: reason".
func (f Finding) String() string {
	var b strings.Builder
	if f.Offset >= 0 {
		fmt.Fprintf(&b, "offset %d: ", f.Offset)
	}
	if f.Field != "" {
		b.WriteString(f.Field)
		b.WriteString(": ")
	}
	b.WriteString(f.Reason)
	return b.String()
}

// Malformed builds a Finding with code "malformed" for schema and syntax problems.
func Malformed(field string, offset int64, format string, args ...any) Finding {
	return Finding{Code: "malformed", Field: field, Offset: offset, Reason: fmt.Sprintf(format, args...)}
}

// MalformedError reports every schema or syntax problem found in a document.
// It wraps ErrMalformed.
type MalformedError struct {
	Findings []Finding
}

// Error joins the findings with "; ".
func (e *MalformedError) Error() string { return joinFindings(e.Findings) }

// Unwrap returns ErrMalformed.
func (e *MalformedError) Unwrap() error { return ErrMalformed }

// InvalidError reports every verification failure of a well-formed document.
// It wraps ErrInvalid.
type InvalidError struct {
	Findings []Finding
}

// Error joins the findings with "; ".
func (e *InvalidError) Error() string { return joinFindings(e.Findings) }

// Unwrap returns ErrInvalid.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

func joinFindings(fs []Finding) string {
	if len(fs) == 0 {
		return "no findings"
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// AsMalformed returns a *MalformedError for fs, or nil when fs is empty.
func AsMalformed(fs []Finding) error {
	if len(fs) == 0 {
		return nil
	}
	return &MalformedError{Findings: fs}
}

// AsInvalid returns an *InvalidError for fs, or nil when fs is empty.
func AsInvalid(fs []Finding) error {
	if len(fs) == 0 {
		return nil
	}
	return &InvalidError{Findings: fs}
}

// FindingsOf returns the findings carried by a MalformedError or
// InvalidError anywhere in err's chain, or a single finding with err's
// message when err carries none.
func FindingsOf(err error) []Finding {
	if err == nil {
		return nil
	}
	var m *MalformedError
	if errors.As(err, &m) {
		return m.Findings
	}
	var inv *InvalidError
	if errors.As(err, &inv) {
		return inv.Findings
	}
	return []Finding{{Code: "error", Offset: NoOffset, Reason: err.Error()}}
}

// Fact is one labelled line of a document's human-readable report.
type Fact struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// Summary is the kind-independent view of a decoded document that the CLI
// prints and the ledger indexes.
type Summary struct {
	Kind Kind
	Form Form
	// ID is the document's own identifier: a VRF receipt_id, an AVIR
	// chain_hash, an RVWW task id (hex or UUID form), an AVIR spec hash.
	ID string
	// Signed reports whether the document carries a signature at all.
	Signed bool
	// SignatureChecked reports whether a present signature was actually
	// verified (false for an HMAC-signed bundle when no key was supplied).
	SignatureChecked bool
	// Signer names who signed: an Ed25519 key as "ed25519:<hex>", or the name
	// of the HMAC key that verified a bundle.
	Signer string
	// Subject is who or what the document speaks about: an agent, an AVIR
	// system ("name vX.Y.Z"), an RVWW task.
	Subject string
	// Time is the document's own time (verified_at, completion timestamp,
	// created_ns); zero when it has none.
	Time time.Time
	// Facts are kind-specific report lines in display order.
	Facts []Fact
}
