package avir

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// The spec hash of the reference vector, as the reference computed it.
const vectorSpecHash = "d810fe688a41d394a8b347e09d994311037afa73b7d6e8f0f69bba497e2cd804"

func TestSpecHashMatchesReferenceVector(t *testing.T) {
	s, err := ParseSpec(readFile(t, filepath.Join(vectorDir, "01_verified_L2.spec.json")))
	if err != nil {
		t.Fatal(err)
	}
	if s.Hash() != vectorSpecHash {
		t.Errorf("hash %s, want %s", s.Hash(), vectorSpecHash)
	}
	a, err := ParseAttestation(readFile(t, filepath.Join(vectorDir, "01_verified_L2.attestation.json")))
	if err != nil {
		t.Fatal(err)
	}
	if a.SpecHash() != s.Hash() {
		t.Errorf("attestation names spec %s, spec hashes to %s", a.SpecHash(), s.Hash())
	}
}

// TestSpecHashIgnoresSyntax: the same specification in JSON and in YAML
// (with YAML 1.1 spellings: no/yes, a date, 0.20) has one hash, and
// defaults written out or left implicit do not change it.
func TestSpecHashIgnoresSyntax(t *testing.T) {
	p := mustParser(t)
	j := mustSpec(t, p, canonjson.Indent(fullSpec()))
	y := mustSpec(t, p, []byte(fullSpecYAML))
	if j.Syntax() != "json" || y.Syntax() != "yaml" {
		t.Errorf("syntax %s/%s", j.Syntax(), y.Syntax())
	}
	if j.Hash() != y.Hash() {
		t.Errorf("JSON %s, YAML %s", j.Hash(), y.Hash())
	}
	explicit := minimalSpec()
	for k, v := range map[string]any{"lower_is_better": false, "runs": 5, "warmup_runs": 0, "outlier_policy": "iqr", "requirements": list{}, "setup": list{}, "teardown": list{}} {
		explicit = setAt(explicit, v, "benchmarks", 0, k)
	}
	explicit = explicit.With("metadata", jv(kv{}))
	if a, b := mustSpec(t, p, canonjson.Indent(minimalSpec())).Hash(), mustSpec(t, p, canonjson.Indent(explicit)).Hash(); a != b {
		t.Errorf("implicit defaults %s, explicit defaults %s", a, b)
	}
	// But the int/float nature of a value is part of the hash, as in
	// Python: 1000 and 1000.0 are different specifications.
	asFloat := setAt(minimalSpec(), 1000.0, "benchmarks", 0, "target")
	if a, b := mustSpec(t, p, canonjson.Indent(minimalSpec())).Hash(), mustSpec(t, p, canonjson.Indent(asFloat)).Hash(); a == b {
		t.Errorf("target 1000 and 1000.0 hash alike")
	}
}

