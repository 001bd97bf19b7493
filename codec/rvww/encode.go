package rvww

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// ErrUnencodable is wrapped by Encode's errors: the bundle's content does
// not fit the wire format, or would not decode back to the same content.
var ErrUnencodable = errors.New("rvww: bundle cannot be encoded")

// Encode writes b exactly as the reference builder does (rvf-runtime
// WitnessBuilder::build / build_and_sign): the header, then the present
// sections in the order SPEC, PLAN, TRACE, DIFF, TEST_LOG, POSTMORTEM with
// TRACE only when there are calls, then b.Unknown in order, then, when key
// is not nil, the HMAC-SHA256 under key of everything before it. A non-nil
// empty key signs with the empty key.
//
// Encode reads the identity fields of b.Header (TaskID, PolicyHash,
// CreatedNS, Outcome, Mode, RetryCount) and derives the rest as the
// reference does: version 1, the flags from the sections present and the
// key, tool_call_count, the saturating u32 totals of cost, latency and
// tokens over the calls, section_count and total_bundle_size. Each call is
// written with its recorded PolicyCheck; Index and Offset are ignored. So
// Decode(Encode(b)) has b's content, and re-encoding a decoded reference
// bundle with its key reproduces its bytes.
//
// Encode refuses, wrapping ErrUnencodable, what Decode would reject or the
// format cannot hold: more than 65535 calls, an action longer than 65535
// bytes or not valid UTF-8, a PolicyCheck above 2, an unknown section with
// a known tag, or a bundle larger than 4 GiB.
func Encode(b *Bundle, key []byte) ([]byte, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: nil bundle", ErrUnencodable)
	}
	if len(b.Calls) > MaxToolCalls {
		return nil, fmt.Errorf("%w: %d tool calls, at most %d fit tool_call_count", ErrUnencodable, len(b.Calls), MaxToolCalls)
	}
	traceLen := 0
	for i := range b.Calls {
		c := &b.Calls[i]
		if len(c.Action) > MaxActionLen {
			return nil, fmt.Errorf("%w: call %d: action is %d bytes, at most %d fit action_len", ErrUnencodable, i, len(c.Action), MaxActionLen)
		}
		if !utf8.ValidString(c.Action) {
			return nil, fmt.Errorf("%w: call %d: action is not valid UTF-8", ErrUnencodable, i)
		}
		if c.PolicyCheck > CheckConfirmed {
			return nil, fmt.Errorf("%w: call %d: policy check %d is not 0, 1 or 2", ErrUnencodable, i, c.PolicyCheck)
		}
		traceLen += ToolCallFixedSize + len(c.Action)
	}

	type part struct {
		tag   uint16
		value []byte
		trace bool
	}
	parts := make([]part, 0, 6+len(b.Unknown))
	var flags uint16
	addKnown := func(has bool, tag uint16, value []byte, trace bool) {
		if has {
			flag, _ := FlagFor(tag)
			flags |= flag
			parts = append(parts, part{tag: tag, value: value, trace: trace})
		}
	}
	addKnown(b.HasSpec, TagSpec, b.Spec, false)
	addKnown(b.HasPlan, TagPlan, b.Plan, false)
	addKnown(len(b.Calls) > 0, TagTrace, nil, true)
	addKnown(b.HasDiff, TagDiff, b.Diff, false)
	addKnown(b.HasTestLog, TagTestLog, b.TestLog, false)
	addKnown(b.HasPostmortem, TagPostmortem, b.Postmortem, false)
	for _, u := range b.Unknown {
		if isKnownTag(u.Tag) {
			return nil, fmt.Errorf("%w: unknown section with known tag %s", ErrUnencodable, TagName(u.Tag))
		}
		parts = append(parts, part{tag: u.Tag, value: u.Value})
	}
	if len(parts) > math.MaxUint16 {
		return nil, fmt.Errorf("%w: %d sections, at most %d fit section_count", ErrUnencodable, len(parts), math.MaxUint16)
	}

	total := uint64(HeaderSize)
	for _, p := range parts {
		n := uint64(len(p.value))
		if p.trace {
			n = uint64(traceLen)
		}
		if n > math.MaxUint32 {
			return nil, fmt.Errorf("%w: %s section is %d bytes, more than a u32 length", ErrUnencodable, TagName(p.tag), n)
		}
		total += SectionHeaderSize + n
	}
	if key != nil {
		flags |= FlagSigned
		total += SignatureSize
	}
	if total > math.MaxUint32 {
		return nil, fmt.Errorf("%w: bundle would be %d bytes, more than total_bundle_size can say", ErrUnencodable, total)
	}

	h := Header{
		Version:       Version,
		Flags:         flags,
		TaskID:        b.Header.TaskID,
		PolicyHash:    b.Header.PolicyHash,
		CreatedNS:     b.Header.CreatedNS,
		Outcome:       b.Header.Outcome,
		Mode:          b.Header.Mode,
		ToolCallCount: uint16(len(b.Calls)),
		RetryCount:    b.Header.RetryCount,
		SectionCount:  uint16(len(parts)),
		TotalSize:     uint32(total),
	}
	h.TotalCostMicrodollars, h.TotalLatencyMS, h.TotalTokens = b.TraceTotals()

	out := make([]byte, 0, total)
	out = appendHeader(out, &h)
	for _, p := range parts {
		out = binary.LittleEndian.AppendUint16(out, p.tag)
		if p.trace {
			out = binary.LittleEndian.AppendUint32(out, uint32(traceLen))
			for i := range b.Calls {
				out = appendCall(out, &b.Calls[i])
			}
			continue
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(len(p.value)))
		out = append(out, p.value...)
	}
	if key != nil {
		mac := hmac.New(sha256.New, key)
		mac.Write(out)
		out = mac.Sum(out)
	}
	return out, nil
}

func appendHeader(dst []byte, h *Header) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, Magic)
	dst = binary.LittleEndian.AppendUint16(dst, h.Version)
	dst = binary.LittleEndian.AppendUint16(dst, h.Flags)
	dst = append(dst, h.TaskID[:]...)
	dst = append(dst, h.PolicyHash[:]...)
	dst = binary.LittleEndian.AppendUint64(dst, h.CreatedNS)
	dst = append(dst, byte(h.Outcome), byte(h.Mode))
	dst = binary.LittleEndian.AppendUint16(dst, h.ToolCallCount)
	dst = binary.LittleEndian.AppendUint32(dst, h.TotalCostMicrodollars)
	dst = binary.LittleEndian.AppendUint32(dst, h.TotalLatencyMS)
	dst = binary.LittleEndian.AppendUint32(dst, h.TotalTokens)
	dst = binary.LittleEndian.AppendUint16(dst, h.RetryCount)
	dst = binary.LittleEndian.AppendUint16(dst, h.SectionCount)
	return binary.LittleEndian.AppendUint32(dst, h.TotalSize)
}

func appendCall(dst []byte, c *ToolCall) []byte {
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(c.Action)))
	dst = append(dst, byte(c.PolicyCheck), 0)
	dst = append(dst, c.ArgsHash[:]...)
	dst = append(dst, c.ResultHash[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, c.LatencyMS)
	dst = binary.LittleEndian.AppendUint32(dst, c.CostMicrodollars)
	dst = binary.LittleEndian.AppendUint32(dst, c.Tokens)
	return append(dst, c.Action...)
}
