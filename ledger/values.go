package ledger

import (
	"encoding/binary"
	"fmt"

	"github.com/proofledger/ledger/codec"
)

// Stored values of the ledger's own index entries (docs/FORMAT.md). Every
// decoder checks lengths and returns an error wrapping ErrCorrupt that
// names the key: damaged bytes are an error, never a panic or a zero.

// identValue is an identity index entry: the event's sequence number and
// the SHA-256 of its document.
type identValue struct {
	seq    int64
	digest [32]byte
}

func (v identValue) encode() []byte { return append(u64(uint64(v.seq)), v.digest[:]...) }

func decodeIdent(key, b []byte) (identValue, error) {
	if len(b) != 40 {
		return identValue{}, fmt.Errorf("%w: %s: identity entry of %d bytes, want 40", ErrCorrupt, keyName(key), len(b))
	}
	v := identValue{seq: int64(binary.BigEndian.Uint64(b))}
	if v.seq < 0 {
		return identValue{}, fmt.Errorf("%w: %s: negative sequence number", ErrCorrupt, keyName(key))
	}
	copy(v.digest[:], b[8:40])
	return v, nil
}

// digestValue is the value of digest/<sha256>: the event's seq, kind code and id.
func digestValue(ev *Event) []byte {
	return join(u64(uint64(ev.Seq)), []byte{kindCodes[ev.Kind]}, []byte(ev.ID))
}

// decodeDigest reads a digest index entry.
func decodeDigest(key, b []byte) (seq int64, kind codec.Kind, id string, err error) {
	if len(b) < 10 {
		return 0, "", "", fmt.Errorf("%w: %s: digest entry of %d bytes, want at least 10", ErrCorrupt, keyName(key), len(b))
	}
	seq = int64(binary.BigEndian.Uint64(b))
	kind, ok := kindOfCode(b[8])
	if !ok || seq < 0 {
		return 0, "", "", fmt.Errorf("%w: %s: bad kind code %d or sequence number", ErrCorrupt, keyName(key), b[8])
	}
	return seq, kind, string(b[9:]), nil
}

// decodeSeq reads a value (or key suffix) that is one sequence number.
func decodeSeq(key, b []byte) (int64, error) {
	n, err := be64(key, b)
	if err != nil {
		return 0, err
	}
	if int64(n) < 0 {
		return 0, fmt.Errorf("%w: %s: negative sequence number", ErrCorrupt, keyName(key))
	}
	return int64(n), nil
}

// decodeTimeKey reads time/<appended_at ns ^ 1<<63><seq>.
func decodeTimeKey(key []byte) (ns, seq int64, err error) {
	rest := key[min(len(key), len(prefixTime)):]
	if len(key) != len(prefixTime)+16 {
		return 0, 0, fmt.Errorf("%w: %s: time index key of %d bytes, want %d", ErrCorrupt, keyName(key), len(key), len(prefixTime)+16)
	}
	ns = int64(binary.BigEndian.Uint64(rest) ^ (1 << 63))
	seq, err = decodeSeq(key, rest[8:])
	return ns, seq, err
}

// decodeKeySeq reads the sequence number that ends a key of prefix p
// (leaf/, doc/, hash/, checkpoint/).
func decodeKeySeq(p, key []byte) (int64, error) {
	if len(key) != len(p)+8 {
		return 0, fmt.Errorf("%w: %s: want %d bytes after the prefix, have %d", ErrCorrupt, keyName(key), 8, len(key)-len(p))
	}
	return decodeSeq(key, key[len(p):])
}
