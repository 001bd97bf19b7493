package ledger

import (
	"errors"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// keyDerived holds the version of the derived entries' description: what
// the Rules and Projectors that declare a version (Versioned) said when
// the derived entries were last rebuilt. A store whose value differs
// from what the Rules and Projectors it is opened with say holds entries
// written under another description (a keyspace added since, say): they
// are marked stale and rebuilt from the leaves at the next write open.
var keyDerived = []byte("meta/derived")

// Versioned is implemented by Rules and Projectors whose entries change
// between releases. Version names the description of their entries; a
// new keyspace, or a changed value, needs a new Version, so that ledgers
// written before rebuild their derived entries once (see Open). Rules
// and Projectors without it never cause a rebuild.
type Versioned interface {
	Version() string
}

// derivedVersion is the version of the derived entries that rules and
// projs write: each Versioned one's Version, in order, joined by ";".
// It is empty when none declares one.
func derivedVersion(rules Rules, projs []Projector) string {
	var parts []string
	if v, ok := rules.(Versioned); ok {
		parts = append(parts, v.Version())
	}
	for _, p := range projs {
		if v, ok := p.(Versioned); ok {
			parts = append(parts, v.Version())
		}
	}
	return strings.Join(parts, ";")
}

// derivedCurrent reports whether the store's derived entries were written
// under want (an absent key is the empty version).
func derivedCurrent(r pebble.Reader, want string) (bool, error) {
	got, err := getCopy(r, keyDerived)
	switch {
	case errors.Is(err, ErrNotFound):
		return want == "", nil
	case err != nil:
		return false, err
	}
	return string(got) == want, nil
}