func TestParseSpecFindings(t *testing.T) {
	p := mustParser(t)
	cases := []struct {
		name, in string
		want     []string // "code field"
	}{
		{"empty input is YAML null", "", []string{"malformed "}},
		{"YAML scalar root", "just text\n", []string{"malformed "}},
		{"JSON array root", "[]", []string{"malformed "}},
		{"BOM then JSON", "\xef\xbb\xbf" + string(canonjson.Indent(minimalSpec())), nil},
		{"JSON NaN is a JSON error, not a YAML string", `{"avir_version": NaN}`, []string{"json_syntax "}},
		{"duplicate JSON key", `{"a": 1, "a": 2}`, []string{"json_syntax "}},
		{"every problem at once", `{"avir_version": 1, "system": {"name": 2}, "capabilities": [{"name": "x", "description": "d", "category": "bogus", "benchmarks": ["nope"]}], "benchmarks": [{"id": "a", "description": "d", "methodology": "m", "target": "x", "unit": "u", "tolerance": 1.5, "runs": 0}]}`,
			[]string{"malformed avir_version", "malformed system.version", "malformed system.name", "malformed capabilities[0].category",
				"unknown_benchmark_ref capabilities[0].benchmarks[0]", "malformed benchmarks[0].target",
				"tolerance_out_of_range benchmarks[0].tolerance", "runs_out_of_range benchmarks[0].runs"}},
		{"negative tolerance", string(canonjson.Indent(setAt(minimalSpec(), -0.1, "benchmarks", 0, "tolerance"))), []string{"tolerance_out_of_range benchmarks[0].tolerance"}},
		{"tolerance bounds are inclusive", string(canonjson.Indent(setAt(minimalSpec(), 1, "benchmarks", 0, "tolerance"))), nil},
		{"runs huge", string(canonjson.Indent(setAt(minimalSpec(), lit("99999999999999999999"), "benchmarks", 0, "runs"))), []string{"malformed benchmarks[0].runs"}},
		{"metadata null is kept", string(canonjson.Indent(minimalSpec().With("metadata", jv(nil)))), nil},
		{"description null", string(canonjson.Indent(setAt(minimalSpec(), nil, "system", "description"))), []string{"malformed system.description"}},
		{"capability not an object", string(canonjson.Indent(setAt(minimalSpec(), 3, "capabilities", 0))), []string{"malformed capabilities[0]"}},
		{"YAML tab indentation", "avir_version: 1\n\tsystem: x\n", []string{"yaml_syntax "}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := p.ParseSpec([]byte(c.in))
			got := codes(codec.FindingsOf(err))
			if !slices.Equal(sortedCopy(got), sortedCopy(c.want)) {
				t.Errorf("got %q\nwant %q", got, c.want)
			}
			if err != nil && !errors.Is(err, codec.ErrMalformed) {
				t.Errorf("error %v does not wrap codec.ErrMalformed", err)
			}
		})
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestFindingOffsets: a finding's offset is where its value starts in
// the input (or its parent object, for a missing member).
func TestFindingOffsets(t *testing.T) {
	p := mustParser(t)
	cases := []struct {
		name, file, field, at string
	}{
		{"enum", "bad_category_enum.spec.json", "capabilities[0].category", `"vision"`},
		{"semantic", "bad_runs_zero.spec.json", "benchmarks[0].runs", `0,`},
		{"missing member at parent", "bad_missing_summary.attestation.json", "results.summary", `{`},
		{"typed", "bad_statistics_type.attestation.json", "results.benchmarks[0].statistics.mean", `"433.6"`},
		{"verify finding", "bad_threshold_mismatch.attestation.json", "results.benchmarks[0].threshold", `340.0`},
		{"yaml", "bad_yaml_non_finite.spec.yaml", "benchmarks[0].target", `.inf`},
		{"yaml duplicate key at its second use", "bad_yaml_duplicate_key.spec.yaml", "avir_version", `avir_version: 1.0.1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := readFile(t, filepath.Join(sampleDir, c.file))
			var fs []codec.Finding
			if strings.Contains(c.file, ".spec.") {
				_, err := p.ParseSpec(data)
				fs = codec.FindingsOf(err)
			} else if a, err := p.ParseAttestation(data); err != nil {
				fs = codec.FindingsOf(err)
			} else {
				fs = a.Verify(VerifyOptions{})
			}
			for _, f := range fs {
				if f.Field != c.field {
					continue
				}
				if f.Offset < 0 || f.Offset >= int64(len(data)) || !bytes.HasPrefix(data[f.Offset:], []byte(c.at)) {
					end := min(int(f.Offset)+20, len(data))
					t.Fatalf("offset %d points at %q, want %q", f.Offset, data[max(f.Offset, 0):end], c.at)
				}
				return
			}
			t.Fatalf("no finding for %s in %v", c.field, fs)
		})
	}
}

func TestYAMLScalars(t *testing.T) {
	// Expectations are PyYAML 6 safe_load results (TestYAMLMatchesPyYAML
	// re-checks them against PyYAML when it is installed).
	cases := map[string]string{
		"435": "435", "0.20": "0.2", "1e3": `"1e3"`, "1.0e+3": "1000.0", "1.0e3": `"1.0e3"`,
		"yes": "true", "Off": "false", "y": `"y"`, "~": "null", "": "null", "010": "8", "08": `"08"`,
		"0x1F": "31", "0b11": "3", "1:30": "90", "1_000": "1000", "-0": "0", ".5": "0.5", "-.5": `"-.5"`,
		"2025-01-15": `"2025-01-15"`, "'yes'": `"yes"`, "!!str 1": `"1"`, "!!float 2": "2.0",
		"123456789012345678901234567890": "123456789012345678901234567890",
	}
	for in, want := range cases {
		yd := parseYAML([]byte("k: " + in + "\n"))
		if len(yd.findings) > 0 {
			t.Errorf("%q: %v", in, yd.findings)
			continue
		}
		v, _ := yd.value.Get("k")
		if got := string(canonjson.Canonical(v)); got != want {
			t.Errorf("%q: got %s, want %s", in, got, want)
		}
	}
}

// TestYAMLAliasBudget: aliases cannot expand a small text into a huge
// value, and the conversion stays fast.
func TestYAMLAliasBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 30; i++ {
		b.WriteString("a" + itoa(i) + ": &a" + itoa(i) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + itoa(i-1))
		}
		b.WriteString("]\n")
	}
	yd := parseYAML([]byte(b.String()))
	if len(yd.findings) == 0 {
		t.Fatal("alias bomb accepted")
	}
}

func itoa(i int) string { return big.NewInt(int64(i)).String() }

func TestVerifyReferenceVectors(t *testing.T) {
	s, err := ParseSpec(readFile(t, filepath.Join(vectorDir, "01_verified_L2.spec.json")))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file string
		want []string
	}{
		{"01_verified_L2.attestation.json", nil},
		{"93_bad_signature.attestation.json", []string{"signature_invalid signature.signature"}},
	} {
		a, err := ParseAttestation(readFile(t, filepath.Join(vectorDir, c.file)))
		if err != nil {
			t.Fatal(err)
		}
		for _, opts := range []VerifyOptions{{}, {Spec: s}} {
			rep := a.VerifyReport(opts)
			if got := codes(rep.Findings); !slices.Equal(got, c.want) {
				t.Errorf("%s (spec %v): got %q, want %q", c.file, opts.Spec != nil, got, c.want)
			}
			if !rep.SignatureChecked {
				t.Errorf("%s: signature not checked", c.file)
			}
		}
		if a.Form() != codec.FormReference || a.Level() != "L2" || a.Verdict() != "VERIFIED" {
			t.Errorf("%s: form %s level %s verdict %s", c.file, a.Form(), a.Level(), a.Verdict())
		}
		if a.Signer() != "ed25519:b2a131615df7fb24e1c4e30ab75c988225ed8ae6521187f6e5630d47cea0c8a1" {
			t.Errorf("signer %s", a.Signer())
		}
		if !a.Timestamp().Equal(time.Date(2025, 1, 15, 10, 5, 23, 0, time.UTC)) || a.ID() != a.Chain().ChainHash || a.SystemKey() != "seedref-01_verified_L2 v2.0.0" {
			t.Errorf("accessors: %v %s %s", a.Timestamp(), a.ID(), a.SystemKey())
		}
		if passed, total, rate := a.PassRate(); passed != 2 || total != 2 || rate != 1 {
			t.Errorf("pass rate %d/%d %v", passed, total, rate)
		}
	}
}

// TestBuildReproducesReferenceVector: built from the vector's spec, run
// values, environment and times, the attestation is byte for byte the
// reference's (but for the signature, whose private key is not public):
// same statistics with the same int/float nature, same hashes, same
// chain, same indentation.
func TestBuildReproducesReferenceVector(t *testing.T) {
	s, err := ParseSpec(readFile(t, filepath.Join(vectorDir, "01_verified_L2.spec.json")))
	if err != nil {
		t.Fatal(err)
	}
	a, err := BuildAttestation(BuildInput{
		Spec: s, SpecSource: "https://example.invalid/01_verified_L2",
		Runs: map[string][]canonjson.Value{
			"memory_entity_creation": runsOf(420.0, 399.0, 450.0, 430.5, 441.25),
			"task_decomposition":     runsOf(1210, 1100, 1300, 1180, 1250),
		},
		Environment: Environment{Container: "docker", OS: "linux", Arch: "x86_64", PythonVersion: "3.11.7", CPUCores: 16, MemoryGB: 125.7},
		Verifier:    Verifier{Provider: "claude", Model: "claude-sonnet-4-20250514", InstanceID: "seedref0"},
		Level:       "L2",
		Started:     time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC),
		Completed:   time.Date(2025, 1, 15, 10, 5, 23, 0, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	vec, err := ParseAttestation(readFile(t, filepath.Join(vectorDir, "01_verified_L2.attestation.json")))
	if err != nil {
		t.Fatal(err)
	}
	want := canonjson.Indent(vec.Value().With("signature", canonjson.MakeNull()))
	if !bytes.Equal(a.Bytes(), want) {
		t.Errorf("built:\n%s\nreference:\n%s", a.Bytes(), want)
	}
	if a.ID() != vec.ID() {
		t.Errorf("chain hash %s, reference %s", a.ID(), vec.ID())
	}
}

func TestSignAndVerify(t *testing.T) {
	key := sampleKey()
	a := build(t, spec(t, fullSpec()), runsPass, "L3")
	if a.Signed() || a.Signer() != "" {
		t.Fatal("built attestation is signed")
	}
	rep := a.VerifyReport(VerifyOptions{})
	if len(rep.Findings) != 0 || rep.SignatureChecked {
		t.Fatalf("unsigned: %v checked=%v", rep.Findings, rep.SignatureChecked)
	}
	if !hasFact(rep.Facts, "SHOULD be signed") {
		t.Errorf("unsigned L3 has no note: %v", rep.Facts)
	}
	s, err := Sign(a, key)
	if err != nil {
		t.Fatal(err)
	}
	rep = s.VerifyReport(VerifyOptions{Spec: spec(t, fullSpec())})
	if len(rep.Findings) != 0 || !rep.SignatureChecked {
		t.Fatalf("signed: %v checked=%v", rep.Findings, rep.SignatureChecked)
	}
	if want := "ed25519:" + hex.EncodeToString(key.Public().(ed25519.PublicKey)); s.Signer() != want {
		t.Errorf("signer %s, want %s", s.Signer(), want)
	}
	if s.ID() != a.ID() {
		t.Error("signing changed the chain hash")
	}
	// Signing again with another key replaces the signature.
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	s2, err := Sign(s, other)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Signer() == s.Signer() || len(s2.Verify(VerifyOptions{})) != 0 {
		t.Error("re-signing did not replace the signature")
	}
	if _, err := Sign(a, ed25519.PrivateKey{1, 2, 3}); err == nil {
		t.Error("short private key accepted")
	}
}

func hasFact(fs []codec.Fact, substr string) bool {
	for _, f := range fs {
		if strings.Contains(f.Value, substr) {
			return true
		}
	}
	return false
}

// TestVerifyRecomputation covers the verdict recomputation's edge cases
// on edited, re-hashed and re-signed attestations (so that only the
// recomputation can object).
func TestVerifyRecomputation(t *testing.T) {
	key := sampleKey()
	full := spec(t, fullSpec())
	base := build(t, full, runsPass, "L2").Value()
	item := func(i int, keys ...any) []any { return append([]any{"results", "benchmarks", i}, keys...) }
	cases := []struct {
		name     string
		edit     func(canonjson.Value) canonjson.Value
		withSpec bool
		want     []string
		fact     string
	}{
		{"unchanged", func(v canonjson.Value) canonjson.Value { return v }, false, nil, ""},
		{"mean within rounding of the threshold accepts either verdict",
			func(v canonjson.Value) canonjson.Value {
				v = setAt(v, 348.0004, item(0, "statistics", "mean")...)
				v = setAt(v, 348.0004, item(0, "result")...)
				v = setAt(v, 348.0, item(0, "statistics", "min")...)
				return setAt(v, "FAIL", item(0, "verdict")...)
			}, false, []string{"summary_mismatch results.summary.passed", "summary_mismatch results.summary.failed",
				"summary_mismatch results.summary.pass_rate", "verdict_mismatch verdict", "verdict_details_mismatch verdict_details"}, ""},
		{"mean just outside rounding is decided",
			func(v canonjson.Value) canonjson.Value {
				v = setAt(v, 347.999, item(0, "statistics", "mean")...)
				v = setAt(v, 347.999, item(0, "result")...)
				return setAt(v, 300.0, item(0, "statistics", "min")...)
			}, false, []string{"benchmark_verdict_mismatch results.benchmarks[0].verdict"}, ""},
		{"direction from reason when threshold is absent",
			func(v canonjson.Value) canonjson.Value {
				v = setAt(v, deleted, item(1, "threshold")...)
				return setAt(v, 200.0, item(1, "statistics", "mean")...) // 200 > 150.625, lower is better: FAIL
			}, false, []string{"benchmark_verdict_mismatch results.benchmarks[1].verdict", "result_mismatch results.benchmarks[1].result",
				"statistics_inconsistent results.benchmarks[1].statistics.mean"}, ""},
		{"direction from the spec beats the reason",
			func(v canonjson.Value) canonjson.Value {
				v = setAt(v, deleted, item(1, "threshold")...)
				return setAt(v, "Mean 102.80 >= threshold 90.38", item(1, "reason")...)
			}, true, nil, ""},
		{"default direction is stated",
			func(v canonjson.Value) canonjson.Value {
				v = setAt(v, deleted, item(0, "threshold")...)
				return setAt(v, deleted, item(0, "reason")...)
			}, false, nil, "assumed higher is better"},
		{"count of one with a spread",
			func(v canonjson.Value) canonjson.Value {
				v = setAt(v, 1, item(2, "statistics", "count")...)
				return setAt(v, 0, item(2, "statistics", "outliers_removed")...)
			}, false, []string{"statistics_inconsistent results.benchmarks[2].statistics.std_dev", "statistics_inconsistent results.benchmarks[2].statistics.max",
				"level_evidence results.benchmarks[2].statistics.count"}, ""},
		{"std_dev beyond the range",
			func(v canonjson.Value) canonjson.Value { return setAt(v, 50.0, item(1, "statistics", "std_dev")...) },
			false, []string{"statistics_inconsistent results.benchmarks[1].statistics.std_dev"}, ""},
		{"level from runs in the spec-text member",
			func(v canonjson.Value) canonjson.Value { return setAt(v, 4, item(1, "runs")...) },
			false, []string{"level_evidence results.benchmarks[1].runs"}, ""},
		{"no level stated",
			func(v canonjson.Value) canonjson.Value { return v.Without("verification_level") },
			false, nil, "run counts not checked"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := resign(t, rechain(c.edit(base)), key)
			a, err := fromValue(v)
			if err != nil {
				t.Fatal(err)
			}
			opts := VerifyOptions{}
			if c.withSpec {
				opts.Spec = full
			}
			rep := a.VerifyReport(opts)
			if got := codes(rep.Findings); !slices.Equal(sortedCopy(got), sortedCopy(c.want)) {
				t.Errorf("got %q\nwant %q", got, c.want)
			}
			if c.fact != "" && !hasFact(rep.Facts, c.fact) {
				t.Errorf("no fact %q in %v", c.fact, rep.Facts)
			}
		})
	}
}

// TestOverallVerdictRule pins section 10.2 and the INCONCLUSIVE decision.
func TestOverallVerdictRule(t *testing.T) {
	for _, c := range []struct {
		passed, total int
		want          string
	}{{0, 0, "INVALID"}, {5, 5, "VERIFIED"}, {3, 5, "PARTIAL"}, {2, 3, "PARTIAL"}, {59, 100, "FAILED"}, {60, 100, "PARTIAL"}, {0, 4, "FAILED"}} {
		if got := OverallVerdict(c.passed, c.total); got != c.want {
			t.Errorf("%d/%d: %s, want %s", c.passed, c.total, got, c.want)
		}
	}
	empty := build(t, spec(t, setAt(setAt(minimalSpec(), list{}, "benchmarks"), list{}, "capabilities")), nil, "L1")
	for verdict, ok := range map[string]bool{"INVALID": true, "INCONCLUSIVE": true, "VERIFIED": false} {
		a, err := fromValue(setAt(empty.Value(), verdict, "verdict"))
		if err != nil {
			t.Fatal(err)
		}
		if got := len(a.Verify(VerifyOptions{})) == 0; got != ok {
			t.Errorf("no benchmarks, verdict %s: accepted=%v, want %v", verdict, got, ok)
		}
	}
	partial := signed(t, build(t, spec(t, fullSpec()), runsAccuracyFails, "L2"))
	a, err := fromValue(setAt(partial, "INCONCLUSIVE", "verdict"))
	if err != nil {
		t.Fatal(err)
	}
	if got := codes(a.Verify(VerifyOptions{})); !slices.Equal(got, []string{"verdict_mismatch verdict"}) {
		t.Errorf("INCONCLUSIVE over 2/3 passed: %q", got)
	}
}

func TestBuildErrors(t *testing.T) {
	full := spec(t, fullSpec())
	good := BuildInput{Spec: full, Runs: runsPass, Level: "L2", Started: sampleStarted, Completed: sampleCompleted}
	cases := map[string]func(*BuildInput){
		"no spec":          func(in *BuildInput) { in.Spec = nil },
		"bad level":        func(in *BuildInput) { in.Level = "L0" },
		"completed before": func(in *BuildInput) { in.Completed = sampleStarted.Add(-time.Second) },
		"missing runs": func(in *BuildInput) {
			in.Runs = map[string][]canonjson.Value{"memory_entity_creation": runsPass["memory_entity_creation"]}
		},
		"unknown id": func(in *BuildInput) {
			in.Runs = map[string][]canonjson.Value{"nope": runsOf(1)}
			for k, v := range runsPass {
				in.Runs[k] = v
			}
		},
		"too few runs": func(in *BuildInput) {
			in.Runs = map[string][]canonjson.Value{"memory_entity_creation": runsOf(1, 2), "semantic_search_latency": runsPass["semantic_search_latency"], "task_decomposition_accuracy": runsPass["task_decomposition_accuracy"]}
		},
		"string run": func(in *BuildInput) {
			r := map[string][]canonjson.Value{}
			for k, v := range runsPass {
				r[k] = v
			}
			r["semantic_search_latency"] = runsOf("1", 2, 3, 4, 5)
			in.Runs = r
		},
		"int beyond 2^53": func(in *BuildInput) {
			r := map[string][]canonjson.Value{}
			for k, v := range runsPass {
				r[k] = v
			}
			r["semantic_search_latency"] = []canonjson.Value{lit("9007199254740993"), lit("1"), lit("1"), lit("1"), lit("1")}
			in.Runs = r
		},
		"year 10000": func(in *BuildInput) { in.Completed = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
	}
	if _, err := BuildAttestation(good); err != nil {
		t.Fatalf("good input: %v", err)
	}
	for name, edit := range cases {
		in := good
		edit(&in)
		if _, err := BuildAttestation(in); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	zs := spec(t, setAt(minimalSpec(), "zscore", "benchmarks", 0, "outlier_policy"))
	if _, err := BuildAttestation(BuildInput{Spec: zs, Runs: map[string][]canonjson.Value{"ops": runsOf(1, 2, 3, 4, 5)}, Level: "L1"}); err == nil {
		t.Error("zscore: no error")
	}
}

func TestBuildTimes(t *testing.T) {
	for _, c := range []struct {
		start, end time.Time
		ts         string
		dur        float64
	}{
		{time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC), time.Date(2025, 1, 15, 10, 5, 23, 0, time.UTC), "2025-01-15T10:05:23Z", 323.0},
		{time.Date(2025, 2, 1, 8, 0, 0, 0, time.UTC), time.Date(2025, 2, 1, 8, 1, 2, 602548999, time.UTC), "2025-02-01T08:01:02.602548Z", 62.6},
		{time.Date(2025, 2, 1, 8, 0, 0, 0, time.FixedZone("x", 3600)), time.Date(2025, 2, 1, 8, 0, 0, 5000, time.FixedZone("x", 3600)), "2025-02-01T07:00:00.000005Z", 0.0},
	} {
		b, err := BuildAttestation(BuildInput{Spec: spec(t, minimalSpec()), Runs: map[string][]canonjson.Value{"ops": runsOf(1000, 1001, 999, 1000, 1002)}, Level: "L2", Started: c.start, Completed: c.end})
		if err != nil {
			t.Fatal(err)
		}
		if b.Chain().Timestamp != c.ts || b.Execution().CompletedAt != c.ts || *b.Execution().DurationSeconds != c.dur {
			t.Errorf("%v..%v: timestamp %s duration %v, want %s %v", c.start, c.end, b.Chain().Timestamp, *b.Execution().DurationSeconds, c.ts, c.dur)
		}
	}
}

func TestPyRound(t *testing.T) {
	// Values from CPython 3.11: round(x, n).
	for _, c := range []struct {
		x    float64
		n    int
		want float64
	}{{2.675, 2, 2.67}, {0.0005, 3, 0.001}, {1.0005, 3, 1.0}, {0.1235, 3, 0.123}, {433.6, 3, 433.6}, {0.8549999999999999, 3, 0.855}, {1e300, 3, 1e300}, {2.5, 0, 2.0}, {150.625, 3, 150.625}} {
		if got := pyRound(pyFloat(c.x), c.n).f; got != c.want {
			t.Errorf("round(%v, %d) = %v, want %v", c.x, c.n, got, c.want)
		}
	}
	if got := pyRound(pyFloat(-0.0004), 3).f; got != 0 || !math.Signbit(got) {
		t.Errorf("round(-0.0004, 3) = %v, want -0.0", got)
	}
	if got := pyRound(pyInt(7), 3); !got.isInt || got.i != 7 {
		t.Errorf("round(7, 3) = %+v, want the int 7", got)
	}
	// format(x, ".0%") and format(x, ".2f") from CPython.
	for _, c := range []struct {
		n    pyNum
		pct  string
		fix2 string
	}{{pyFloat(0.125), "12%", "0.12"}, {pyFloat(0.285), "28%", "0.28"}, {pyInt(1), "100%", "1.00"}, {pyFloat(2.675), "268%", "2.67"}, {pyInt(1208), "120800%", "1208.00"}} {
		if got := pyFormatPercent(c.n); got != c.pct {
			t.Errorf("format(%+v, '.0%%') = %s, want %s", c.n, got, c.pct)
		}
		if got := pyFormatFixed(c.n, 2); got != c.fix2 {
			t.Errorf("format(%+v, '.2f') = %s, want %s", c.n, got, c.fix2)
		}
	}
}

// TestFloatSqrtOfFrac: for a float64 argument the correctly rounded
// square root is math.Sqrt's (IEEE 754 requires sqrt to be correctly
// rounded), so the two must agree everywhere.
func TestFloatSqrtOfFrac(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		f := math.Ldexp(rng.Float64()+0.5, rng.IntN(200)-100)
		if i%7 == 0 {
			f = float64(rng.IntN(1 << 20)) // exact squares and small ints too
		}
		r := new(big.Rat).SetFloat64(f)
		if got, want := floatSqrtOfFrac(r.Num(), r.Denom()), math.Sqrt(f); got != want {
			t.Fatalf("sqrt(%v) = %v, want %v", f, got, want)
		}
	}
}

// TestCalcStatsIntFloat pins Python's int/float results (values from
// CPython 3.11's statistics module).
func TestCalcStatsIntFloat(t *testing.T) {
	st, err := calcStats([]pyNum{pyInt(1210), pyInt(1100), pyInt(1300), pyInt(1180), pyInt(1250)}, "iqr")
	if err != nil {
		t.Fatal(err)
	}
	if !st.mean.isInt || st.mean.i != 1208 || !st.median.isInt || st.median.i != 1210 || st.stdDev.isInt {
		t.Errorf("ints: mean %+v median %+v std %+v", st.mean, st.median, st.stdDev)
	}
	st, _ = calcStats([]pyNum{pyInt(1), pyInt(2)}, "none")
	if st.mean.isInt || st.mean.f != 1.5 || st.median.isInt || st.median.f != 1.5 {
		t.Errorf("1, 2: mean %+v median %+v", st.mean, st.median)
	}
	st, _ = calcStats([]pyNum{pyInt(7)}, "iqr")
	if !st.stdDev.isInt || st.stdDev.i != 0 || st.count != 1 {
		t.Errorf("single value: std %+v count %d", st.stdDev, st.count)
	}
	st, _ = calcStats([]pyNum{pyFloat(2.0), pyInt(2)}, "none")
	if st.max.isInt || st.min.isInt {
		t.Errorf("max/min of 2.0, 2 are the first extremes (2.0): %+v %+v", st.min, st.max)
	}
	st, _ = calcStats([]pyNum{pyInt(431), pyInt(440), pyInt(428), pyInt(436), pyInt(433), pyInt(120)}, "iqr")
	if st.count != 5 || st.outliers != 1 || st.mean.isInt || st.mean.f != 433.6 {
		t.Errorf("outlier: %+v", st)
	}
}

// TestFindingsCapped: a pathological input gets a bounded report.
func TestFindingsCapped(t *testing.T) {
	in := `{"capabilities":[` + strings.Repeat(`{"category":"x"},`, 2000) + `{}]}`
	_, err := ParseSpec([]byte(in))
	fs := codec.FindingsOf(err)
	if len(fs) != maxFindings+1 || fs[maxFindings].Code != "too_many_findings" {
		t.Fatalf("%d findings, last %+v", len(fs), fs[len(fs)-1])
	}
	if !strings.Contains(fs[maxFindings].Reason, "further findings") {
		t.Errorf("reason %q", fs[maxFindings].Reason)
	}
}

// TestParserConcurrent: one Parser serves many goroutines (run with
// -race).
func TestParserConcurrent(t *testing.T) {
	p := mustParser(t)
	specData := canonjson.Indent(fullSpec())
	attData := readFile(t, filepath.Join(vectorDir, "01_verified_L2.attestation.json"))
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if _, err := p.ParseSpec(specData); err != nil {
					t.Error(err)
				}
				a, err := p.ParseAttestation(attData)
				if err != nil {
					t.Error(err)
					return
				}
				if fs := a.Verify(VerifyOptions{}); len(fs) != 0 {
					t.Error(fs)
				}
			}
		}()
	}
	wg.Wait()
}

func TestSummaries(t *testing.T) {
	s := spec(t, fullSpec())
	sum := s.Summary()
	if sum.Kind != codec.KindAVIRSpec || sum.ID != s.Hash() || sum.Subject != "Agentic System v2.0.0" {
		t.Errorf("spec summary %+v", sum)
	}
	a, err := Sign(build(t, s, runsAccuracyFails, "L2"), sampleKey())
	if err != nil {
		t.Fatal(err)
	}
	as := a.Summary()
	if as.Kind != codec.KindAVIRAttestation || as.Form != codec.FormReference || as.ID != a.ID() || !as.Signed ||
		as.Signer != a.Signer() || as.Subject != "Agentic System v2.0.0" || !as.Time.Equal(sampleCompleted) {
		t.Errorf("attestation summary %+v", as)
	}
	want := map[string]string{
		"verdict":                               "PARTIAL (2/3 benchmarks passed (1 failed))",
		"pass rate":                             "2/3",
		"spec hash":                             s.Hash(),
		"benchmark task_decomposition_accuracy": "FAIL: mean 0.804 ratio, threshold 0.855 (target 0.9, tolerance 0.05), 5 runs",
	}
	for _, f := range as.Facts {
		if w, ok := want[f.Label]; ok {
			if f.Value != w {
				t.Errorf("fact %s = %q, want %q", f.Label, f.Value, w)
			}
			delete(want, f.Label)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing facts %v", want)
	}
}
