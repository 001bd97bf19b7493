package index

import (
	"bytes"
	"encoding/binary"
)

// Parsers of the x/ keys (see the keyspaces in index.go). Each checks the
// key's length and fixed bytes and returns an error wrapping ErrCorrupt
// that names the key; none keeps a reference to k.

// subjectFromKey returns <subject> of <prefix><subject>\0 (x/a/, x/s/).
func subjectFromKey(k, prefix []byte) (string, error) {
	rest, err := keyRest(k, prefix, 1)
	if err != nil {
		return "", err
	}
	if rest[len(rest)-1] != 0 {
		return "", corrupt(k, "want <subject>\\0 after %q", prefix)
	}
	return string(rest[:len(rest)-1]), nil
}

// nameSeqFromKey returns the name and seq of <prefix><name>\0<seq 8>
// (x/y/, x/k/).
func nameSeqFromKey(k, prefix []byte) (string, int64, error) {
	rest, err := keyRest(k, prefix, 9)
	if err != nil {
		return "", 0, err
	}
	if rest[len(rest)-9] != 0 {
		return "", 0, corrupt(k, "want <name>\\0<seq 8 bytes> after %q", prefix)
	}
	seq := seqFromKey(rest[len(rest)-8:])
	if seq < 0 {
		return "", 0, corrupt(k, "seq %d", seq)
	}
	return string(rest[:len(rest)-9]), seq, nil
}

// timeSeqFromKey returns the time and seq of <prefix><ns 8><seq 8> (x/b/,
// x/r/).
func timeSeqFromKey(k, prefix []byte) (ns, seq int64, err error) {
	rest, err := keyRest(k, prefix, 16)
	if err != nil {
		return 0, 0, err
	}
	if len(rest) != 16 {
		return 0, 0, corrupt(k, "want <time 8 bytes><seq 8 bytes> after %q, got %d bytes", prefix, len(rest))
	}
	if seq = seqFromKey(rest[8:]); seq < 0 {
		return 0, 0, corrupt(k, "seq %d", seq)
	}
	return nsFromKey(rest[:8]), seq, nil
}

// rollupKey is a parsed x/d/<day 4><policy 8><mode><known> key.
type rollupKey struct {
	day    Day
	policy [8]byte
	mode   uint8
	known  bool
}

func rollupFromKey(k []byte) (rollupKey, error) {
	var r rollupKey
	rest, err := keyRest(k, pRollup, 14)
	if err != nil {
		return r, err
	}
	if len(rest) != 14 || rest[13] > 1 {
		return r, corrupt(k, "want <day 4><policy 8><mode><known 0 or 1> after %q", pRollup)
	}
	r.day = dayFromKey(rest[:4])
	copy(r.policy[:], rest[4:12])
	r.mode, r.known = rest[12], rest[13] == 1
	return r, nil
}

// tierFromKey returns the tier and verdict of x/v/<tier><verdict>.
func tierFromKey(k []byte) (int, string, error) {
	rest, err := keyRest(k, pTier, 2)
	if err != nil {
		return 0, "", err
	}
	if rest[0] > 3 {
		return 0, "", corrupt(k, "tier %d, want 0 to 3", rest[0])
	}
	return int(rest[0]), string(rest[1:]), nil
}

// regressionFromKey returns the day and task of x/g/<day 4><task>.
func regressionFromKey(k []byte) (Day, string, error) {
	rest, err := keyRest(k, pRegression, 5)
	if err != nil {
		return 0, "", err
	}
	return dayFromKey(rest[:4]), string(rest[4:]), nil
}

// keyRest returns what follows prefix in k, which must be at least min
// bytes.
func keyRest(k, prefix []byte, min int) ([]byte, error) {
	if !bytes.HasPrefix(k, prefix) {
		return nil, corrupt(k, "want a key under %q", prefix)
	}
	rest := k[len(prefix):]
	if len(rest) < min {
		return nil, corrupt(k, "%d bytes after %q, want at least %d", len(rest), prefix, min)
	}
	return rest, nil
}

func seqFromKey(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }
