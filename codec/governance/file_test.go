package governance

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

var update = flag.Bool("update", false, "rewrite golden files and generated samples")

const (
	sampleDir = "../../testdata/rvww/policies"
	goldenDir = "testdata/golden"
)

// customReadGrep is the custom policy whose hash codec/rvww's
// policy_custom_hash sample carries.
func customReadGrep() Policy {
	return Policy{Name: "read-grep-small", Mode: ModeRestricted, Allow: []string{"Read", "Grep"}, Deny: []string{"Bash"},
		MaxCostMicrodollars: 5000, MaxToolCalls: 10}
}

func mustJSON(t testing.TB, p Policy) []byte {
	t.Helper()
	data, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// jsonVariant parses a valid policy file, edits the parsed document and
// writes it back the way MarshalJSON does.
func jsonVariant(t testing.TB, p Policy, edit func(v canonjson.Value) canonjson.Value) []byte {
	t.Helper()
	v, err := canonjson.Parse(mustJSON(t, p))
	if err != nil {
		t.Fatal(err)
	}
	return append(canonjson.Indent(edit(v)), '\n')
}

func str(s string) canonjson.Value { return canonjson.MakeString(s) }

func strs(ss ...string) canonjson.Value {
	var vs []canonjson.Value
	for _, s := range ss {
		vs = append(vs, str(s))
	}
	return canonjson.MakeArray(vs...)
}

func scalar(tag, value string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
}

// yamlTree returns p as a YAML mapping in policy file order.
func yamlTree(p Policy) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, v *yaml.Node) { m.Content = append(m.Content, scalar("!!str", key), v) }
	list := func(ss []string) *yaml.Node {
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, s := range ss {
			n.Content = append(n.Content, scalar("!!str", s))
		}
		return n
	}
	if p.Name != "" {
		add(fieldName, scalar("!!str", p.Name))
	}
	add(fieldMode, scalar("!!str", p.Mode.String()))
	add(fieldAllow, list(p.Allow))
	add(fieldDeny, list(p.Deny))
	add(fieldMaxCost, scalar("!!int", fmt.Sprint(p.MaxCostMicrodollars)))
	add(fieldMaxCalls, scalar("!!int", fmt.Sprint(p.MaxToolCalls)))
	return m
}

