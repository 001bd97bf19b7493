package ledgertest

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"

	"github.com/proofledger/ledger/ledger"
)

// Dump returns every key and value of the store of the closed ledger in
// dir, for tests that compare whole states (same submissions, same store;
// a refusal changes nothing). It opens the store read-only with the
// ledger's options and never writes.
func Dump(dir string) (_ map[string]string, err error) {
	o := ledger.PebbleOptions(nil)
	o.ReadOnly, o.ErrorIfNotExists = true, true
	db, err := pebble.Open(filepath.Join(dir, "store"), o)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	it, err := db.NewIter(&pebble.IterOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	err = it.Error()
	if cerr := it.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Diff names the first difference between two dumps ("" when equal).
func Diff(a, b map[string]string) string {
	for k, v := range a {
		if w, ok := b[k]; !ok {
			return fmt.Sprintf("key %q removed", k)
		} else if w != v {
			return fmt.Sprintf("key %q changed", k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			return fmt.Sprintf("key %q added", k)
		}
	}
	return ""
}
