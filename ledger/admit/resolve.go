package admit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/ledger"
)

// ErrAmbiguous: a prefix that names more than one document.
var ErrAmbiguous = errors.New("ambiguous prefix")

// MaxCandidates bounds the candidates an AmbiguousError lists.
const MaxCandidates = 10

// AmbiguousError is the error of a prefix that names several documents:
// the first MaxCandidates of them by sequence number, and whether there
// are more. It wraps ErrAmbiguous.
type AmbiguousError struct {
	Ref        string
	Candidates []ledger.PrefixMatch
	More       bool
}

func (e *AmbiguousError) Error() string {
	more := ""
	if e.More {
		more = " or more"
	}
	return fmt.Sprintf("%v %q: it names %d%s documents", ErrAmbiguous, e.Ref, len(e.Candidates), more)
}

// Unwrap returns ErrAmbiguous.
func (e *AmbiguousError) Unwrap() error { return ErrAmbiguous }

// Resolve finds the event a reference names, trying in turn:
//
//  1. a sequence number (decimal digits) of an event of the log;
//  2. a document identity of any kind (a receipt_id, an AVIR chain_hash
//     or spec hash, a bundle's "<task uuid>@<created_ns>", a rollback's
//     id), as given or in lower case;
//  3. a task UUID (8-4-4-4-12 hex digits, any case): the task's latest
//     witness bundle;
//  4. a prefix of at least ledger.MinPrefix characters of a document
//     identity or of a document's digest (hex, with or without
//     "sha256:"), git-style: it must name one document.
//
// It returns an error wrapping ledger.ErrNotFound when nothing matches,
// an *AmbiguousError (ErrAmbiguous) when a prefix names several
// documents, and one wrapping ledger.ErrShortPrefix for a prefix that is
// too short.
func (l *Ledger) Resolve(ref string) (*ledger.Event, error) {
	digits := ref != "" && strings.Trim(ref, "0123456789") == ""
	if n, err := strconv.ParseInt(ref, 10, 64); err == nil && digits && len(ref) < 19 {
		ev, err := l.Event(n, false)
		if err == nil {
			return ev, nil
		}
		if !errors.Is(err, ledger.ErrNotFound) {
			return nil, err
		}
	}
	for _, id := range variants(ref) {
		ev, err := l.Lookup(id)
		if err == nil {
			return ev, nil
		}
		if !errors.Is(err, ledger.ErrNotFound) {
			return nil, err
		}
	}
	if isUUID(ref) {
		ev, err := l.latestBundle(strings.ToLower(ref))
		if err == nil || !errors.Is(err, ledger.ErrNotFound) {
			return ev, err
		}
	}
	if digits && len(ref) < ledger.MinPrefix {
		return nil, fmt.Errorf("%s: no event with this sequence number: %w", ref, ledger.ErrNotFound)
	}
	for _, p := range variants(ref) {
		matches, more, err := l.FindPrefix(p, MaxCandidates)
		if err != nil {
			return nil, err
		}
		switch {
		case len(matches) == 1:
			return l.Event(matches[0].Seq, false)
		case len(matches) > 1:
			return nil, &AmbiguousError{Ref: ref, Candidates: matches, More: more}
		}
	}
	return nil, fmt.Errorf("%s: %w", ref, ledger.ErrNotFound)
}

// variants are ref and, when it differs, ref in lower case (identities
// and digests are lower case, but for a rollback's time).
func variants(ref string) []string {
	if lower := strings.ToLower(ref); lower != ref {
		return []string{ref, lower}
	}
	return []string{ref}
}

// isUUID reports whether s is 8-4-4-4-12 hex digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// latestBundle returns a task's latest witness bundle (its rollbacks
// skipped), from the task's entries (task/).
func (l *Ledger) latestBundle(task string) (*ledger.Event, error) {
	s := l.Snapshot()
	defer s.Close()
	if l.Stale() {
		return nil, ledger.ErrStale
	}
	p := taskPrefix(task)
	var seqs []int64
	err := s.RangePrefix(p, func(k, _ []byte) (bool, error) {
		seq, err := decodeSeq(k, k[len(p):])
		if err != nil {
			return false, err
		}
		seqs = append(seqs, seq)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	for i := len(seqs) - 1; i >= 0; i-- {
		ev, err := s.Event(seqs[i], false)
		if err != nil {
			return nil, err
		}
		if ev.Kind == codec.KindRVWW {
			return ev, nil
		}
	}
	return nil, fmt.Errorf("task %s: no witness bundle: %w", task, ledger.ErrNotFound)
}
