package avir

import (
	"strconv"
	"strings"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// A path names one value inside a document: object keys and array
// indices from the root. It renders as the Finding.Field form used across
// the project: keys joined by dots, indices in brackets
// ("results.benchmarks[0].statistics.mean").
type path []pathElem

type pathElem struct {
	key   string
	index int // valid when isIndex
	isIdx bool
}

// key returns p extended by an object key. The result never shares its
// backing array with p, so sibling paths cannot overwrite each other.
func (p path) key(k string) path {
	out := make(path, len(p), len(p)+1)
	copy(out, p)
	return append(out, pathElem{key: k})
}

// idx returns p extended by an array index.
func (p path) idx(i int) path {
	out := make(path, len(p), len(p)+1)
	copy(out, p)
	return append(out, pathElem{index: i, isIdx: true})
}

// String renders p as a Finding field.
func (p path) String() string {
	var b strings.Builder
	for _, e := range p {
		if e.isIdx {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.index))
			b.WriteByte(']')
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.key)
	}
	return b.String()
}

// pathFromPointer turns a JSON-pointer token list (as the schema
// validator reports instance locations) into a path, using the document to
// tell array indices from object keys.
func pathFromPointer(root canonjson.Value, tokens []string) path {
	p := make(path, 0, len(tokens))
	cur := root
	for _, tok := range tokens {
		if cur.Type() == canonjson.Array {
			i, err := strconv.Atoi(tok)
			if err == nil && i >= 0 && i < cur.Len() {
				p = append(p, pathElem{index: i, isIdx: true})
				cur = cur.Elems()[i]
				continue
			}
		}
		p = append(p, pathElem{key: tok})
		cur, _ = cur.Get(tok)
	}
	return p
}

// offsets maps rendered paths to the byte offset where each value starts
// in the input. Parsing builds it only when there is a finding to place,
// so well-formed documents never pay for it.
type offsets map[string]int64

// at returns the offset of the value at p, or of its nearest ancestor
// that exists (a missing member is placed at its parent object), or
// codec.NoOffset when nothing is known.
func (o offsets) at(p path) int64 {
	for n := len(p); n >= 0; n-- {
		if off, ok := o[p[:n].String()]; ok {
			return off
		}
	}
	return codec.NoOffset
}

// maxOffsetDepth bounds the paths an offsets index records. Deeper
// values are placed at their ancestor at this depth, which keeps the index
// proportional to the input however deep the nesting.
const maxOffsetDepth = 16

// record notes the offset of the value at the path in stack, if it is
// shallow enough to index.
func (o offsets) record(stack path, off int64) {
	if len(stack) > maxOffsetDepth {
		return
	}
	if k := stack.String(); !o.has(k) {
		o[k] = off
	}
}

func (o offsets) has(k string) bool {
	_, ok := o[k]
	return ok
}

// jsonOffsets indexes the values of a JSON text that canonjson.Parse has
// accepted. It never fails: on anything unexpected it returns what it has.
func jsonOffsets(data []byte) offsets {
	s := jsonScanner{data: data, out: offsets{}}
	if len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF {
		s.pos = 3
	}
	s.value()
	return s.out
}

type jsonScanner struct {
	data  []byte
	pos   int
	out   offsets
	stack path // the path of the value being scanned
}

func (s *jsonScanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value records the offset of the value at s.stack and skips it. It
// reports false when the text is not what canonjson accepted.
func (s *jsonScanner) value() bool {
	s.space()
	if s.pos >= len(s.data) || len(s.stack) > canonjson.MaxDepth {
		return false
	}
	s.out.record(s.stack, int64(s.pos))
	switch c := s.data[s.pos]; c {
	case '{':
		s.pos++
		s.space()
		if s.pos < len(s.data) && s.data[s.pos] == '}' {
			s.pos++
			return true
		}
		for {
			s.space()
			start := s.pos
			if !s.skipString() {
				return false
			}
			k, err := canonjson.Parse(s.data[start:s.pos])
			if err != nil {
				return false
			}
			key, _ := k.Str()
			s.space()
			if s.pos >= len(s.data) || s.data[s.pos] != ':' {
				return false
			}
			s.pos++
			s.stack = append(s.stack, pathElem{key: key})
			ok := s.value()
			s.stack = s.stack[:len(s.stack)-1]
			if !ok {
				return false
			}
			s.space()
			if s.pos >= len(s.data) {
				return false
			}
			switch s.data[s.pos] {
			case ',':
				s.pos++
			case '}':
				s.pos++
				return true
			default:
				return false
			}
		}
	case '[':
		s.pos++
		s.space()
		if s.pos < len(s.data) && s.data[s.pos] == ']' {
			s.pos++
			return true
		}
		for i := 0; ; i++ {
			s.stack = append(s.stack, pathElem{index: i, isIdx: true})
			ok := s.value()
			s.stack = s.stack[:len(s.stack)-1]
			if !ok {
				return false
			}
			s.space()
			if s.pos >= len(s.data) {
				return false
			}
			switch s.data[s.pos] {
			case ',':
				s.pos++
			case ']':
				s.pos++
				return true
			default:
				return false
			}
		}
	case '"':
		return s.skipString()
	default:
		// A number or a literal: skip to the next structural character.
		for s.pos < len(s.data) {
			switch s.data[s.pos] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return true
			}
			s.pos++
		}
		return true
	}
}

func (s *jsonScanner) skipString() bool {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return false
	}
	for s.pos++; s.pos < len(s.data); s.pos++ {
		switch s.data[s.pos] {
		case '\\':
			s.pos++
		case '"':
			s.pos++
			return true
		}
	}
	return false
}
