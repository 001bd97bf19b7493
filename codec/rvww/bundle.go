package rvww

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
)

// Wire-format constants.
const (
	// Magic is the header's first field, 0x52575657, stored little-endian as
	// the bytes 57 56 57 52 ("WVWR").
	Magic uint32 = 0x52575657
	// Version is the only header version this package reads and writes.
	Version uint16 = 1
	// HeaderSize is the size of the fixed header.
	HeaderSize = 64
	// SignatureSize is the size of the trailing HMAC-SHA256 of a signed bundle.
	SignatureSize = 32
	// SectionHeaderSize is the size of a TLV section header: tag u16, length u32.
	SectionHeaderSize = 6
	// ToolCallFixedSize is the size of a TRACE record before its action bytes.
	ToolCallFixedSize = 32
	// MaxActionLen is the longest action (tool name) a record can hold.
	MaxActionLen = 0xFFFF
	// MaxToolCalls is the most tool calls a header can count.
	MaxToolCalls = 0xFFFF
)

// Header flag bits: SIGNED, and one HAS_* bit per known section.
const (
	FlagSigned        uint16 = 0x0001
	FlagHasSpec       uint16 = 0x0002
	FlagHasPlan       uint16 = 0x0004
	FlagHasTrace      uint16 = 0x0008
	FlagHasDiff       uint16 = 0x0010
	FlagHasTestLog    uint16 = 0x0020
	FlagHasPostmortem uint16 = 0x0040
	// KnownFlags is the union of every defined flag bit; any other bit set
	// makes a bundle malformed.
	KnownFlags uint16 = 0x007F
)

// Section tags. Tags 1 to 6 are known; any other tag is kept in
// Bundle.Unknown and otherwise ignored.
const (
	TagSpec       uint16 = 0x0001
	TagPlan       uint16 = 0x0002
	TagTrace      uint16 = 0x0003
	TagDiff       uint16 = 0x0004
	TagTestLog    uint16 = 0x0005
	TagPostmortem uint16 = 0x0006
)

// TagName returns the ADR-035 name of a known tag ("SPEC", "TRACE", ...) or
// "tag 0xNNNN" for any other tag.
func TagName(tag uint16) string {
	switch tag {
	case TagSpec:
		return "SPEC"
	case TagPlan:
		return "PLAN"
	case TagTrace:
		return "TRACE"
	case TagDiff:
		return "DIFF"
	case TagTestLog:
		return "TEST_LOG"
	case TagPostmortem:
		return "POSTMORTEM"
	}
	return fmt.Sprintf("tag 0x%04x", tag)
}

// FlagFor returns the HAS_* flag bit of a known tag and its name, or 0 and
// "" for an unknown tag.
func FlagFor(tag uint16) (uint16, string) {
	switch tag {
	case TagSpec:
		return FlagHasSpec, "HAS_SPEC"
	case TagPlan:
		return FlagHasPlan, "HAS_PLAN"
	case TagTrace:
		return FlagHasTrace, "HAS_TRACE"
	case TagDiff:
		return FlagHasDiff, "HAS_DIFF"
	case TagTestLog:
		return FlagHasTestLog, "HAS_TEST_LOG"
	case TagPostmortem:
		return FlagHasPostmortem, "HAS_POSTMORTEM"
	}
	return 0, ""
}

func isKnownTag(tag uint16) bool { return tag >= TagSpec && tag <= TagPostmortem }

// Outcome is the header's task outcome byte. Values outside the four
// defined ones are kept as read; the scorecard counts them as errors.
type Outcome uint8

// The defined outcomes.
const (
	OutcomeSolved  Outcome = 0
	OutcomeFailed  Outcome = 1
	OutcomeSkipped Outcome = 2
	OutcomeErrored Outcome = 3
)

// Known reports whether o is one of the four defined outcomes.
func (o Outcome) Known() bool { return o <= OutcomeErrored }

// String returns "solved", "failed", "skipped", "errored" or "unknown(N)".
func (o Outcome) String() string {
	switch o {
	case OutcomeSolved:
		return "solved"
	case OutcomeFailed:
		return "failed"
	case OutcomeSkipped:
		return "skipped"
	case OutcomeErrored:
		return "errored"
	}
	return "unknown(" + strconv.Itoa(int(o)) + ")"
}

// Mode is the header's governance_mode byte. Values outside the three
// defined ones are kept as read.
type Mode uint8

// The defined governance modes.
const (
	ModeRestricted Mode = 0
	ModeApproved   Mode = 1
	ModeAutonomous Mode = 2
)

// Known reports whether m is one of the three defined modes.
func (m Mode) Known() bool { return m <= ModeAutonomous }

// String returns "restricted", "approved", "autonomous" or "unknown(N)".
func (m Mode) String() string {
	switch m {
	case ModeRestricted:
		return "restricted"
	case ModeApproved:
		return "approved"
	case ModeAutonomous:
		return "autonomous"
	}
	return "unknown(" + strconv.Itoa(int(m)) + ")"
}

