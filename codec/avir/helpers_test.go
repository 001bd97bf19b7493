package avir

import (
	"crypto/ed25519"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

var update = flag.Bool("update", false, "rewrite golden files and generated samples")

// Where the generated samples, the reference vectors and the golden files
// live, relative to this package.
const (
	sampleDir = "../../testdata/avir"
	vectorDir = "../../testdata/vectors/avir"
	goldenDir = "testdata/golden"
)

// sampleKey is the deterministic Ed25519 key that signs the samples.
func sampleKey() ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("proofledger codec/avir sample signing key"))
	return ed25519.NewKeyFromSeed(seed[:])
}

// kv is an object literal for jv: alternating keys and values.
type kv []any

// list is an array literal for jv.
type list []any

// jv builds a canonjson.Value from Go test literals: nil, bool, string,
// int (an int), float64 (a float, 1.0 stays 1.0), kv, list, or a Value.
func jv(x any) canonjson.Value {
	switch x := x.(type) {
	case nil:
		return canonjson.MakeNull()
	case canonjson.Value:
		return x
	case bool:
		return canonjson.MakeBool(x)
	case string:
		return canonjson.MakeString(x)
	case int:
		return canonjson.MakeInt(int64(x))
	case float64:
		return canonjson.MakeFloat(x)
	case list:
		elems := make([]canonjson.Value, len(x))
		for i, e := range x {
			elems[i] = jv(e)
		}
		return canonjson.MakeArray(elems...)
	case []canonjson.Value:
		return canonjson.MakeArray(x...)
	case kv:
		if len(x)%2 != 0 {
			panic("kv needs key/value pairs")
		}
		ms := make([]canonjson.Member, 0, len(x)/2)
		for i := 0; i < len(x); i += 2 {
			ms = append(ms, canonjson.Member{Key: x[i].(string), Value: jv(x[i+1])})
		}
		return canonjson.MakeObject(ms...)
	}
	panic(fmt.Sprintf("jv: unsupported %T", x))
}

// lit is a number with an exact literal ("5.0", "1e400").
func lit(s string) canonjson.Value {
	v, ok := canonjson.MakeNumber(s)
	if !ok {
		panic("bad number literal " + s)
	}
	return v
}

// deleted marks a member for removal in setAt.
type deletedMarker struct{}

var deleted = deletedMarker{}

// setAt returns v with the value at keys (strings for members, ints for
// elements) replaced by nv, or removed when nv is deleted.
func setAt(v canonjson.Value, nv any, keys ...any) canonjson.Value {
	if len(keys) == 0 {
		return jv(nv)
	}
	switch k := keys[0].(type) {
	case string:
		if len(keys) == 1 {
			if _, del := nv.(deletedMarker); del {
				return v.Without(k)
			}
		}
		child, _ := v.Get(k)
		return v.With(k, setAt(child, nv, keys[1:]...))
	case int:
		elems := append([]canonjson.Value(nil), v.Elems()...)
		elems[k] = setAt(elems[k], nv, keys[1:]...)
		return canonjson.MakeArray(elems...)
	}
	panic("setAt: bad key")
}

// getAt returns the value at keys.
func getAt(v canonjson.Value, keys ...any) canonjson.Value {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			v, _ = v.Get(k)
		case int:
			v = v.Elems()[k]
		}
	}
	return v
}

// rechain recomputes an attestation's results, environment and chain
// hashes (reference formulas) after an edit, as a forger with the signing
// key would.
func rechain(v canonjson.Value) canonjson.Value {
	sys := getAt(v, "system")
	name, _ := getAt(sys, "name").Str()
	version, _ := getAt(sys, "version").Str()
	results := sha256Hex(canonjson.Canonical(resultsHashInput(name+" v"+version, getAt(v, "results", "benchmarks"))))
	env := sha256Hex(canonjson.Canonical(envHashInput(getAt(v, "environment"))))
	spec, _ := getAt(v, "attestation_chain", "spec_hash").Str()
	ts, _ := getAt(v, "attestation_chain", "timestamp").Str()
	v = setAt(v, results, "attestation_chain", "results_hash")
	v = setAt(v, env, "attestation_chain", "env_hash")
	return setAt(v, chainHash(spec, env, results, ts), "attestation_chain", "chain_hash")
}

// resign signs v's chain_hash with key.
func resign(t testing.TB, v canonjson.Value, key ed25519.PrivateKey) canonjson.Value {
	t.Helper()
	a, err := fromValue(v)
	if err != nil {
		t.Fatalf("resign: %v", err)
	}
	s, err := Sign(a, key)
	if err != nil {
		t.Fatalf("resign: %v", err)
	}
	return s.Value()
}

// codes lists findings as "code field" strings.
func codes(fs []codec.Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Code + " " + f.Field
	}
	return out
}

func mustParser(t testing.TB) *Parser {
	t.Helper()
	p, err := NewParser()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
