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

// ErrCorrupt is wrapped by errors about projection values that do not decode.
var ErrCorrupt = errors.New("index: corrupt projection")

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

// dec reads a projection value; the first error sticks.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail() {
	if d.err == nil {
		d.err = fmt.Errorf("%w: value truncated", ErrCorrupt)
	}
}

func (d *dec) u() uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *dec) i() int64 {
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *dec) f() float64 {
	if len(d.b) < 8 {
		d.fail()
		return 0
	}
	x := math.Float64frombits(binary.BigEndian.Uint64(d.b))
	d.b = d.b[8:]
	return x
}

func (d *dec) s() string {
	n := d.u()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	x := string(d.b[:n])
	d.b = d.b[n:]
	return x
}

func (d *dec) byte1() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	x := d.b[0]
	d.b = d.b[1:]
	return x
}

func (d *dec) flag() bool { return d.byte1() != 0 }

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