// PolicyCheck is the decision a producer recorded for one tool call.
type PolicyCheck uint8

// The defined decisions. Decode rejects any other value.
const (
	CheckAllowed   PolicyCheck = 0
	CheckDenied    PolicyCheck = 1
	CheckConfirmed PolicyCheck = 2
)

// String returns "allowed", "denied", "confirmed" or "unknown(N)".
func (c PolicyCheck) String() string {
	switch c {
	case CheckAllowed:
		return "allowed"
	case CheckDenied:
		return "denied"
	case CheckConfirmed:
		return "confirmed"
	}
	return "unknown(" + strconv.Itoa(int(c)) + ")"
}

// DefaultPolicyName returns "restricted", "approved" or "autonomous" when
// hash is the policy hash of that ADR-035 default policy, and "" otherwise.
// (codec/governance computes these hashes; its tests pin the same values.)
func DefaultPolicyName(hash [8]byte) string {
	switch hash {
	case [8]byte{0x66, 0xfb, 0x83, 0x6f, 0xa3, 0x7e, 0x48, 0xef}:
		return "restricted"
	case [8]byte{0x37, 0x17, 0x43, 0x86, 0xed, 0x33, 0x65, 0x28}:
		return "approved"
	case [8]byte{0xf9, 0x21, 0x0e, 0xe4, 0x85, 0x6f, 0xf1, 0xe0}:
		return "autonomous"
	}
	return ""
}

// Header is the 64-byte bundle header, field by field (all integers
// little-endian on the wire; the magic is implied).
type Header struct {
	Version    uint16   // 0x04: always 1
	Flags      uint16   // 0x06: FlagSigned | FlagHas* bits
	TaskID     [16]byte // 0x08: a UUID, or any 16 bytes
	PolicyHash [8]byte  // 0x18: first 8 bytes of SHA-256 of the policy's hash input
	CreatedNS  uint64   // 0x20: UNIX time in nanoseconds
	Outcome    Outcome  // 0x28
	Mode       Mode     // 0x29: governance_mode
	// ToolCallCount (0x2A) is the number of TRACE records.
	ToolCallCount uint16
	// TotalCostMicrodollars (0x2C), TotalLatencyMS (0x30) and TotalTokens
	// (0x34) are saturating sums over the calls (latency is not wall-clock
	// time).
	TotalCostMicrodollars uint32
	TotalLatencyMS        uint32
	TotalTokens           uint32
	RetryCount            uint16 // 0x38
	SectionCount          uint16 // 0x3A: number of TLV sections, unknown tags included
	TotalSize             uint32 // 0x3C: total_bundle_size, signature included
}

// Byte offsets of the header fields, used in findings.
const (
	offMagic         = 0x00
	offVersion       = 0x04
	offFlags         = 0x06
	offTaskID        = 0x08
	offPolicyHash    = 0x18
	offCreatedNS     = 0x20
	offOutcome       = 0x28
	offMode          = 0x29
	offToolCallCount = 0x2A
	offTotalCost     = 0x2C
	offTotalLatency  = 0x30
	offTotalTokens   = 0x34
	offRetryCount    = 0x38
	offSectionCount  = 0x3A
	offTotalSize     = 0x3C
)

// ToolCall is one TRACE record.
type ToolCall struct {
	// Index is the record's position in the trace, from 0.
	Index int
	// Action is the tool name (valid UTF-8).
	Action string
	// PolicyCheck is the decision the producer recorded.
	PolicyCheck PolicyCheck
	// ArgsHash and ResultHash are 8 opaque bytes chosen by the producer.
	ArgsHash, ResultHash [8]byte
	// LatencyMS, CostMicrodollars and Tokens are the call's own figures.
	LatencyMS        uint32
	CostMicrodollars uint32
	Tokens           uint32
	// Offset is the record's byte offset in the bundle (set by Decode).
	Offset int64
}

// Section is a TLV section with a tag this package does not know.
type Section struct {
	// Tag is the section's tag (not 1 to 6).
	Tag uint16
	// Offset is the byte offset of the section's tag in the bundle (set by
	// Decode).
	Offset int64
	// Length is the value's length as the section header states it.
	Length uint32
	// Value is the section's content.
	Value []byte
}

// Key is a named HMAC-SHA256 key: the raw secret bytes, any length.
type Key struct {
	// Name identifies the key in reports (Summary.Signer).
	Name string
	// Secret is the raw HMAC key.
	Secret []byte
}

