package avir

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// Spec is a parsed AVIR specification that passed the Appendix A.1 schema
// and the semantic checks. It is immutable.
type Spec struct {
	raw        []byte
	root       canonjson.Value
	syntax     string
	version    string
	system     SpecSystem
	caps       []Capability
	benchmarks []Benchmark
	normalized canonjson.Value
	hash       string
	facts      []codec.Fact
}

// SpecSystem is the system a specification describes. Description and
// Repository are empty when absent.
type SpecSystem struct {
	Name        string
	Version     string
	Description string
	Repository  string
}

// Capability is one capability of the system and the benchmarks that
// demonstrate it.
type Capability struct {
	Name        string
	Description string
	Category    string
	Benchmarks  []string
}

// Benchmark is one benchmark definition with the reference's defaults
// filled in (LowerIsBetter false, Runs 5, WarmupRuns 0, OutlierPolicy
// "iqr").
type Benchmark struct {
	ID            string
	Description   string
	Methodology   string
	Target        float64
	Unit          string
	Tolerance     float64
	LowerIsBetter bool
	Runs          int
	WarmupRuns    int
	OutlierPolicy string
	Requirements  []string
	Setup         []string
	Teardown      []string

	// As written: Python keeps an int target an int (80 stays 80).
	target, tolerance canonjson.Value
}

// The outlier policies section 5.2 names.
var outlierPolicies = []string{"iqr", "zscore", "none"}

var semverRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$`)

// ParseSpec reads a specification in JSON or YAML with a Parser compiled
// for this call. Callers that parse many documents keep a Parser instead.
func ParseSpec(data []byte) (*Spec, error) {
	p, err := NewParser()
	if err != nil {
		return nil, err
	}
	return p.ParseSpec(data)
}

// ParseSpec reads a specification. Text starting with { or [ is JSON;
// anything else is read as YAML the way the reference reads it (PyYAML
// safe_load, YAML 1.1 scalar typing). The value must pass the Appendix A.1
// schema and the semantic checks: unique benchmark ids, capabilities
// naming existing benchmarks, tolerance in [0, 1], integer runs >= 1,
// integer warmup_runs >= 0, outlier_policy one of iqr, zscore, none,
// string lists for requirements, setup and teardown, and an object (or
// null) for metadata. Every problem found is returned in a
// *codec.MalformedError. A system.version that is not X.Y.Z is accepted
// (the schema allows any string) and noted in a fact.
func (ps *Parser) ParseSpec(data []byte) (*Spec, error) {
	src, syntax, facts, fs := decodeSpecText(data)
	if len(fs) > 0 {
		sortFindings(fs)
		return nil, codec.AsMalformed(capFindings(fs))
	}
	r := &report{src: src}
	inst := instance(r)
	validate(ps.spec, inst, r)
	early := r.list
	r.list = nil
	s := &Spec{raw: data, root: src.root, syntax: syntax, facts: facts}
	s.read(r)
	// The typed reader's findings go first: where it and the schema name
	// the same field, its code is the more specific one.
	if all := mergeFindings(r.list, early); len(all) > 0 {
		return nil, codec.AsMalformed(all)
	}
	s.normalized = s.normalize(src.root)
	sum := sha256.Sum256(canonjson.Canonical(s.normalized))
	s.hash = hex.EncodeToString(sum[:])
	return s, nil
}

// decodeSpecText reads text whose first non-blank character is { or [ as
// JSON and anything else as YAML. (YAML's flow style could read such text
// too, but it would turn JSON mistakes such as NaN into strings and hide
// the real error.)
func decodeSpecText(data []byte) (*source, string, []codec.Fact, []codec.Finding) {
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		v, err := canonjson.Parse(data)
		if err == nil {
			return &source{data: data, root: v}, "json", nil, nil
		}
		if se, ok := err.(*canonjson.SyntaxError); ok {
			return nil, "", nil, []codec.Finding{se.Finding()}
		}
		return nil, "", nil, []codec.Finding{{Code: "json_syntax", Offset: codec.NoOffset, Reason: err.Error()}}
	}
	yd := parseYAML(data)
	if len(yd.findings) > 0 {
		return nil, "", nil, yd.findings
	}
	return &source{data: data, root: yd.value, offs: yd.offs}, "yaml", yd.facts, nil
}

// read extracts the typed fields and runs the semantic checks.
func (s *Spec) read(r *report) {
	root := r.src.root
	if root.Type() != canonjson.Object {
		if len(r.list) == 0 {
			r.malformed(nil, "want object, got %s", typeName(root))
		}
		return
	}
	s.version, _ = r.str(root, nil, "avir_version", true)
	if sys, sp, ok := r.object(root, nil, "system", true); ok {
		s.system.Name, _ = r.str(sys, sp, "name", true)
		s.system.Version, _ = r.str(sys, sp, "version", true)
		s.system.Description, _ = r.str(sys, sp, "description", false)
		s.system.Repository, _ = r.str(sys, sp, "repository", false)
		if _, ok := sys.Get("version"); ok && s.system.Version != "" && !semverRE.MatchString(s.system.Version) {
			s.facts = append(s.facts, codec.Fact{Label: "note", Value: fmt.Sprintf("system.version %q is not semantic X.Y.Z (section 4.2); accepted, as the schema allows any string", s.system.Version)})
		}
	}

	ids := map[string]int{}
	bs, bp, benchOK := r.array(root, nil, "benchmarks", true)
	if benchOK {
		for i, bv := range bs.Elems() {
			ip := bp.idx(i)
			if bv.Type() != canonjson.Object {
				r.malformed(ip, "want object, got %s", typeName(bv))
				continue
			}
			b := s.readBenchmark(r, bv, ip)
			if b.ID != "" || bv.Has("id") {
				if first, dup := ids[b.ID]; dup {
					r.add("duplicate_benchmark_id", ip.key("id"), "benchmark id %q is already used by benchmarks[%d]", b.ID, first)
				} else {
					ids[b.ID] = i
				}
			}
			s.benchmarks = append(s.benchmarks, b)
		}
	}

	if cs, cp, ok := r.array(root, nil, "capabilities", true); ok {
		for i, cv := range cs.Elems() {
			ip := cp.idx(i)
			if cv.Type() != canonjson.Object {
				r.malformed(ip, "want object, got %s", typeName(cv))
				continue
			}
			var c Capability
			c.Name, _ = r.str(cv, ip, "name", true)
			c.Description, _ = r.str(cv, ip, "description", true)
			c.Category, _ = r.str(cv, ip, "category", true)
			if lv, lp, ok := r.array(cv, ip, "benchmarks", true); ok {
				for j, e := range lv.Elems() {
					id, ok := e.Str()
					if !ok {
						r.malformed(lp.idx(j), "want string, got %s", typeName(e))
						continue
					}
					if _, known := ids[id]; !known && benchOK {
						r.add("unknown_benchmark_ref", lp.idx(j), "capability %q names benchmark %q, which the specification does not define", c.Name, id)
					}
					c.Benchmarks = append(c.Benchmarks, id)
				}
			}
			s.caps = append(s.caps, c)
		}
	}

	if mv, ok := root.Get("metadata"); ok && mv.Type() != canonjson.Object && !mv.IsNull() {
		r.malformed(path{}.key("metadata"), "want object, got %s", typeName(mv))
	}
}

func (s *Spec) readBenchmark(r *report, bv canonjson.Value, p path) Benchmark {
	b := Benchmark{Runs: 5, OutlierPolicy: "iqr"}
	b.ID, _ = r.str(bv, p, "id", true)
	b.Description, _ = r.str(bv, p, "description", true)
	b.Methodology, _ = r.str(bv, p, "methodology", true)
	b.Unit, _ = r.str(bv, p, "unit", true)
	b.target, _ = bv.Get("target")
	b.Target, _ = r.num(bv, p, "target", true)
	b.tolerance, _ = bv.Get("tolerance")
	if tol, ok := r.num(bv, p, "tolerance", true); ok {
		b.Tolerance = tol
		if tol < 0 || tol > 1 {
			r.add("tolerance_out_of_range", p.key("tolerance"), "tolerance %s is outside [0, 1]", b.tolerance.Literal())
		}
	}
	b.LowerIsBetter, _ = r.boolean(bv, p, "lower_is_better")
	if bv.Has("runs") {
		if n, ok := r.integer(bv, p, "runs", false, false); ok {
			if n < 1 || n > 1<<31 {
				r.add("runs_out_of_range", p.key("runs"), "runs %d is not in [1, 2^31]", n)
			}
			b.Runs = int(n)
		}
	}
	if bv.Has("warmup_runs") {
		if n, ok := r.integer(bv, p, "warmup_runs", false, false); ok {
			if n < 0 || n > 1<<31 {
				r.add("warmup_runs_out_of_range", p.key("warmup_runs"), "warmup_runs %d is not in [0, 2^31]", n)
			}
			b.WarmupRuns = int(n)
		}
	}
	if pol, ok := r.str(bv, p, "outlier_policy", false); ok {
		b.OutlierPolicy = pol
		if !contains(outlierPolicies, pol) {
			r.add("outlier_policy_invalid", p.key("outlier_policy"), "outlier_policy %q is not one of %s", pol, strings.Join(outlierPolicies, ", "))
		}
	}
	b.Requirements = r.strings(bv, p, "requirements")
	b.Setup = r.strings(bv, p, "setup")
	b.Teardown = r.strings(bv, p, "teardown")
	return b
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// normalize builds the reference's Specification.to_dict(): known fields
// only, defaults filled in, values as written (ints stay ints).
func (s *Spec) normalize(root canonjson.Value) canonjson.Value {
	get := func(o canonjson.Value, key string, def canonjson.Value) canonjson.Member {
		if v, ok := o.Get(key); ok {
			return canonjson.Member{Key: key, Value: v}
		}
		return canonjson.Member{Key: key, Value: def}
	}
	empty := canonjson.MakeArray()
	sys, _ := root.Get("system")
	caps, _ := root.Get("capabilities")
	benches, _ := root.Get("benchmarks")
	ncaps := make([]canonjson.Value, 0, caps.Len())
	for _, c := range caps.Elems() {
		ncaps = append(ncaps, canonjson.MakeObject(
			get(c, "name", canonjson.MakeNull()),
			get(c, "description", canonjson.MakeNull()),
			get(c, "category", canonjson.MakeNull()),
			get(c, "benchmarks", empty),
		))
	}
	nbs := make([]canonjson.Value, 0, benches.Len())
	for _, b := range benches.Elems() {
		nbs = append(nbs, canonjson.MakeObject(
			get(b, "id", canonjson.MakeNull()),
			get(b, "description", canonjson.MakeNull()),
			get(b, "methodology", canonjson.MakeNull()),
			get(b, "target", canonjson.MakeNull()),
			get(b, "unit", canonjson.MakeNull()),
			get(b, "tolerance", canonjson.MakeNull()),
			get(b, "lower_is_better", canonjson.MakeBool(false)),
			get(b, "runs", canonjson.MakeInt(5)),
			get(b, "warmup_runs", canonjson.MakeInt(0)),
			get(b, "outlier_policy", canonjson.MakeString("iqr")),
			get(b, "requirements", empty),
			get(b, "setup", empty),
			get(b, "teardown", empty),
		))
	}
	return canonjson.MakeObject(
		get(root, "avir_version", canonjson.MakeNull()),
		canonjson.Member{Key: "system", Value: canonjson.MakeObject(
			get(sys, "name", canonjson.MakeNull()),
			get(sys, "version", canonjson.MakeNull()),
			get(sys, "description", canonjson.MakeNull()),
			get(sys, "repository", canonjson.MakeNull()),
		)},
		canonjson.Member{Key: "capabilities", Value: canonjson.MakeArray(ncaps...)},
		canonjson.Member{Key: "benchmarks", Value: canonjson.MakeArray(nbs...)},
		get(root, "metadata", canonjson.MakeObject()),
	)
}

// Hash returns the spec hash: lowercase hex SHA-256 of the canonical JSON
// of Normalized(). It is what an attestation's attestation_chain.spec_hash
// names.
func (s *Spec) Hash() string { return s.hash }

// Normalized returns the specification as the reference's
// Specification.to_dict() writes it: known fields only, in the reference's
// order, with defaults filled in.
func (s *Spec) Normalized() canonjson.Value { return s.normalized }

// Bytes returns the input the specification was parsed from. The slice
// must not be modified.
func (s *Spec) Bytes() []byte { return s.raw }

// Value returns the specification as read, as a JSON value (for YAML
// input, the value PyYAML's safe_load would build).
func (s *Spec) Value() canonjson.Value { return s.root }

// Syntax returns "json" or "yaml": how the input was read.
func (s *Spec) Syntax() string { return s.syntax }

// Version returns avir_version.
func (s *Spec) Version() string { return s.version }

// System returns the system the specification describes.
func (s *Spec) System() SpecSystem { return s.system }

// SystemKey returns "name vversion", the suite name the reference hashes
// results under.
func (s *Spec) SystemKey() string { return s.system.Name + " v" + s.system.Version }

// Capabilities returns the capabilities in document order. The slice must
// not be modified.
func (s *Spec) Capabilities() []Capability { return s.caps }

// Benchmarks returns the benchmark definitions in document order. The
// slice must not be modified.
func (s *Spec) Benchmarks() []Benchmark { return s.benchmarks }

// Benchmark returns the benchmark with the given id.
func (s *Spec) Benchmark(id string) (Benchmark, bool) {
	for _, b := range s.benchmarks {
		if b.ID == id {
			return b, true
		}
	}
	return Benchmark{}, false
}

// Summary returns the kind-independent view: ID is the spec hash, Subject
// "name vversion", Facts the syntax, version, benchmarks and capabilities
// followed by any notes from parsing.
func (s *Spec) Summary() codec.Summary {
	ids := make([]string, len(s.benchmarks))
	for i, b := range s.benchmarks {
		ids[i] = b.ID
	}
	caps := make([]string, len(s.caps))
	for i, c := range s.caps {
		caps[i] = fmt.Sprintf("%s (%s)", c.Name, c.Category)
	}
	facts := []codec.Fact{
		{Label: "syntax", Value: s.syntax},
		{Label: "avir version", Value: s.version},
		{Label: "benchmarks", Value: fmt.Sprintf("%d: %s", len(ids), strings.Join(ids, ", "))},
		{Label: "capabilities", Value: fmt.Sprintf("%d: %s", len(caps), strings.Join(caps, ", "))},
	}
	for _, b := range s.benchmarks {
		dir := "higher is better"
		if b.LowerIsBetter {
			dir = "lower is better"
		}
		facts = append(facts, codec.Fact{
			Label: "benchmark " + b.ID,
			Value: fmt.Sprintf("target %s %s, tolerance %s, %s, %d runs (%d warmup), outliers %s",
				canonjson.Canonical(b.target), b.Unit, canonjson.Canonical(b.tolerance), dir, b.Runs, b.WarmupRuns, b.OutlierPolicy),
		})
	}
	facts = append(facts, s.facts...)
	return codec.Summary{
		Kind:    codec.KindAVIRSpec,
		ID:      s.hash,
		Subject: s.SystemKey(),
		Facts:   facts,
	}
}
