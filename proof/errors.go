package proof

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors that callers branch on with errors.Is. Every error of this
// package wraps exactly one of them.
var (
	// ErrMalformed: the input (checkpoint, proof, leaf) does not parse.
	ErrMalformed = errors.New("malformed")
	// ErrInvalid: the input parses but does not verify (a signature, a
	// Merkle path, a root, a digest or an index disagrees).
	ErrInvalid = errors.New("does not verify")
	// ErrVerifierKey: the verifier key is not a signed-note verifier key.
	ErrVerifierKey = errors.New("bad verifier key")
)

// MaxProofSize is the largest checkpoint or proof the parsers read. A proof
// is a few kilobytes; anything past this is refused before it is looked at.
const MaxProofSize = 1 << 20

// maxQuote is the most bytes of an offending input that an error quotes.
const maxQuote = 40

// quote returns s quoted for an error message, cut to maxQuote bytes (with
// its full length) when it is longer.
func quote(s string) string {
	if len(s) <= maxQuote {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:maxQuote], len(s))
}

func malformed(what, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrMalformed, what, fmt.Sprintf(format, args...))
}

func invalid(what, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, what, fmt.Sprintf(format, args...))
}

// checkSize refuses input larger than MaxProofSize.
func checkSize(what string, n int) error {
	if n > MaxProofSize {
		return malformed(what, "%d bytes, more than the %d-byte (1 MiB) limit", n, MaxProofSize)
	}
	return nil
}
