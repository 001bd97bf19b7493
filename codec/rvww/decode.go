package rvww

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/proofledger/ledger/codec"
)

// maxFindings bounds the findings one Decode reports, so that a hostile
// input cannot make the error itself large.
const maxFindings = 100

// Decode reads one witness bundle. It returns a *codec.MalformedError
// listing every structural problem it found, each with the field name and
// the byte offset; it reads nothing it has not checked fits in data, and it
// allocates at most a copy of data plus the decoded records.
//
// Decode stops at the first problem that makes the rest unreadable (input
// shorter than the header, wrong magic, unknown version, a section or trace
// record running past its end) and otherwise reports every problem. It
// skips the cross-checks of section_count, the HAS_* flags and
// tool_call_count when the sections could not all be read, since those
// would only repeat the first finding.
//
// Where ADR-035 leaves room, Decode decides:
//   - the record pad byte must be 0 (the reference always writes 0; any
//     other value would be a second encoding of the same content);
//   - a policy_check byte above 2 is malformed (the reference's own record
//     parser rejects it too);
//   - sections may appear in any order (Encode writes the reference order);
//   - repeated unknown tags are kept, repeated known tags are malformed;
//   - outcome and governance_mode bytes outside their enums are kept.
func Decode(data []byte) (*Bundle, error) {
	d := decoder{}
	b := d.decode(data)
	if err := codec.AsMalformed(d.findings); err != nil {
		return nil, err
	}
	return b, nil
}

type decoder struct {
	findings []codec.Finding
	dropped  int
}

func (d *decoder) add(field string, offset int64, format string, args ...any) {
	if len(d.findings) >= maxFindings {
		d.dropped++
		return
	}
	d.findings = append(d.findings, codec.Malformed(field, offset, format, args...))
}

func (d *decoder) finish() {
	if d.dropped > 0 {
		d.findings = append(d.findings, codec.Malformed("", codec.NoOffset,
			"%d more problems not listed (stopped after %d)", d.dropped, maxFindings))
	}
}

func parseHeader(p []byte) Header {
	var h Header
	h.Version = binary.LittleEndian.Uint16(p[offVersion:])
	h.Flags = binary.LittleEndian.Uint16(p[offFlags:])
	copy(h.TaskID[:], p[offTaskID:offTaskID+16])
	copy(h.PolicyHash[:], p[offPolicyHash:offPolicyHash+8])
	h.CreatedNS = binary.LittleEndian.Uint64(p[offCreatedNS:])
	h.Outcome = Outcome(p[offOutcome])
	h.Mode = Mode(p[offMode])
	h.ToolCallCount = binary.LittleEndian.Uint16(p[offToolCallCount:])
	h.TotalCostMicrodollars = binary.LittleEndian.Uint32(p[offTotalCost:])
	h.TotalLatencyMS = binary.LittleEndian.Uint32(p[offTotalLatency:])
	h.TotalTokens = binary.LittleEndian.Uint32(p[offTotalTokens:])
	h.RetryCount = binary.LittleEndian.Uint16(p[offRetryCount:])
	h.SectionCount = binary.LittleEndian.Uint16(p[offSectionCount:])
	h.TotalSize = binary.LittleEndian.Uint32(p[offTotalSize:])
	return h
}

