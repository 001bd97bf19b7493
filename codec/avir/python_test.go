package avir

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec/canonjson"
)

// Python oracles: each script re-implements a piece of the reference with
// CPython itself, so the Go emulation is checked against the real
// interpreter rather than against this package's reading of it. The tests
// skip when python3 (or the module a script needs) is missing.
var (
	//go:embed testdata/reference_check.py
	pyReferenceCheck string
	//go:embed testdata/reference_stats.py
	pyReferenceStats string
	//go:embed testdata/reference_yaml.py
	pyReferenceYAML string
)

// runPython runs script with input as JSON on stdin and decodes its JSON
// output into out. It skips the test when python3 or module is missing.
func runPython(t *testing.T, module, script string, input, out any) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	if err := exec.Command(py, "-c", "import "+module).Run(); err != nil {
		t.Skipf("python3 has no %s module", module)
	}
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("python output: %v\n%s", err, stdout)
	}
}

// TestBuiltAttestationsVerifyUnderPython: attestations this package
// builds and signs pass the reference's own checks (chain hash and
// Ed25519 signature, with the cryptography package), and CPython's json
// module reproduces their environment and results hashes; tampered ones
// fail where they should.
func TestBuiltAttestationsVerifyUnderPython(t *testing.T) {
	type result struct {
		ChainOK     bool  `json:"chain_ok"`
		SignatureOK *bool `json:"signature_ok"`
		EnvOK       bool  `json:"env_ok"`
		ResultsOK   bool  `json:"results_ok"`
	}
	yes, no := true, false
	full := spec(t, fullSpec())
	cases := []struct {
		name string
		doc  []byte
		want result
	}{
		{"built signed VERIFIED", canonjson.Indent(signed(t, build(t, full, runsPass, "L2"))), result{true, &yes, true, true}},
		{"built signed PARTIAL", canonjson.Indent(signed(t, build(t, full, runsAccuracyFails, "L3"))), result{true, &yes, true, true}},
		{"built signed L4", canonjson.Indent(signed(t, build(t, full, runsTen, "L4"))), result{true, &yes, true, true}},
		{"built unsigned", build(t, full, runsTwoFail, "L1").Bytes(), result{true, nil, true, true}},
		{"vector", readFile(t, filepath.Join(vectorDir, "01_verified_L2.attestation.json")), result{true, &yes, true, true}},
		{"vector bad signature", readFile(t, filepath.Join(vectorDir, "93_bad_signature.attestation.json")), result{true, &no, true, true}},
		{"sample bad signature", readFile(t, filepath.Join(sampleDir, "bad_signature_invalid.attestation.json")), result{true, &no, true, true}},
		{"sample bad chain hash", readFile(t, filepath.Join(sampleDir, "bad_chain_hash_mismatch.attestation.json")), result{false, &yes, true, true}},
		{"sample edited statistics", readFile(t, filepath.Join(sampleDir, "bad_results_hash_mismatch.attestation.json")), result{true, &yes, true, false}},
		{"sample edited environment", readFile(t, filepath.Join(sampleDir, "bad_env_hash_mismatch.attestation.json")), result{true, &yes, false, true}},
	}
	p := mustParser(t)
	texts := make([]string, len(cases))
	for i, c := range cases {
		texts[i] = string(c.doc)
		// And the Go side agrees with each expectation.
		a, err := p.ParseAttestation(c.doc)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := map[string]bool{}
		for _, f := range a.Verify(VerifyOptions{}) {
			got[f.Code] = true
		}
		wantSigInvalid := c.want.SignatureOK != nil && !*c.want.SignatureOK
		if got["chain_hash_mismatch"] == c.want.ChainOK || got["env_hash_mismatch"] == c.want.EnvOK ||
			got["results_hash_mismatch"] == c.want.ResultsOK || got["signature_invalid"] != wantSigInvalid {
			t.Errorf("%s: Go findings %v disagree with %+v", c.name, got, c.want)
		}
	}
	var out []result
	runPython(t, "cryptography", pyReferenceCheck, texts, &out)
	if len(out) != len(cases) {
		t.Fatalf("python returned %d results for %d cases", len(out), len(cases))
	}
	for i, c := range cases {
		g, w := out[i], c.want
		if g.ChainOK != w.ChainOK || g.EnvOK != w.EnvOK || g.ResultsOK != w.ResultsOK ||
			(g.SignatureOK == nil) != (w.SignatureOK == nil) || (g.SignatureOK != nil && *g.SignatureOK != *w.SignatureOK) {
			t.Errorf("%s: python says %+v, want %+v", c.name, fmtResult(g.ChainOK, g.SignatureOK, g.EnvOK, g.ResultsOK), fmtResult(w.ChainOK, w.SignatureOK, w.EnvOK, w.ResultsOK))
		}
	}
}

