package avir

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// The JSON Schemas of the protocol's Appendix A, verbatim.
var (
	//go:embed schemas/specification.json
	specSchemaText string
	//go:embed schemas/attestation.json
	attestationSchemaText string
)

// The schemas' own identifiers ($id), under which they are compiled.
const (
	specSchemaURL        = "https://avir-protocol.dev/schemas/v1/specification.json"
	attestationSchemaURL = "https://avir-protocol.dev/schemas/v1/attestation.json"
)

// Parser reads AVIR specifications and attestations. It holds the
// compiled Appendix A schemas (draft-07, with format assertions such as
// "uri" and "date-time" turned on), so a caller that parses many
// documents builds one with NewParser and keeps it. A Parser is immutable
// and safe for concurrent use.
type Parser struct {
	spec, attestation *jsonschema.Schema
}

// NewParser compiles the embedded schemas. It fails only if the embedded
// schemas themselves are broken.
func NewParser() (*Parser, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.AssertFormat()
	for _, s := range []struct{ url, text string }{
		{specSchemaURL, specSchemaText},
		{attestationSchemaURL, attestationSchemaText},
	} {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(s.text))
		if err != nil {
			return nil, fmt.Errorf("avir: embedded schema %s: %w", s.url, err)
		}
		if err := c.AddResource(s.url, doc); err != nil {
			return nil, fmt.Errorf("avir: embedded schema %s: %w", s.url, err)
		}
	}
	spec, err := c.Compile(specSchemaURL)
	if err != nil {
		return nil, fmt.Errorf("avir: compile %s: %w", specSchemaURL, err)
	}
	att, err := c.Compile(attestationSchemaURL)
	if err != nil {
		return nil, fmt.Errorf("avir: compile %s: %w", attestationSchemaURL, err)
	}
	return &Parser{spec: spec, attestation: att}, nil
}

// source is one input document while it is being read: its bytes, its
// JSON value, and the byte offsets of its values, computed on first use.
type source struct {
	data []byte
	root canonjson.Value
	offs offsets
}

func (s *source) offset(p path) int64 {
	if s.offs == nil {
		s.offs = jsonOffsets(s.data)
	}
	return s.offs.at(p)
}

// report collects findings about one source.
type report struct {
	src  *source
	list []codec.Finding
}

func (r *report) add(code string, p path, format string, args ...any) {
	r.list = append(r.list, codec.Finding{Code: code, Field: p.String(), Offset: r.src.offset(p), Reason: fmt.Sprintf(format, args...)})
}

func (r *report) malformed(p path, format string, args ...any) {
	r.add("malformed", p, format, args...)
}

// merge appends later findings to earlier ones, dropping a later finding
// whose field an earlier one already names (the schema and the typed
// reader often see the same problem), and orders the result by position.
func mergeFindings(first []codec.Finding, later ...[]codec.Finding) []codec.Finding {
	out := append([]codec.Finding(nil), first...)
	named := map[string]bool{}
	for _, f := range first {
		named[f.Field] = true
	}
	for _, fs := range later {
		for _, f := range fs {
			if !named[f.Field] {
				out = append(out, f)
			}
		}
		for _, f := range fs {
			named[f.Field] = true
		}
	}
	sortFindings(out)
	return capFindings(out)
}

// maxFindings bounds the findings reported for one document, so that a
// pathological input cannot produce a report many times its own size.
const maxFindings = 1000

// capFindings keeps the first maxFindings findings and says how many
// more there were.
func capFindings(fs []codec.Finding) []codec.Finding {
	if len(fs) <= maxFindings {
		return fs
	}
	more := len(fs) - maxFindings
	fs = append(fs[:maxFindings:maxFindings], codec.Finding{Code: "too_many_findings", Offset: codec.NoOffset,
		Reason: fmt.Sprintf("%d further findings not listed", more)})
	return fs
}

