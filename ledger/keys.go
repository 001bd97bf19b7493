package ledger

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/proofledger/ledger/codec"
)

// Key layout of the Pebble store, format 3 (docs/FORMAT.md). Every key
// starts with a keyspace named for what it holds and a slash; integers in
// keys are 8-byte big-endian so that they sort numerically. The store owns
// the keyspaces below; the admission rules own theirs (Rules.Entries:
// chain/, next/, task/, agent-chain/, agent/ in package admit) and the projections theirs
// (ProjectionPrefix).
var (
	keyFormat     = []byte("meta/format")     // uvarint store format version
	keyOrigin     = []byte("meta/origin")     // checkpoint origin line
	keySize       = []byte("meta/size")       // u64 number of events (tree size)
	keyLastTime   = []byte("meta/last_time")  // i64 AppendedAt of the last event, unix ns
	keyRebuilding = []byte("meta/rebuilding") // present while derived entries are being rebuilt
	prefixLeaf    = []byte("leaf/")           // leaf/<seq>          → leaf format byte, leaf
	prefixDoc     = []byte("doc/")            // doc/<seq>           → payload codec byte, document
	prefixHash    = []byte("hash/")           // hash/<stored index> → 32-byte tlog stored hash
	prefixCkpt    = []byte("checkpoint/")     // checkpoint/<size>   → signed checkpoint note
	prefixIdent   = []byte("id/")             // id/<kind code><id>  → seq, sha256 of the document
	prefixDigest  = []byte("digest/")         // digest/<sha256>     → seq, kind code, id
	prefixTime    = []byte("time/")           // time/<ns^1<<63><seq> → empty: time index
	prefixSetting = []byte("setting/")        // setting/<name>      → a setting (registered policies)
)

// storePrefixes are the keyspaces the store owns; the rules' and the
// projections' keys must not start with them.
var storePrefixes = [][]byte{[]byte("meta/"), prefixLeaf, prefixDoc, prefixHash, prefixCkpt, prefixIdent, prefixDigest, prefixTime, prefixSetting,
	prefixRefusal, prefixRefusalCount}

// kindCodes give each kind a one-byte code in identity keys. Codes are part
// of the store format: never renumber.
var kindCodes = map[codec.Kind]byte{
	codec.KindVRF:             1,
	codec.KindAVIRAttestation: 2,
	codec.KindAVIRSpec:        3,
	codec.KindRVWW:            4,
	KindRollback:              5,
}

// kindOfCode is the inverse of kindCodes.
func kindOfCode(c byte) (codec.Kind, bool) {
	for k, v := range kindCodes {
		if v == c {
			return k, true
		}
	}
	return "", false
}

func u64(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return b[:]
}

// join concatenates key parts into a new slice.
func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func eventKey(seq int64) []byte       { return join(prefixLeaf, u64(uint64(seq))) }
func dataKey(seq int64) []byte        { return join(prefixDoc, u64(uint64(seq))) }
func hashKey(index int64) []byte      { return join(prefixHash, u64(uint64(index))) }
func checkpointKey(size int64) []byte { return join(prefixCkpt, u64(uint64(size))) }
func identKey(kind codec.Kind, id string) []byte {
	return join(prefixIdent, []byte{kindCodes[kind]}, []byte(id))
}
func timeKey(t int64, seq int64) []byte {
	return join(prefixTime, u64(uint64(t)^(1<<63)), u64(uint64(seq)))
}
func digestKey(d [32]byte) []byte { return join(prefixDigest, d[:]) }

// PrefixEnd returns the smallest key greater than every key with prefix p
// (nil when there is none): the exclusive upper bound of a prefix scan,
// for projections ranging over their keyspaces (Snapshot.Range).
func PrefixEnd(p []byte) []byte { return prefixEnd(p) }

func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// be64 decodes a stored 8-byte big-endian integer; any other length is
// corruption of the value at key.
func be64(key, b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: %s: want 8 bytes, have %d", ErrCorrupt, KeyName(key), len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// KeyName renders a store key for an error message: its printable
// keyspace, the rest in hex, bounded.
func KeyName(k []byte) string {
	if i := bytes.IndexByte(k, '/'); i > 0 && i < 16 {
		rest := k[i+1:]
		if len(rest) > 48 {
			return fmt.Sprintf("key %s%x…", k[:i+1], rest[:48])
		}
		return fmt.Sprintf("key %s%x", k[:i+1], rest)
	}
	return fmt.Sprintf("key %.64q", k)
}

func keyName(k []byte) string { return KeyName(k) }