func fmtResult(chain bool, sig *bool, env, results bool) string {
	s := "unsigned"
	if sig != nil {
		s = fmt.Sprint(*sig)
	}
	return fmt.Sprintf("chain=%v signature=%s env=%v results=%v", chain, s, env, results)
}

// TestStatisticsMatchPython compares the builder's verdict items with
// CPython's statistics module on random run values: ints, floats and
// mixes, with and without outliers, of every length from 1 to 12.
func TestStatisticsMatchPython(t *testing.T) {
	type pcase struct {
		Values        []json.RawMessage `json:"values"`
		Target        json.RawMessage   `json:"target"`
		Tolerance     json.RawMessage   `json:"tolerance"`
		LowerIsBetter bool              `json:"lower_is_better"`
		OutlierPolicy string            `json:"outlier_policy"`
		ID            string            `json:"id"`
		Unit          string            `json:"unit"`
	}
	rng := rand.New(rand.NewPCG(1, 2))
	raw := func(v canonjson.Value) json.RawMessage { return json.RawMessage(canonjson.Canonical(v)) }
	var cases []pcase
	var goItems []string
	for i := 0; i < 400; i++ {
		n := 1 + i%12
		mode := rng.IntN(3) // 0 ints, 1 floats, 2 mixed
		values := make([]canonjson.Value, n)
		for j := range values {
			x := 100 + rng.NormFloat64()*15
			if rng.IntN(10) == 0 {
				x *= 3 // an outlier now and then
			}
			switch {
			case mode == 0 || (mode == 2 && rng.IntN(2) == 0):
				values[j] = canonjson.MakeInt(int64(x))
			default:
				values[j] = canonjson.MakeFloat(float64(int64(x*1000)) / float64(1+rng.IntN(8)*125))
			}
		}
		targets := []canonjson.Value{canonjson.MakeInt(100), canonjson.MakeFloat(99.5), canonjson.MakeInt(120), canonjson.MakeFloat(0.1 * 1000)}
		tols := []canonjson.Value{canonjson.MakeFloat(0.2), canonjson.MakeFloat(0.05), canonjson.MakeInt(0), canonjson.MakeFloat(0.125), canonjson.MakeInt(1)}
		target, tol := targets[rng.IntN(len(targets))], tols[rng.IntN(len(tols))]
		lower := rng.IntN(2) == 0
		policy := []string{"iqr", "none"}[rng.IntN(2)]
		b := Benchmark{ID: fmt.Sprintf("b%d", i), Unit: "u", LowerIsBetter: lower, OutlierPolicy: policy, Runs: 1, target: target, tolerance: tol}
		item, _, err := buildItem(b, values)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		goItems = append(goItems, string(canonjson.Canonical(item)))
		pc := pcase{Target: raw(target), Tolerance: raw(tol), LowerIsBetter: lower, OutlierPolicy: policy, ID: b.ID, Unit: "u"}
		for _, v := range values {
			pc.Values = append(pc.Values, raw(v))
		}
		cases = append(cases, pc)
	}
	var out []json.RawMessage
	runPython(t, "statistics", pyReferenceStats, cases, &out)
	if len(out) != len(cases) {
		t.Fatalf("python returned %d items for %d cases", len(out), len(cases))
	}
	for i := range cases {
		v, err := canonjson.Parse(out[i])
		if err != nil {
			t.Fatal(err)
		}
		if py := string(canonjson.Canonical(v)); py != goItems[i] {
			t.Errorf("case %d:\n python %s\n go     %s", i, py, goItems[i])
		}
	}
}

