package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/proofledger/ledger/ledger"
)

// ErrCorrupt is wrapped by every error about stored projection bytes (a
// key or a value under x/) that do not decode: the store was damaged or
// written by something else. The error names the key and what is wrong.
var ErrCorrupt = errors.New("index: corrupt projection")

// maxKeyQuote bounds the bytes of a key an error quotes.
const maxKeyQuote = 80

// quoteKey quotes a key for an error, cut to maxKeyQuote bytes.
func quoteKey(k []byte) string {
	if len(k) > maxKeyQuote {
		return fmt.Sprintf("%q... (%d bytes)", k[:maxKeyQuote], len(k))
	}
	return fmt.Sprintf("%q", k)
}

// corrupt returns an error wrapping ErrCorrupt that names key and says
// what is wrong with it or its value.
func corrupt(key []byte, format string, args ...any) error {
	return fmt.Errorf("%w: key %s: %s", ErrCorrupt, quoteKey(key), fmt.Sprintf(format, args...))
}

// enc builds a projection value.
type enc struct{ b []byte }

func (e *enc) u(x uint64)   { e.b = binary.AppendUvarint(e.b, x) }
func (e *enc) i(x int64)    { e.b = binary.AppendVarint(e.b, x) }
func (e *enc) f(x float64)  { e.b = binary.BigEndian.AppendUint64(e.b, math.Float64bits(x)) }
func (e *enc) s(x string)   { e.u(uint64(len(x))); e.b = append(e.b, x...) }
func (e *enc) byte1(x byte) { e.b = append(e.b, x) }
func (e *enc) flag(x bool) {
	if x {
		e.byte1(1)
	} else {
		e.byte1(0)
	}
}

// dec reads the projection value of a key. Each read names its field; the
// first error sticks and names the key, the field and the byte offset.
// Reads accept exactly what enc writes: minimal varints, flags 0 or 1,
// and (done) no trailing bytes. The reader keeps an offset rather than
// re-slicing b, so that reads write no pointers.
type dec struct {
	key []byte // for errors
	b   []byte // the value
	at  int    // offset of the next byte
	err error
}

func newDec(key, v []byte) dec { return dec{key: key, b: v} }

// off is the offset of the next byte.
func (d *dec) off() int { return d.at }

// left is the number of bytes not read yet.
func (d *dec) left() int { return len(d.b) - d.at }

// failAt records an error about the field that starts at byte at.
func (d *dec) failAt(at int, field, format string, args ...any) {
	if d.err == nil {
		d.err = corrupt(d.key, "%s at byte %d of %d: %s", field, at, len(d.b), fmt.Sprintf(format, args...))
	}
}

func (d *dec) fail(field, format string, args ...any) { d.failAt(d.at, field, format, args...) }

// uvarint reads an unsigned varint, minimal as binary.AppendUvarint
// writes it.
func (d *dec) uvarint(field string) (uint64, bool) {
	if d.err != nil {
		return 0, false
	}
	x, n := binary.Uvarint(d.b[d.at:])
	switch {
	case n == 0:
		d.fail(field, "value truncated")
		return 0, false
	case n < 0:
		d.fail(field, "varint overflows 64 bits")
		return 0, false
	case n > 1 && d.b[d.at+n-1] == 0:
		d.fail(field, "varint not minimal")
		return 0, false
	}
	d.at += n
	return x, true
}

func (d *dec) u(field string) uint64 {
	x, _ := d.uvarint(field)
	return x
}

// umax reads an unsigned varint no larger than max.
func (d *dec) umax(field string, max uint64) uint64 {
	at := d.at
	x, ok := d.uvarint(field)
	if ok && x > max {
		d.failAt(at, field, "%d exceeds %d", x, max)
		return 0
	}
	return x
}