func (d *decoder) decode(input []byte) *Bundle {
	defer d.finish()
	have := int64(len(input))
	if have < HeaderSize {
		d.add("header", have, "input is %d bytes, shorter than the %d-byte header", have, HeaderSize)
		return nil
	}
	if binary.LittleEndian.Uint32(input) != Magic {
		d.add("header.magic", offMagic, "want bytes 57 56 57 52 (0x%08x little-endian), got % x", Magic, input[:4])
		return nil
	}
	h := parseHeader(input)
	if h.Version != Version {
		d.add("header.version", offVersion, "want %d, got %d", Version, h.Version)
		return nil
	}
	if extra := h.Flags &^ KnownFlags; extra != 0 {
		d.add("header.flags", offFlags, "unknown flag bits 0x%04x set (defined bits: 0x%04x)", extra, KnownFlags)
	}

	declared := int64(h.TotalSize)
	switch {
	case declared < HeaderSize:
		d.add("header.total_bundle_size", offTotalSize, "header says %d bytes, less than the %d-byte header itself", declared, HeaderSize)
	case declared < have:
		d.add("header.total_bundle_size", offTotalSize, "header says %d bytes, have %d: trailing %d bytes", declared, have, have-declared)
	case declared > have:
		d.add("header.total_bundle_size", offTotalSize, "truncated: header says %d bytes, have %d", declared, have)
	}
	signed := h.Flags&FlagSigned != 0
	if signed && declared >= HeaderSize && declared < HeaderSize+SignatureSize {
		d.add("header.total_bundle_size", offTotalSize,
			"SIGNED flag is set but the bundle is %d bytes, shorter than the %d-byte header plus the %d-byte signature",
			declared, HeaderSize, SignatureSize)
	}
	if declared < HeaderSize || (signed && declared < HeaderSize+SignatureSize) {
		return nil
	}

	// One copy: the Bundle owns its bytes and never aliases the caller's.
	data := bytes.Clone(input[:min(declared, have)])
	b := &Bundle{Header: h, raw: data}

	secEnd, endName := declared, "the sections end"
	if signed {
		secEnd -= SignatureSize
		endName = "the start of the signature"
	}
	if secEnd > have {
		secEnd, endName = have, "the end of the input"
	}

	complete, trace, traceOff := d.sections(b, data, secEnd, endName)
	if !complete {
		return b
	}
	if trace != nil && len(trace) == 0 {
		d.add("trace", traceOff, "empty TRACE section: the reference writes TRACE only when there is at least one tool call")
		return b
	}
	if !d.trace(b, trace, traceOff+SectionHeaderSize) {
		return b
	}
	switch got := len(b.Calls); {
	case got == int(h.ToolCallCount):
	case trace == nil:
		d.add("header.tool_call_count", offToolCallCount, "header says %d, but there is no TRACE section", h.ToolCallCount)
	default:
		d.add("header.tool_call_count", offToolCallCount, "header says %d, TRACE holds %d tool call records", h.ToolCallCount, got)
	}
	return b
}

// sections walks the TLV sections in data[HeaderSize:secEnd], filling b. It
// reports whether every section was read, and returns the TRACE value (nil
// when absent) and the offset of its section header.
func (d *decoder) sections(b *Bundle, data []byte, secEnd int64, endName string) (complete bool, trace []byte, traceOff int64) {
	h := &b.Header
	var first [TagPostmortem + 1]int64 // offset of the first section with each known tag, or 0
	pos := int64(HeaderSize)
	count := 0
	for pos < secEnd {
		field := func(suffix string) string { return fmt.Sprintf("sections[%d]%s", count, suffix) }
		if secEnd-pos < SectionHeaderSize {
			d.add(field(""), pos, "%d bytes left before %s at offset %d, too few for a %d-byte section header",
				secEnd-pos, endName, secEnd, SectionHeaderSize)
			return false, nil, 0
		}
		tag := binary.LittleEndian.Uint16(data[pos:])
		length := int64(binary.LittleEndian.Uint32(data[pos+2:]))
		start := pos + SectionHeaderSize
		if length > secEnd-start {
			d.add(field(".length"), pos+2, "%s value of %d bytes at offset %d runs past %s at offset %d",
				TagName(tag), length, start, endName, secEnd)
			return false, nil, 0
		}
		value := data[start : start+length : start+length]
		if isKnownTag(tag) {
			if first[tag] != 0 {
				d.add(field(".tag"), pos, "duplicate %s section (the first is at offset %d)", TagName(tag), first[tag])
			} else {
				first[tag] = pos
				switch tag {
				case TagSpec:
					b.Spec, b.HasSpec = value, true
				case TagPlan:
					b.Plan, b.HasPlan = value, true
				case TagTrace:
					trace, traceOff = value, pos
				case TagDiff:
					b.Diff, b.HasDiff = value, true
				case TagTestLog:
					b.TestLog, b.HasTestLog = value, true
				case TagPostmortem:
					b.Postmortem, b.HasPostmortem = value, true
				}
			}
		} else {
			b.Unknown = append(b.Unknown, Section{Tag: tag, Offset: pos, Length: uint32(length), Value: value})
		}
		count++
		pos = start + length
	}

	if count != int(h.SectionCount) {
		d.add("header.section_count", offSectionCount, "header says %d, found %d sections", h.SectionCount, count)
	}
	for tag := TagSpec; tag <= TagPostmortem; tag++ {
		flag, flagName := FlagFor(tag)
		set := h.Flags&flag != 0
		switch present := first[tag] != 0; {
		case set && !present:
			d.add("header.flags", offFlags, "%s (0x%04x) is set but there is no %s section", flagName, flag, TagName(tag))
		case !set && present:
			d.add("header.flags", offFlags, "%s section at offset %d but %s (0x%04x) is not set", TagName(tag), first[tag], flagName, flag)
		}
	}
	return true, trace, traceOff
}

