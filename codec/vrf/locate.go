package vrf

import (
	"strconv"
	"strings"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// maxPathDepth is the deepest field path the schema names
// (results.details[i].status).
const maxPathDepth = 4

// fieldPath is the path of a value inside the receipt: object keys and
// array indexes from the root. It is a value type with fixed room so that
// building paths on the happy path allocates nothing.
type fieldPath struct {
	segs [maxPathDepth]pathSeg
	n    int
}

type pathSeg struct {
	key   string // object key, when !isIdx
	index int    // array index, when isIdx
	isIdx bool
}

// Key returns p extended by an object key.
func (p fieldPath) Key(k string) fieldPath { return p.push(pathSeg{key: k}) }

// Index returns p extended by an array index.
func (p fieldPath) Index(i int) fieldPath { return p.push(pathSeg{index: i, isIdx: true}) }

func (p fieldPath) push(s pathSeg) fieldPath {
	if p.n < len(p.segs) { // the schema never goes deeper; never panic if it did
		p.segs[p.n] = s
		p.n++
	}
	return p
}

// path builds a path of object keys.
func path(keys ...string) fieldPath {
	var p fieldPath
	for _, k := range keys {
		p = p.Key(k)
	}
	return p
}

// String renders the dotted form: "results.details[2].status".
func (p fieldPath) String() string {
	var b strings.Builder
	for i, s := range p.segs[:p.n] {
		if s.isIdx {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}

// locate returns the byte offset in data of the value at p or, when p does
// not exist, of the deepest value on the way to it (the object that lacks
// a required member). data must be text that canonjson.Parse accepted; the
// scanner still bounds-checks every step so that no input can make it
// panic. It returns codec.NoOffset when data is nil.
func locate(data []byte, p fieldPath) int64 {
	if data == nil {
		return codec.NoOffset
	}
	i := 0
	if len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF {
		i = 3
	}
	i = skipSpace(data, i)
	for _, seg := range p.segs[:p.n] {
		if i >= len(data) {
			return codec.NoOffset
		}
		next := -1
		switch data[i] {
		case '{':
			if !seg.isIdx {
				next = findMember(data, i, seg.key)
			}
		case '[':
			if seg.isIdx {
				next = findElem(data, i, seg.index)
			}
		}
		if next < 0 {
			return int64(i)
		}
		i = next
	}
	return int64(i)
}

// findMember returns the offset of the value of member key in the object
// starting at data[at], or -1.
func findMember(data []byte, at int, key string) int {
	j := skipSpace(data, at+1)
	for j < len(data) && data[j] == '"' {
		end := skipString(data, j)
		if end < 0 {
			return -1
		}
		k := string(data[j+1 : end-1])
		if strings.IndexByte(k, '\\') >= 0 {
			v, err := canonjson.Parse(data[j:end])
			if err != nil {
				return -1
			}
			k, _ = v.Str()
		}
		j = skipSpace(data, end)
		if j >= len(data) || data[j] != ':' {
			return -1
		}
		j = skipSpace(data, j+1)
		if k == key {
			return j
		}
		j = skipValue(data, j, 0)
		if j < 0 {
			return -1
		}
		j = skipSpace(data, j)
		if j >= len(data) || data[j] != ',' {
			return -1
		}
		j = skipSpace(data, j+1)
	}
	return -1
}

// findElem returns the offset of element n of the array starting at
// data[at], or -1.
func findElem(data []byte, at, n int) int {
	j := skipSpace(data, at+1)
	for k := 0; j < len(data) && data[j] != ']'; k++ {
		if k == n {
			return j
		}
		j = skipValue(data, j, 0)
		if j < 0 {
			return -1
		}
		j = skipSpace(data, j)
		if j >= len(data) || data[j] != ',' {
			return -1
		}
		j = skipSpace(data, j+1)
	}
	return -1
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the offset just past the string starting at data[i],
// or -1.
func skipString(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the offset just past the value starting at data[i], or
// -1. depth bounds the recursion the way the parser bounded nesting.
func skipValue(data []byte, i, depth int) int {
	if i >= len(data) || depth > canonjson.MaxDepth {
		return -1
	}
	switch c := data[i]; c {
	case '"':
		return skipString(data, i)
	case '{', '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		j := skipSpace(data, i+1)
		if j < len(data) && data[j] == closer {
			return j + 1
		}
		for j < len(data) {
			if c == '{' {
				j = skipString(data, j)
				if j < 0 {
					return -1
				}
				j = skipSpace(data, j)
				if j >= len(data) || data[j] != ':' {
					return -1
				}
				j = skipSpace(data, j+1)
			}
			j = skipValue(data, j, depth+1)
			if j < 0 {
				return -1
			}
			j = skipSpace(data, j)
			if j >= len(data) {
				return -1
			}
			switch data[j] {
			case ',':
				j = skipSpace(data, j+1)
			case closer:
				return j + 1
			default:
				return -1
			}
		}
		return -1
	}
	// Number or literal: runs to the next delimiter.
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}