// TestYAMLMatchesPyYAML compares the YAML 1.1 conversion with PyYAML's
// safe_load on scalars and structures where the two must agree, and
// checks that every input the Go side rejects on purpose is one PyYAML
// either rejects or turns into something json.dumps cannot write as JSON
// the way the reference hashes it.
func TestYAMLMatchesPyYAML(t *testing.T) {
	scalars := []string{
		"1", "-1", "+1", "0", "-0", "010", "0o10", "08", "0b101", "0x_1F", "1_000", "1:30", "190:20:30", "1:60",
		"1.0", "1.", ".5", "-.5", "+.5", "1.0e+3", "1.0e3", "1e3", "1.5_0", "0.1", "1:30.5", "00.5", "3.14159265358979",
		"yes", "Yes", "YES", "no", "on", "Off", "y", "n", "true", "False", "TRUE",
		"~", "null", "Null", "NULL", "", "nil",
		"2025-01-15", "2025-1-5", "2025-01-15T10:05:23Z", "abc", "'quoted 1'", "\"2\"", "|\n  block\n",
		"!!str 12", "!!int '12'", "!!float '1'", "!!bool 'yes'", "!!null 'x'", "! 12",
		"[1, 2.0, three]", "{a: 1, b: [x, y]}", "12345678901234567890123",
		"0.30000000000000004", "1e-7", "1.0e-7", "123456789.123456789",
	}
	docs := make([]string, 0, len(scalars)+8)
	for _, s := range scalars {
		docs = append(docs, "k: "+s+"\n")
	}
	docs = append(docs,
		"a: &x {p: 1, q: [1, 2]}\nb: *x\n",
		"base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n",
		"m:\n  <<: [{a: 1}, {a: 2, b: 3}]\n  c: 4\n",
		"- a\n- - b\n  - c\n",
		"text: >-\n  folded\n  lines\n",
		"",
		"# only a comment\n",
		"unicode: \"\\u00e9\\U0001F600\"\n",
	)
	// Inputs the Go side rejects on purpose, and why PyYAML's answer
	// cannot be hashed the reference's way either.
	rejected := map[string]string{
		"k: =\n": "error", // PyYAML has no constructor for the value tag
	}
	docs = append(docs, "k: =\n")

	var out []struct {
		JSON  *string `json:"json"`
		Error string  `json:"error"`
	}
	runPython(t, "yaml", pyReferenceYAML, docs, &out)
	if len(out) != len(docs) {
		t.Fatalf("python returned %d results for %d docs", len(out), len(docs))
	}
	for i, doc := range docs {
		yd := parseYAML([]byte(doc))
		py := out[i]
		if want, ok := rejected[doc]; ok {
			if len(yd.findings) == 0 {
				t.Errorf("%q: Go accepted an input it should reject", doc)
			}
			if want == "error" && py.Error == "" {
				t.Errorf("%q: PyYAML accepted it", doc)
			}
			continue
		}
		if py.JSON == nil {
			if len(yd.findings) == 0 {
				t.Errorf("%q: PyYAML fails (%s) but Go accepted", doc, py.Error)
			}
			continue
		}
		if len(yd.findings) > 0 {
			t.Errorf("%q: Go rejected what PyYAML reads as %s: %v", doc, *py.JSON, yd.findings)
			continue
		}
		got := string(canonjson.Canonical(yd.value))
		if strings.Contains(doc, "T10:05:23Z") {
			// PyYAML's datetime prints as "2025-01-15 10:05:23+00:00";
			// the Go side keeps the source text (and says so in a fact).
			continue
		}
		if got != *py.JSON {
			t.Errorf("%q:\n python %s\n go     %s", doc, *py.JSON, got)
		}
	}
}