func yamlBytes(t testing.TB, n *yaml.Node) []byte {
	t.Helper()
	data, err := yaml.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// yamlVariant edits the YAML tree of p; value(n, key) finds a member.
func yamlVariant(t testing.TB, p Policy, edit func(m *yaml.Node)) []byte {
	t.Helper()
	m := yamlTree(p)
	edit(m)
	return yamlBytes(t, m)
}

func yamlMember(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	panic("no member " + key)
}

type find struct{ code, field string }

type policySample struct {
	file string
	data []byte
	want []find // nil: valid
}

func policySamples(t testing.TB) []policySample {
	c := customReadGrep()
	mal := func(fields ...string) []find {
		var fs []find
		for _, f := range fields {
			fs = append(fs, find{"malformed", f})
		}
		return fs
	}
	withJSON := func(key string, v canonjson.Value) func(canonjson.Value) canonjson.Value {
		return func(d canonjson.Value) canonjson.Value { return d.With(key, v) }
	}
	custom := mustJSON(t, c)
	return []policySample{
		{"default_restricted.json", mustJSON(t, Restricted()), nil},
		{"default_approved.json", mustJSON(t, Approved()), nil},
		{"default_autonomous.json", mustJSON(t, Autonomous()), nil},
		{"custom_read_grep.json", custom, nil},
		{"custom_read_grep.yaml", yamlBytes(t, yamlTree(c)), nil},
		{"mode_as_number.json", jsonVariant(t, c, withJSON(fieldMode, canonjson.MakeInt(0))), nil},
		{"minimal_no_lists.yaml", yamlVariant(t, Autonomous(), func(m *yaml.Node) {
			m.Content = slices.Delete(m.Content, 0, 2) // name
			m.Content = slices.Delete(m.Content, 2, 6) // allow, deny
		}), nil},

		{"bad_json_syntax.json", custom[:len(custom)-12], []find{{"json_syntax", ""}}},
		{"bad_not_object.json", jsonVariant(t, c, func(v canonjson.Value) canonjson.Value { return canonjson.MakeArray(v) }), mal("")},
		{"bad_unknown_field.json", jsonVariant(t, c, withJSON("max_retries", canonjson.MakeInt(3))), mal("max_retries")},
		{"bad_missing_field.json", jsonVariant(t, c, func(v canonjson.Value) canonjson.Value { return v.Without(fieldMaxCalls) }), mal(fieldMaxCalls)},
		{"bad_mode_name.json", jsonVariant(t, c, withJSON(fieldMode, str("yolo"))), mal(fieldMode)},
		{"bad_mode_number.json", jsonVariant(t, c, withJSON(fieldMode, canonjson.MakeInt(3))), mal(fieldMode)},
		{"bad_mode_type.json", jsonVariant(t, c, withJSON(fieldMode, canonjson.MakeBool(true))), mal(fieldMode)},
		{"bad_tool_type.json", jsonVariant(t, c, withJSON(fieldAllow, canonjson.MakeArray(str("Read"), canonjson.MakeInt(7)))), mal("allow[1]")},
		{"bad_tool_list_type.json", jsonVariant(t, c, withJSON(fieldDeny, str("Bash"))), mal(fieldDeny)},
		{"bad_tool_empty.json", jsonVariant(t, c, withJSON(fieldAllow, strs("Read", ""))), mal("allow[1]")},
		{"bad_tool_hash_separator.json", jsonVariant(t, c, withJSON(fieldAllow, strs("Read", "web-fetch"))), mal("allow[1]")},
		{"bad_tool_control_char.json", jsonVariant(t, c, withJSON(fieldDeny, strs("Ba\nsh"))), mal("deny[0]")},
		{"bad_tool_lone_surrogate.json", bytes.Replace(custom, []byte(`"Grep"`), []byte(`"\ud800"`), 1), mal("allow[1]")},
		{"bad_cost_range.json", jsonVariant(t, c, withJSON(fieldMaxCost, canonjson.MakeInt(1<<32))), mal(fieldMaxCost)},
		{"bad_cost_negative.json", jsonVariant(t, c, withJSON(fieldMaxCost, canonjson.MakeInt(-1))), mal(fieldMaxCost)},
		{"bad_cost_float.json", jsonVariant(t, c, withJSON(fieldMaxCost, canonjson.MakeFloat(5000))), mal(fieldMaxCost)},
		{"bad_calls_range.json", jsonVariant(t, c, withJSON(fieldMaxCalls, canonjson.MakeInt(65536))), mal(fieldMaxCalls)},
		{"bad_calls_string.json", jsonVariant(t, c, withJSON(fieldMaxCalls, str("10"))), mal(fieldMaxCalls)},
		{"bad_name_type.json", jsonVariant(t, c, withJSON(fieldName, canonjson.MakeInt(5))), mal(fieldName)},
		{"bad_duplicate_key.json", bytes.Replace(custom, []byte("{\n"), []byte("{\n  \"mode\": \"autonomous\",\n"), 1), []find{{"json_syntax", ""}}},
		{"bad_many_problems.json", jsonVariant(t, c, func(v canonjson.Value) canonjson.Value {
			return v.With(fieldMode, str("root")).With(fieldAllow, strs("Read", "a|b")).Without(fieldMaxCost).With("owner", str("ops"))
		}), mal(fieldMode, "allow[1]", "owner", fieldMaxCost)},

		{"bad_yaml_syntax.yaml", bytes.Replace(yamlBytes(t, yamlTree(c)), []byte("max_tool_calls: 10"), []byte("max_tool_calls: [10"), 1),
			[]find{{"yaml_syntax", ""}}},
		{"bad_yaml_alias.yaml", yamlVariant(t, c, func(m *yaml.Node) {
			allow := yamlMember(m, fieldAllow)
			allow.Anchor = "tools"
			m.Content[7] = &yaml.Node{Kind: yaml.AliasNode, Value: "tools", Alias: allow}
		}), mal(fieldDeny)},
		{"bad_yaml_duplicate_key.yaml", yamlVariant(t, c, func(m *yaml.Node) {
			m.Content = append(m.Content, scalar("!!str", fieldMode), scalar("!!str", "autonomous"))
		}), mal(fieldMode)},
		{"bad_yaml_hex_integer.yaml", yamlVariant(t, c, func(m *yaml.Node) { *yamlMember(m, fieldMaxCalls) = *scalar("!!int", "0x10") }), mal(fieldMaxCalls)},
		{"bad_yaml_unquoted_bool_tool.yaml", yamlVariant(t, c, func(m *yaml.Node) {
			a := yamlMember(m, fieldAllow)
			a.Content = append(a.Content, scalar("!!bool", "true"))
		}), mal("allow[2]")},
		{"bad_yaml_merge_key.yaml", yamlVariant(t, c, func(m *yaml.Node) {
			extra := yamlTree(Autonomous())
			m.Content = append(m.Content, scalar("!!merge", "<<"), extra)
		}), mal("")},
		{"bad_yaml_multi_document.yaml", append(append(yamlBytes(t, yamlTree(c)), "---\n"...), yamlBytes(t, yamlTree(Restricted()))...), mal("")},
		{"bad_yaml_scalar_root.yaml", []byte("restricted\n"), mal("")},
		{"bad_yaml_empty.yaml", []byte{}, mal("")},
	}
}

// TestPolicySamples checks each generated policy file parses, or fails
// exactly as its name says, and that testdata/rvww/policies holds what the
// generator makes; -update rewrites them.
func TestPolicySamples(t *testing.T) {
	all := policySamples(t)
	if *update {
		if err := os.MkdirAll(sampleDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	names := map[string]bool{}
	for _, s := range all {
		names[s.file] = true
		t.Run(s.file, func(t *testing.T) {
			path := filepath.Join(sampleDir, s.file)
			if *update {
				if err := os.WriteFile(path, s.data, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if disk, err := os.ReadFile(path); err != nil {
				t.Fatalf("%v (run go test ./codec/governance -update)", err)
			} else if !bytes.Equal(disk, s.data) {
				t.Fatalf("%s differs from the generator's output (run go test ./codec/governance -update)", path)
			}
			p, err := ParsePolicy(s.data)
			var got []find
			for _, f := range codec.FindingsOf(err) {
				got = append(got, find{f.Code, f.Field})
			}
			if !reflect.DeepEqual(got, s.want) {
				t.Fatalf("findings = %v, want %v (%v)", got, s.want, err)
			}
			if err != nil {
				if !errors.Is(err, codec.ErrMalformed) {
					t.Errorf("error %v does not wrap ErrMalformed", err)
				}
				return
			}
			// A parsed policy writes back to a file that parses to it.
			again, err := ParsePolicy(mustJSON(t, p))
			if err != nil || !reflect.DeepEqual(again, p) {
				t.Errorf("round trip: %+v, %v; want %+v", again, err, p)
			}
		})
	}
	if !*update {
		entries, err := os.ReadDir(sampleDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !names[e.Name()] {
				t.Errorf("%s is not made by the generator", e.Name())
			}
		}
	}
}

type policyGolden struct {
	File     string          `json:"file"`
	Valid    bool            `json:"valid"`
	Findings []codec.Finding `json:"findings"`
	Policy   *policyView     `json:"policy,omitempty"`
}

type policyView struct {
	Name      string   `json:"name"`
	Mode      string   `json:"mode"`
	Allow     []string `json:"allow"`
	Deny      []string `json:"deny"`
	MaxCost   uint32   `json:"max_cost_microdollars"`
	MaxCalls  uint16   `json:"max_tool_calls"`
	HashInput string   `json:"hash_input"`
	Hash      string   `json:"hash"`
}

// TestPolicyGolden parses every generated policy file and compares a stable
// rendering with testdata/golden/<file>.golden; -update rewrites them.
func TestPolicyGolden(t *testing.T) {
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range policySamples(t) {
		t.Run(s.file, func(t *testing.T) {
			p, err := ParsePolicy(s.data)
			g := policyGolden{File: s.file, Valid: err == nil, Findings: codec.FindingsOf(err)}
			if g.Findings == nil {
				g.Findings = []codec.Finding{}
			}
			if err == nil {
				g.Policy = &policyView{Name: p.Name, Mode: p.Mode.String(), Allow: nonNil(p.Allow), Deny: nonNil(p.Deny),
					MaxCost: p.MaxCostMicrodollars, MaxCalls: p.MaxToolCalls, HashInput: p.HashInput(), Hash: p.HashString()}
			}
			got, err := json.MarshalIndent(g, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join(goldenDir, s.file+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./codec/governance -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs; got:\n%s", path, got)
			}
		})
	}
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// TestCustomPolicyMatchesRVWWSample pins the custom policy that codec/rvww's
// policy_custom_hash sample names by hash.
func TestCustomPolicyMatchesRVWWSample(t *testing.T) {
	c := customReadGrep()
	if got := c.HashInput(); got != "mode=0+Read+Grep-Bash|cost=5000|calls=10" {
		t.Fatalf("HashInput = %q", got)
	}
	for _, file := range []string{"custom_read_grep.json", "custom_read_grep.yaml"} {
		p, err := ParsePolicy(policyFile(t, file))
		if err != nil || p.Hash() != c.Hash() || p.Name != c.Name {
			t.Errorf("%s: %+v, %v", file, p, err)
		}
	}
}

func policyFile(t *testing.T, name string) []byte {
	t.Helper()
	for _, s := range policySamples(t) {
		if s.file == name {
			return s.data
		}
	}
	t.Fatalf("no sample %s", name)
	return nil
}

func TestParsePolicyForms(t *testing.T) {
	want := customReadGrep()
	for _, tt := range []struct {
		name string
		in   string
	}{
		{"compact JSON", `{"name":"read-grep-small","mode":"restricted","allow":["Read","Grep"],"deny":["Bash"],"max_cost_microdollars":5000,"max_tool_calls":10}`},
		{"JSON with BOM, any key order, mode number", "\ufeff {\"max_tool_calls\":10,\"deny\":[\"Bash\"],\"mode\":0,\"allow\":[\"Read\",\"Grep\"],\"max_cost_microdollars\":5000,\"name\":\"read-grep-small\"}\n"},
		{"JSON -0", `{"name":"read-grep-small","mode":-0,"allow":["Read","Grep"],"deny":["Bash"],"max_cost_microdollars":5000,"max_tool_calls":10}`},
		{"block YAML", "name: read-grep-small\nmode: restricted\nallow:\n  - Read\n  - Grep\ndeny: [Bash]\nmax_cost_microdollars: 5000\nmax_tool_calls: 10\n"},
		{"YAML with comments, quotes, mode number", "# custom\n'name': \"read-grep-small\"  # label\nmode: 0\nallow: [\"Read\", 'Grep']\ndeny: [Bash]\nmax_cost_microdollars: 5000\nmax_tool_calls: 10\n"},
		{"YAML document marker", "---\nname: read-grep-small\nmode: restricted\nallow: [Read, Grep]\ndeny: [Bash]\nmax_cost_microdollars: 5000\nmax_tool_calls: 10\n...\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePolicy([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
	// Empty lists normalise to nil; UnmarshalJSON is ParsePolicy for JSON.
	var p Policy
	if err := json.Unmarshal([]byte(`{"mode":"approved","allow":[],"max_cost_microdollars":0,"max_tool_calls":0}`), &p); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, Policy{Mode: ModeApproved}) {
		t.Errorf("got %+v", p)
	}
	if err := json.Unmarshal([]byte(`{"mode":"approved"}`), &p); !errors.Is(err, codec.ErrMalformed) {
		t.Errorf("UnmarshalJSON of an incomplete policy: %v", err)
	}
}

func TestParsePolicyOffsets(t *testing.T) {
	for _, tt := range []struct {
		name, in, field string
		offset          int64
		reason          string
	}{
		{"JSON syntax", `{"mode": restricted}`, "", 9, "want a value"},
		{"YAML key", "mode: restricted\nmax_cost_microdollars: 5\nmax_tool_calls: 1\ncolour: blue\n", "colour", 60, "unknown field"},
		{"YAML value on a later line", "name: Zoë\nmode: restricted\nmax_cost_microdollars: x\nmax_tool_calls: 1\n", "max_cost_microdollars", 51, `got string "x"`},
		{"YAML column after a multibyte character", "mode: restricted\nallow: [Zoë, a+b]\nmax_cost_microdollars: 1\nmax_tool_calls: 1\n", "allow[1]", 31, "ambiguous"},
		{"YAML list item", "mode: 0\nallow:\n  - Read\n  - a+b\nmax_cost_microdollars: 1\nmax_tool_calls: 1\n", "allow[1]", 28, "ambiguous"},
		{"YAML syntax", "mode: 0\nallow: [Read\n", "", codec.NoOffset, "did not find expected"},
		{"too large", strings.Repeat(" ", MaxPolicySize+1), "", codec.NoOffset, "more than the 1048576 accepted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePolicy([]byte(tt.in))
			fs := codec.FindingsOf(err)
			if len(fs) == 0 {
				t.Fatal("accepted")
			}
			f := fs[0]
			if f.Field != tt.field || (tt.offset != codec.NoOffset && f.Offset != tt.offset) || !strings.Contains(f.Reason, tt.reason) {
				t.Errorf("finding %+v, want field %q offset %d reason containing %q", f, tt.field, tt.offset, tt.reason)
			}
		})
	}
}

func TestMarshalJSON(t *testing.T) {
	got := string(mustJSON(t, customReadGrep()))
	want := `{
  "name": "read-grep-small",
  "mode": "restricted",
  "allow": [
    "Read",
    "Grep"
  ],
  "deny": [
    "Bash"
  ],
  "max_cost_microdollars": 5000,
  "max_tool_calls": 10
}
`
	if got != want {
		t.Errorf("MarshalJSON:\n%s\nwant\n%s", got, want)
	}
	for _, bad := range []Policy{
		{Mode: 3},
		{Mode: ModeRestricted, Allow: []string{"a-b"}},
		{Mode: ModeRestricted, Deny: []string{""}},
		{Mode: ModeRestricted, Name: "tab\there"},
	} {
		if data, err := bad.MarshalJSON(); err == nil {
			t.Errorf("MarshalJSON(%+v) = %s, want an error", bad, data)
		}
	}
	// Through encoding/json as a field of another document.
	out, err := json.Marshal(struct{ P Policy }{Approved()})
	if err != nil || !strings.Contains(string(out), `"mode":"approved"`) {
		t.Errorf("json.Marshal = %s, %v", out, err)
	}
}
