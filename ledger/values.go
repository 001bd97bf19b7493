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
// document digest and, for receipts, the chain position and agent that the
// next receipt of the chain is checked against.
type identValue struct {
	seq      int64
	digest   [32]byte
	position int64 // -1 for other kinds
	agent    string
}

func (v identValue) encode() []byte {
	out := append(u64(uint64(v.seq)), v.digest[:]...)
	if v.position < 0 {
		return out
	}
	out = binary.AppendUvarint(out, uint64(v.position))
	return append(out, v.agent...)
}

func decodeIdent(key, b []byte) (identValue, error) {
	if len(b) < 40 {
		return identValue{}, fmt.Errorf("%w: %s: identity entry of %d bytes, want at least 40", ErrCorrupt, keyName(key), len(b))
	}
	v := identValue{seq: int64(binary.BigEndian.Uint64(b)), position: -1}
	if v.seq < 0 {
		return identValue{}, fmt.Errorf("%w: %s: negative sequence number", ErrCorrupt, keyName(key))
	}
	copy(v.digest[:], b[8:40])
	if len(b) > 40 {
		p, n := binary.Uvarint(b[40:])
		if n <= 0 || p > 1<<62 {
			return identValue{}, fmt.Errorf("%w: %s: bad chain position", ErrCorrupt, keyName(key))
		}
		v.position = int64(p)
		v.agent = string(b[40+n:])
	}
	return v, nil
}

// digestValue is the value of d/<sha256>: the event's seq, kind code and id.
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

// taskHead is a task's latest event (value of K/<task>).
type taskHead struct {
	seq int64
	id  string
}

func (h taskHead) encode() []byte { return append(u64(uint64(h.seq)), h.id...) }

func decodeTaskHead(key, b []byte) (taskHead, error) {
	if len(b) < 9 || int64(binary.BigEndian.Uint64(b)) < 0 {
		return taskHead{}, fmt.Errorf("%w: %s: task head entry of %d bytes, want a sequence number and an id", ErrCorrupt, keyName(key), len(b))
	}
	return taskHead{seq: int64(binary.BigEndian.Uint64(b)), id: string(b[8:])}, nil
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

// decodeTimeKey reads t/<appended_at ns ^ 1<<63><seq>.
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
// (e/, p/, h/, c/, k/<task>\0).
func decodeKeySeq(p, key []byte) (int64, error) {
	if len(key) != len(p)+8 {
		return 0, fmt.Errorf("%w: %s: want %d bytes after the prefix, have %d", ErrCorrupt, keyName(key), 8, len(key)-len(p))
	}
	return decodeSeq(key, key[len(p):])
}
