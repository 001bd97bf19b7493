package ledger

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/proofledger/ledger/codec"
)

// Key layout of the Pebble store (documented in docs/FORMAT.md). Every key
// starts with a one-letter keyspace and a slash; integers are 8-byte
// big-endian so that keys sort numerically.
var (
	keyFormat    = []byte("m/format")    // uvarint store format version
	keyOrigin    = []byte("m/origin")    // checkpoint origin line
	keySize      = []byte("m/size")      // u64 number of events (tree size)
	keyLastTime  = []byte("m/last_time") // i64 AppendedAt of the last event, unix ns
	prefixEvent  = []byte("e/")          // e/<seq>            → leaf format byte, leaf
	prefixData   = []byte("p/")          // p/<seq>            → payload codec byte, document
	prefixHash   = []byte("h/")          // h/<stored index>   → 32-byte tlog stored hash
	prefixIdent  = []byte("i/")          // i/<kind code><id>  → seq u64 + sha256 of the document
	prefixTask   = []byte("k/")          // k/<task><seq>      → empty: events of a task
	prefixTime   = []byte("t/")          // t/<appended ns><seq> → empty: time index
	prefixCkpt   = []byte("c/")          // c/<size>           → signed checkpoint note
	prefixConfig = []byte("s/")          // s/<name>           → settings (registered policies)
)

// kindCodes give each kind a one-byte code in identity keys. Codes are part
// of the store format: never renumber.
var kindCodes = map[codec.Kind]byte{
	codec.KindVRF:             1,
	codec.KindAVIRAttestation: 2,
	codec.KindAVIRSpec:        3,
	codec.KindRVWW:            4,
	KindRollback:              5,
}

func u64(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return b[:]
}

// join concatenates key parts into a new slice.
func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func eventKey(seq int64) []byte       { return join(prefixEvent, u64(uint64(seq))) }
func dataKey(seq int64) []byte        { return join(prefixData, u64(uint64(seq))) }
func hashKey(index int64) []byte      { return join(prefixHash, u64(uint64(index))) }
func checkpointKey(size int64) []byte { return join(prefixCkpt, u64(uint64(size))) }
func identKey(kind codec.Kind, id string) []byte {
	return join(prefixIdent, []byte{kindCodes[kind]}, []byte(id))
}
func taskKey(task string, seq int64) []byte {
	return join(prefixTask, []byte(task), []byte{0}, u64(uint64(seq)))
}
func taskPrefix(task string) []byte { return join(prefixTask, []byte(task), []byte{0}) }
func timeKey(t int64, seq int64) []byte {
	return join(prefixTime, u64(uint64(t)^(1<<63)), u64(uint64(seq)))
}

// PrefixEnd returns the smallest key greater than every key with prefix p
// (nil when there is none): the exclusive upper bound of a prefix scan.
func PrefixEnd(p []byte) []byte { return prefixEnd(p) }

func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

var (
	prefixSucc     = []byte("n/") // n/<receipt id>  → seq of the receipt that continues it
	prefixDigest   = []byte("d/") // d/<sha256>      → seq u64, kind code, id: byte-identical replays
	prefixTaskHead = []byte("K/") // K/<task>        → seq u64, id of the task's latest event
)

func digestKey(d [32]byte) []byte    { return join(prefixDigest, d[:]) }
func taskHeadKey(task string) []byte { return join(prefixTaskHead, []byte(task)) }

// kindOfCode is the inverse of kindCodes.
func kindOfCode(c byte) (codec.Kind, bool) {
	for k, v := range kindCodes {
		if v == c {
			return k, true
		}
	}
	return "", false
}

func successorKey(id string) []byte { return join(prefixSucc, []byte(id)) }

// be64 decodes a stored 8-byte big-endian integer; any other length is
// corruption of the value at key.
func be64(key, b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: %s: want 8 bytes, have %d", ErrCorrupt, keyName(key), len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// keyName renders a store key for an error message: printable keyspace,
// the rest in hex, bounded.
func keyName(k []byte) string {
	if len(k) > 2 && k[1] == '/' {
		rest := k[2:]
		if len(rest) > 48 {
			return fmt.Sprintf("key %s%x…", k[:2], rest[:48])
		}
		return fmt.Sprintf("key %s%x", k[:2], rest)
	}
	return fmt.Sprintf("key %.64q", k)
}