// Bundle is a decoded witness bundle. A Bundle returned by Decode holds its
// own copy of the input; its byte slices point into that copy and must not
// be modified. To build a bundle for Encode, fill in the content fields (see
// Encode for which header fields it reads).
//
// Verify records its outcome in the Bundle (VerifiedKey, Summary), so a
// Bundle must not be verified from two goroutines at once.
type Bundle struct {
	Header Header

	// The known sections. A HasX flag reports that the section is present;
	// a present section may be empty.
	Spec, Plan, Diff, TestLog, Postmortem                []byte
	HasSpec, HasPlan, HasDiff, HasTestLog, HasPostmortem bool

	// Calls are the TRACE records in order; a bundle has a TRACE section
	// exactly when it has at least one call.
	Calls []ToolCall

	// Unknown holds the sections with tags other than 1 to 6, in wire order.
	Unknown []Section

	raw         []byte // the encoded bundle Decode read; nil for a built one
	verifiedKey string // name of the key that verified the HMAC
	sigChecked  bool   // the HMAC verified against a supplied key
}

// Signed reports whether the SIGNED flag is set.
func (b *Bundle) Signed() bool { return b.Header.Flags&FlagSigned != 0 }

// Signature returns the trailing 32-byte HMAC of a decoded signed bundle,
// or nil.
func (b *Bundle) Signature() []byte {
	if !b.Signed() || len(b.raw) < HeaderSize+SignatureSize {
		return nil
	}
	return b.raw[len(b.raw)-SignatureSize:]
}

// Bytes returns the encoded bundle Decode read, or nil for a bundle that
// was not decoded. The slice must not be modified.
func (b *Bundle) Bytes() []byte { return b.raw }

// EvidenceComplete reports whether the bundle holds SPEC, DIFF and TEST_LOG.
func (b *Bundle) EvidenceComplete() bool { return b.HasSpec && b.HasDiff && b.HasTestLog }

// OutcomeName returns the outcome's name, "unknown(N)" for an undefined byte.
func (b *Bundle) OutcomeName() string { return b.Header.Outcome.String() }

// ModeName returns the governance mode's name, "unknown(N)" for an
// undefined byte.
func (b *Bundle) ModeName() string { return b.Header.Mode.String() }

// TaskUUID returns the 16 task_id bytes as a lowercase 8-4-4-4-12 UUID
// string, whatever those bytes are.
func (b *Bundle) TaskUUID() string {
	var buf [36]byte
	id := b.Header.TaskID[:]
	hex.Encode(buf[0:8], id[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], id[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], id[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], id[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:36], id[10:16])
	return string(buf[:])
}

// TaskText returns the task_id as text when all 16 bytes are printable
// ASCII (as in the reference's own test vectors), and "" otherwise.
func (b *Bundle) TaskText() string {
	for _, c := range b.Header.TaskID {
		if c < 0x20 || c > 0x7e {
			return ""
		}
	}
	return string(b.Header.TaskID[:])
}

// ID returns the bundle's identifier: TaskUUID, "@", and created_ns in
// decimal. A task can have several bundles (retries, reruns); the creation
// time tells them apart.
func (b *Bundle) ID() string {
	return b.TaskUUID() + "@" + strconv.FormatUint(b.Header.CreatedNS, 10)
}

// CreatedAt returns created_ns as a UTC time. Every u64 value converts.
func (b *Bundle) CreatedAt() time.Time {
	ns := b.Header.CreatedNS
	return time.Unix(int64(ns/1e9), int64(ns%1e9)).UTC()
}

// VerifiedKey returns the name of the key that verified the HMAC in the
// last Verify call, or "".
func (b *Bundle) VerifiedKey() string { return b.verifiedKey }

// TraceTotals returns the saturating u32 sums of cost, latency and tokens
// over the calls: what the header totals must equal.
func (b *Bundle) TraceTotals() (cost, latency, tokens uint32) {
	for i := range b.Calls {
		c := &b.Calls[i]
		cost = satAdd(cost, c.CostMicrodollars)
		latency = satAdd(latency, c.LatencyMS)
		tokens = satAdd(tokens, c.Tokens)
	}
	return cost, latency, tokens
}

func satAdd(a, b uint32) uint32 {
	if s := a + b; s >= a {
		return s
	}
	return ^uint32(0)
}

// SectionNames lists the sections present in reference order, then unknown
// tags in wire order: "SPEC", "PLAN", "TRACE", ..., "tag 0x0007".
func (b *Bundle) SectionNames() []string {
	var names []string
	for _, s := range []struct {
		has bool
		tag uint16
	}{
		{b.HasSpec, TagSpec}, {b.HasPlan, TagPlan}, {len(b.Calls) > 0, TagTrace},
		{b.HasDiff, TagDiff}, {b.HasTestLog, TagTestLog}, {b.HasPostmortem, TagPostmortem},
	} {
		if s.has {
			names = append(names, TagName(s.tag))
		}
	}
	for _, u := range b.Unknown {
		names = append(names, TagName(u.Tag))
	}
	return names
}
