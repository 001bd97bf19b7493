package ledger

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// Versioned is implemented by Rules and Projectors whose derived entries
// have a layout version. The store records, under meta/derived, the
// versions of the components its derived entries were last complete for;
// when a component it is opened with has another version (or none
// recorded), the entries are out of date: a write open rebuilds them, a
// read-only open reports them stale (Stale, ErrStale) until then. This is
// how a ledger written before a projection was added gets it.
type Versioned interface {
	// DerivedVersion is the version of the entries' layout: raise it
	// whenever the entries an event implies change.
	DerivedVersion() int
}

// keyDerived records the derived entries' component versions: lines
// "<name> <version>", sorted.
var keyDerived = []byte("meta/derived")

// rulesComponent names the Rules in meta/derived.
const rulesComponent = "rules"

// derivedVersions returns the versions of the components l was opened
// with that have one.
func (l *Ledger) derivedVersions() map[string]int {
	out := map[string]int{}
	if v, ok := l.rules.(Versioned); ok {
		out[rulesComponent] = v.DerivedVersion()
	}
	for _, p := range l.proj {
		if v, ok := p.(Versioned); ok {
			out[p.Name()] = v.DerivedVersion()
		}
	}
	return out
}

func encodeDerived(m map[string]int) []byte {
	lines := make([]string, 0, len(m))
	for name, v := range m {
		lines = append(lines, fmt.Sprintf("%s %d\n", name, v))
	}
	sort.Strings(lines)
	return []byte(strings.Join(lines, ""))
}

// readDerived reads meta/derived (empty when absent).
func readDerived(r pebble.Reader) (map[string]int, error) {
	out := map[string]int{}
	v, err := getCopy(r, keyDerived)
	if errors.Is(err, ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, line := range strings.SplitAfter(string(v), "\n") {
		if line == "" {
			continue
		}
		name, ver, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		n, err := strconv.Atoi(ver)
		if !ok || err != nil || name == "" || !strings.HasSuffix(line, "\n") {
			return nil, fmt.Errorf("%w: %s: want lines \"<component> <version>\"", ErrCorrupt, keyName(keyDerived))
		}
		out[name] = n
	}
	return out, nil
}

// derivedState compares the recorded component versions with l's:
// outdated when one of l's components is not recorded at its version;
// rewrite when the record names more than l's components (l will not
// maintain the others' entries, so they must not count as complete).
func (l *Ledger) derivedState() (outdated, rewrite bool, err error) {
	have, err := readDerived(l.db)
	if err != nil {
		return false, false, err
	}
	want := l.derivedVersions()
	for name, v := range want {
		if hv, ok := have[name]; !ok || hv != v {
			outdated = true
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			rewrite = true
		}
	}
	return outdated, rewrite, nil
}

// setDerived adds, to b, the record of l's component versions.
func (l *Ledger) setDerived(b *pebble.Batch) error {
	return b.Set(keyDerived, encodeDerived(l.derivedVersions()), nil)
}

// writeDerived records l's component versions durably.
func (l *Ledger) writeDerived() error {
	return l.db.Set(keyDerived, encodeDerived(l.derivedVersions()), pebble.Sync)
}
