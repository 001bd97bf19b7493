package avirrun

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/proofledger/ledger/codec/avir"
	"github.com/proofledger/ledger/codec/canonjson"
)

// The extension fields a benchmark may carry. codec/avir's normalized
// spec (the reference's Specification.to_dict) keeps only the protocol's
// fields, so these are not covered by spec_hash; the attestation records
// them in each result item's ledger_run object instead, which
// results_hash covers.
const (
	fieldCommand = "command"
	fieldTimeout = "timeout_seconds"
)

// maxTimeoutSeconds bounds timeout_seconds: one day per step.
const maxTimeoutSeconds = 86400

// maxCommand bounds each command string, which reaches the driver as one
// argument: Linux refuses an argument over 128 KiB (MAX_ARG_STRLEN).
const maxCommand = 64 << 10

// extension is what a benchmark's extension fields say.
type extension struct {
	command string        // "" when absent or null
	timeout time.Duration // 0 when absent or null
}

// readExtensions reads every benchmark's extension fields, and checks that
// the strings handed to the sandbox hold no NUL byte (the sandbox cannot
// pass one in an argument) and fit in an argument. Errors name the field.
func readExtensions(spec *avir.Spec) (map[string]extension, error) {
	out := map[string]extension{}
	benches, _ := spec.Value().Get("benchmarks")
	for i, bv := range benches.Elems() {
		at := fmt.Sprintf("benchmarks[%d]", i)
		id, _ := bv.Get("id")
		name, _ := id.Str()
		var ext extension
		if v, ok := bv.Get(fieldCommand); ok && !v.IsNull() {
			s, ok := v.Str()
			switch {
			case !ok:
				return nil, fmt.Errorf("%w: %s.%s: want string, got %s", ErrSpec, at, fieldCommand, v.Type())
			case strings.TrimSpace(s) == "":
				return nil, fmt.Errorf("%w: %s.%s: empty command", ErrSpec, at, fieldCommand)
			case strings.IndexByte(s, 0) >= 0:
				return nil, fmt.Errorf("%w: %s.%s: NUL byte at offset %d", ErrSpec, at, fieldCommand, strings.IndexByte(s, 0))
			case len(s) > maxCommand:
				return nil, fmt.Errorf("%w: %s.%s: %d bytes, at most %d allowed", ErrSpec, at, fieldCommand, len(s), maxCommand)
			}
			ext.command = s
		}
		if v, ok := bv.Get(fieldTimeout); ok && !v.IsNull() {
			f, ok := v.Float64()
			switch {
			case v.Type() != canonjson.Number || !ok:
				return nil, fmt.Errorf("%w: %s.%s: want number, got %s", ErrSpec, at, fieldTimeout, v.Type())
			case !(f > 0) || f > maxTimeoutSeconds || math.IsInf(f, 0):
				return nil, fmt.Errorf("%w: %s.%s: %s is not in (0, %d] seconds", ErrSpec, at, fieldTimeout, truncate(v.Literal(), 32), maxTimeoutSeconds)
			}
			ext.timeout = time.Duration(f * float64(time.Second))
			if ext.timeout <= 0 {
				return nil, fmt.Errorf("%w: %s.%s: %s is below a nanosecond", ErrSpec, at, fieldTimeout, truncate(v.Literal(), 32))
			}
		}
		for _, list := range []string{"setup", "teardown"} {
			lv, _ := bv.Get(list)
			for j, e := range lv.Elems() {
				s, _ := e.Str()
				if k := strings.IndexByte(s, 0); k >= 0 {
					return nil, fmt.Errorf("%w: %s.%s[%d]: NUL byte at offset %d", ErrSpec, at, list, j, k)
				}
				if len(s) > maxCommand {
					return nil, fmt.Errorf("%w: %s.%s[%d]: %d bytes, at most %d allowed", ErrSpec, at, list, j, len(s), maxCommand)
				}
			}
		}
		out[name] = ext
	}
	return out, nil
}

// subsetSpec returns spec reduced to the benchmarks ids names (in spec
// order): the benchmarks as written (extension fields included), the
// capabilities that name one of them with their lists reduced to those,
// and every other member unchanged. With mark, metadata gains
// ledger_subset_of = {spec_hash, benchmark_ids}, so that the subset's
// hash, and an attestation's chain, say which specification it was cut
// from. The subset is JSON (canonjson.Indent), parsed by codec/avir.
func subsetSpec(spec *avir.Spec, ids []string, mark bool) (*avir.Spec, error) {
	keep := map[string]bool{}
	for _, id := range ids {
		keep[id] = true
	}
	root := spec.Value()
	benches, _ := root.Get("benchmarks")
	var nb []canonjson.Value
	for _, b := range benches.Elems() {
		id, _ := b.Get("id")
		if s, _ := id.Str(); keep[s] {
			nb = append(nb, b)
		}
	}
	caps, _ := root.Get("capabilities")
	var nc []canonjson.Value
	for _, c := range caps.Elems() {
		list, _ := c.Get("benchmarks")
		var kept []canonjson.Value
		for _, e := range list.Elems() {
			if s, _ := e.Str(); keep[s] {
				kept = append(kept, e)
			}
		}
		if len(kept) > 0 {
			nc = append(nc, c.With("benchmarks", canonjson.MakeArray(kept...)))
		}
	}
	root = root.With("benchmarks", canonjson.MakeArray(nb...)).With("capabilities", canonjson.MakeArray(nc...))
	if mark {
		idv := make([]canonjson.Value, len(ids))
		for i, id := range ids {
			idv[i] = canonjson.MakeString(id)
		}
		meta, ok := root.Get("metadata")
		if !ok || meta.Type() != canonjson.Object {
			meta = canonjson.MakeObject()
		}
		meta = meta.With("ledger_subset_of", canonjson.MakeObject(
			canonjson.Member{Key: "spec_hash", Value: canonjson.MakeString(spec.Hash())},
			canonjson.Member{Key: "benchmark_ids", Value: canonjson.MakeArray(idv...)},
		))
		root = root.With("metadata", meta)
	}
	sub, err := avir.ParseSpec(append(canonjson.Indent(root), '\n'))
	if err != nil {
		return nil, fmt.Errorf("avirrun: specification reduced to %s does not parse: %w", strings.Join(ids, ", "), err)
	}
	return sub, nil
}