// count reads the number of entries that follow, each of which takes at
// least two bytes: a count that cannot fit in what is left is an error
// (and bounds what a caller allocates).
func (d *dec) count(field string) uint64 {
	at := d.at
	n, ok := d.uvarint(field)
	if ok && n > uint64(d.left()/2) {
		d.failAt(at, field, "value truncated: %d entries of 2 bytes or more, %d bytes left", n, d.left())
		return 0
	}
	return n
}

func (d *dec) i(field string) int64 {
	ux, _ := d.uvarint(field)
	x := int64(ux >> 1) // binary.Varint's zig-zag
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// raw reads n bytes.
func (d *dec) raw(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if d.left() < n {
		d.fail(field, "value truncated (%d bytes, %d left)", n, d.left())
		return nil
	}
	x := d.b[d.at : d.at+n]
	d.at += n
	return x
}

func (d *dec) f(field string) float64 {
	x := d.raw(field, 8)
	if x == nil {
		return 0
	}
	return math.Float64frombits(binary.BigEndian.Uint64(x))
}

// sum reads a decayed sum: a float that is neither NaN nor negative.
func (d *dec) sum(field string) float64 {
	at := d.at
	x := d.f(field)
	if math.IsNaN(x) || x < 0 {
		d.failAt(at, field, "decayed sum %v", x)
		return 0
	}
	return x
}

func (d *dec) s(field string) string {
	at := d.at
	n, ok := d.uvarint(field)
	if !ok {
		return ""
	}
	if n > uint64(d.left()) {
		d.failAt(at, field, "value truncated: length %d exceeds the %d bytes left", n, d.left())
		return ""
	}
	x := string(d.b[d.at : d.at+int(n)])
	d.at += int(n)
	return x
}

func (d *dec) byte1(field string) byte {
	if d.err != nil {
		return 0
	}
	if d.left() < 1 {
		d.fail(field, "value truncated")
		return 0
	}
	x := d.b[d.at]
	d.at++
	return x
}

// byteMax reads a byte no larger than max.
func (d *dec) byteMax(field string, max byte) byte {
	at := d.at
	x := d.byte1(field)
	if x > max {
		d.failAt(at, field, "byte %d exceeds %d", x, max)
		return 0
	}
	return x
}

func (d *dec) flag(field string) bool {
	at := d.at
	x := d.byte1(field)
	if x > 1 {
		d.failAt(at, field, "flag byte %d, want 0 or 1", x)
		return false
	}
	return x == 1
}

// done returns the first error, or an error when bytes are left over.
func (d *dec) done() error {
	if d.err == nil && d.left() > 0 {
		d.fail("end", "%d trailing bytes", d.left())
	}
	return d.err
}

// Day is a UTC calendar day, counted from 1970-01-01.
type Day int32

const nsPerDay = int64(24 * time.Hour)

// DayOf returns the UTC day of t.
func DayOf(t time.Time) Day { return dayOfNS(t.UnixNano()) }

func dayOfNS(ns int64) Day {
	d := ns / nsPerDay
	if ns%nsPerDay < 0 {
		d--
	}
	return Day(d)
}

// Start returns the day's first instant.
func (d Day) Start() time.Time { return time.Unix(0, int64(d)*nsPerDay).UTC() }

// String writes the day as 2006-01-02.
func (d Day) String() string { return d.Start().Format("2006-01-02") }

// key returns the day as 4 bytes that sort in day order.
func (d Day) key() []byte { return binary.BigEndian.AppendUint32(nil, uint32(d)^(1<<31)) }

func dayFromKey(b []byte) Day { return Day(binary.BigEndian.Uint32(b) ^ (1 << 31)) }

// nsKey returns a time as 8 bytes that sort in time order.
func nsKey(ns int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(ns)^(1<<63)) }

func nsFromKey(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

func seqKey(seq int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(seq)) }

// join concatenates key parts into a new slice.
func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// prefixEnd is the exclusive upper bound of a scan of prefix p.
func prefixEnd(p []byte) []byte { return ledger.PrefixEnd(p) }