// sortFindings orders findings by offset (unplaced ones last), then field,
// code and reason, so that output never depends on map iteration.
func sortFindings(fs []codec.Finding) {
	less := func(a, b codec.Finding) int {
		ao, bo := a.Offset, b.Offset
		if ao < 0 {
			ao = 1 << 62
		}
		if bo < 0 {
			bo = 1 << 62
		}
		switch {
		case ao != bo:
			return cmpInt(ao, bo)
		case a.Field != b.Field:
			return strings.Compare(a.Field, b.Field)
		case a.Code != b.Code:
			return strings.Compare(a.Code, b.Code)
		}
		return strings.Compare(a.Reason, b.Reason)
	}
	slices.SortStableFunc(fs, less)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// instance converts a value to the form the schema validator reads
// (map[string]any, []any, json.Number, ...). Numbers Python cannot read
// back the same way are reported instead: integers of more than 4300
// digits (Python's json.loads refuses them) and floats beyond the float64
// range (Python reads them as inf, which has no JSON form).
func instance(r *report) any {
	var stack path
	var conv func(v canonjson.Value) any
	conv = func(v canonjson.Value) any {
		switch v.Type() {
		case canonjson.Object:
			m := make(map[string]any, v.Len())
			for _, mem := range v.Members() {
				stack = append(stack, pathElem{key: mem.Key})
				m[mem.Key] = conv(mem.Value)
				stack = stack[:len(stack)-1]
			}
			return m
		case canonjson.Array:
			a := make([]any, 0, v.Len())
			for i, e := range v.Elems() {
				stack = append(stack, pathElem{index: i, isIdx: true})
				a = append(a, conv(e))
				stack = stack[:len(stack)-1]
			}
			return a
		case canonjson.Number:
			if problem := numberProblem(v); problem != "" {
				r.malformed(append(path(nil), stack...), "%s", problem)
				return json.Number("0")
			}
			if v.IsInt() {
				return json.Number(v.Literal())
			}
			f, _ := v.Float64()
			return json.Number(canonjson.FormatFloat(f))
		case canonjson.String:
			s, _ := v.Str()
			return s
		case canonjson.Bool:
			b, _ := v.Bool()
			return b
		}
		return nil
	}
	return conv(r.src.root)
}

// validate runs a compiled schema and turns its leaf errors into findings.
func validate(sch *jsonschema.Schema, inst any, r *report) {
	err := sch.Validate(inst)
	if err == nil {
		return
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		r.add("malformed", nil, "schema validation: %v", err)
		return
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		p := pathFromPointer(r.src.root, e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, m := range k.Missing {
				r.list = append(r.list, codec.Finding{Code: "malformed", Field: p.key(m).String(), Offset: r.src.offset(p), Reason: "missing required field"})
			}
		case *kind.Type:
			r.malformed(p, "want %s, got %s", strings.Join(k.Want, " or "), k.Got)
		case *kind.Enum:
			want := make([]string, len(k.Want))
			for i, w := range k.Want {
				want[i] = display(w)
			}
			r.malformed(p, "want one of %s, got %s", strings.Join(want, ", "), display(k.Got))
		case *kind.Pattern:
			r.malformed(p, "%s does not match pattern %s", display(k.Got), k.Want)
		case *kind.Format:
			r.malformed(p, "%s is not a valid %s: %v", display(k.Got), k.Want, k.Err)
		case *kind.Minimum:
			r.malformed(p, "want >= %s, got %s", k.Want.RatString(), valueText(r.src.root, p))
		case *kind.Maximum:
			r.malformed(p, "want <= %s, got %s", k.Want.RatString(), valueText(r.src.root, p))
		default:
			msg := e.Error()
			if i := strings.Index(msg, "': "); strings.HasPrefix(msg, "at '") && i >= 0 {
				msg = msg[i+3:]
			}
			r.malformed(p, "%s", msg)
		}
	}
	walk(ve)
}

// display renders a schema-validator value as JSON.
func display(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	const max = 80
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

// valueText renders the value at p as canonical JSON (truncated).
func valueText(root canonjson.Value, p path) string {
	v := root
	for _, e := range p {
		if e.isIdx {
			elems := v.Elems()
			if e.index >= len(elems) {
				return "?"
			}
			v = elems[e.index]
			continue
		}
		v, _ = v.Get(e.key)
	}
	b := canonjson.Canonical(v)
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}