// trace parses the TRACE value, which starts at offset base of the bundle,
// into b.Calls. It reports whether the records tile the section exactly.
func (d *decoder) trace(b *Bundle, trace []byte, base int64) bool {
	if trace == nil {
		return true
	}
	// Every record takes at least ToolCallFixedSize bytes, so this bounds
	// the allocation by the input size.
	b.Calls = make([]ToolCall, 0, len(trace)/ToolCallFixedSize)
	end := base + int64(len(trace))
	for p, k := 0, 0; p < len(trace); k++ {
		off := base + int64(p)
		rest := trace[p:]
		if len(rest) < ToolCallFixedSize {
			d.add(fmt.Sprintf("trace[%d]", k), off, "%d bytes left in the TRACE section, a tool call record needs at least %d",
				len(rest), ToolCallFixedSize)
			return false
		}
		alen := int(binary.LittleEndian.Uint16(rest))
		if alen > len(rest)-ToolCallFixedSize {
			d.add(fmt.Sprintf("trace[%d].action_len", k), off, "action of %d bytes at offset %d runs past the TRACE section end at offset %d",
				alen, off+ToolCallFixedSize, end)
			return false
		}
		c := ToolCall{Index: k, PolicyCheck: PolicyCheck(rest[2]), Offset: off}
		if c.PolicyCheck > CheckConfirmed {
			d.add(fmt.Sprintf("trace[%d].policy_check", k), off+2, "want 0 (allowed), 1 (denied) or 2 (confirmed), got %d", rest[2])
		}
		if rest[3] != 0 {
			d.add(fmt.Sprintf("trace[%d].pad", k), off+3, "reserved pad byte must be 0, got 0x%02x", rest[3])
		}
		copy(c.ArgsHash[:], rest[4:12])
		copy(c.ResultHash[:], rest[12:20])
		c.LatencyMS = binary.LittleEndian.Uint32(rest[20:])
		c.CostMicrodollars = binary.LittleEndian.Uint32(rest[24:])
		c.Tokens = binary.LittleEndian.Uint32(rest[28:])
		action := rest[ToolCallFixedSize : ToolCallFixedSize+alen]
		if bad := invalidUTF8(action); bad >= 0 {
			d.add(fmt.Sprintf("trace[%d].action", k), off+ToolCallFixedSize+int64(bad),
				"action is not valid UTF-8 (byte 0x%02x)", action[bad])
		}
		c.Action = string(action)
		b.Calls = append(b.Calls, c)
		p += ToolCallFixedSize + alen
	}
	return true
}

// invalidUTF8 returns the index of the first byte of p that does not start
// a valid UTF-8 sequence, or -1.
func invalidUTF8(p []byte) int {
	for i := 0; i < len(p); {
		if p[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}
