package avir

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// TestSamples keeps testdata/avir equal to what genSamples writes: with
// -update it rewrites the directory, otherwise any difference (a stale,
// missing, edited or unknown file) fails.
func TestSamples(t *testing.T) {
	samples := genSamples(t)
	want := map[string][]byte{}
	for _, s := range samples {
		if _, dup := want[s.name]; dup {
			t.Fatalf("two samples named %s", s.name)
		}
		want[s.name] = s.data
	}
	if *update {
		if err := os.MkdirAll(sampleDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(sampleDir)
	if err != nil {
		t.Fatalf("%v (run go test ./codec/avir -update)", err)
	}
	for _, e := range entries {
		if _, ok := want[e.Name()]; ok || e.IsDir() {
			continue
		}
		if *update {
			if err := os.Remove(filepath.Join(sampleDir, e.Name())); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s: not a generated sample (run go test ./codec/avir -update)", e.Name())
	}
	for _, s := range samples {
		p := filepath.Join(sampleDir, s.name)
		if *update {
			if err := os.WriteFile(p, s.data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, s.data) {
			t.Errorf("%s: differs from the generator (run go test ./codec/avir -update)", s.name)
		}
	}
}

// TestSamplesDeterministic: generating twice gives the same bytes, so
// -update is reproducible.
func TestSamplesDeterministic(t *testing.T) {
	a, b := genSamples(t), genSamples(t)
	for i := range a {
		if !bytes.Equal(a[i].data, b[i].data) {
			t.Errorf("%s: generated twice, differs", a[i].name)
		}
	}
}

// rendering is the stable JSON form of a decode + verify result that the
// golden files hold.
type rendering struct {
	Input            string          `json:"input"`
	Spec             string          `json:"verified_against_spec,omitempty"`
	Kind             codec.Kind      `json:"kind"`
	Form             codec.Form      `json:"form,omitempty"`
	ID               string          `json:"id,omitempty"`
	Subject          string          `json:"subject,omitempty"`
	Time             string          `json:"time,omitempty"`
	Signed           bool            `json:"signed"`
	SignatureChecked bool            `json:"signature_checked"`
	Signer           string          `json:"signer,omitempty"`
	Valid            bool            `json:"valid"`
	Findings         []codec.Finding `json:"findings"`
	Facts            []codec.Fact    `json:"facts,omitempty"`
	Normalized       string          `json:"normalized,omitempty"`
}

func renderSummary(r *rendering, s codec.Summary) {
	r.Kind, r.Form, r.ID, r.Subject = s.Kind, s.Form, s.ID, s.Subject
	r.Signed, r.SignatureChecked, r.Signer = s.Signed, s.SignatureChecked, s.Signer
	if !s.Time.IsZero() {
		r.Time = s.Time.Format(time.RFC3339Nano)
	}
	r.Facts = s.Facts
}

func renderSpec(p *Parser, name string, data []byte) rendering {
	r := rendering{Input: name, Kind: codec.KindAVIRSpec, Findings: []codec.Finding{}}
	s, err := p.ParseSpec(data)
	if err != nil {
		r.Findings = codec.FindingsOf(err)
		return r
	}
	renderSummary(&r, s.Summary())
	r.Valid = true
	r.Normalized = string(canonjson.Canonical(s.Normalized()))
	return r
}

func renderAttestation(p *Parser, name string, data []byte, specName string, s *Spec) rendering {
	r := rendering{Input: name, Spec: specName, Kind: codec.KindAVIRAttestation, Findings: []codec.Finding{}}
	a, err := p.ParseAttestation(data)
	if err != nil {
		r.Findings = codec.FindingsOf(err)
		return r
	}
	renderSummary(&r, a.Summary())
	rep := a.VerifyReport(VerifyOptions{Spec: s})
	r.SignatureChecked = rep.SignatureChecked
	r.Findings = append(r.Findings, rep.Findings...)
	r.Facts = append(r.Facts, rep.Facts...)
	r.Valid = len(rep.Findings) == 0
	return r
}

type goldenCase struct {
	golden string
	render func() rendering
}

// goldenCases covers every sample (attestations with a paired spec twice:
// alone and against it) and every AVIR reference vector.
func goldenCases(t *testing.T, p *Parser) []goldenCase {
	var cases []goldenCase
	specs := map[string]*Spec{}
	loadSpec := func(dir, name string) *Spec {
		if s, ok := specs[dir+name]; ok {
			return s
		}
		s, err := p.ParseSpec(readFile(t, filepath.Join(dir, name)))
		if err != nil {
			t.Fatalf("paired spec %s: %v", name, err)
		}
		specs[dir+name] = s
		return s
	}
	type input struct {
		dir, name, spec, prefix string
	}
	var inputs []input
	for _, s := range genSamples(t) {
		inputs = append(inputs, input{sampleDir, s.name, s.spec, ""})
	}
	inputs = append(inputs,
		input{vectorDir, "01_verified_L2.spec.json", "", "vector_"},
		input{vectorDir, "01_verified_L2.attestation.json", "01_verified_L2.spec.json", "vector_"},
		input{vectorDir, "93_bad_signature.attestation.json", "01_verified_L2.spec.json", "vector_"},
	)
	for _, in := range inputs {
		data := readFile(t, filepath.Join(in.dir, in.name))
		name, golden := in.name, in.prefix+in.name
		if strings.Contains(in.name, ".spec.") {
			cases = append(cases, goldenCase{golden, func() rendering { return renderSpec(p, name, data) }})
			continue
		}
		cases = append(cases, goldenCase{golden, func() rendering { return renderAttestation(p, name, data, "", nil) }})
		if in.spec != "" {
			s := loadSpec(in.dir, in.spec)
			specName := in.spec
			cases = append(cases, goldenCase{golden + ".with_spec", func() rendering { return renderAttestation(p, name, data, specName, s) }})
		}
	}
	return cases
}

// TestGolden decodes and verifies every sample and vector and compares a
// stable rendering with testdata/golden/<name>.golden.
func TestGolden(t *testing.T) {
	p := mustParser(t)
	cases := goldenCases(t, p)
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	known := map[string]bool{}
	for _, c := range cases {
		file := c.golden + ".golden"
		known[file] = true
		got, err := json.MarshalIndent(c.render(), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join(goldenDir, file)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (run go test ./codec/avir -update)", file, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: rendering differs from the golden file (run go test ./codec/avir -update and review the diff)\n%s", file, got)
		}
	}
	entries, _ := os.ReadDir(goldenDir)
	for _, e := range entries {
		if known[e.Name()] {
			continue
		}
		if *update {
			if err := os.Remove(filepath.Join(goldenDir, e.Name())); err != nil {
				t.Error(err)
			}
			continue
		}
		t.Errorf("%s: stale golden file", e.Name())
	}
}

// TestSampleExpectations pins what each sample is for: valid samples
// verify, and each bad sample fails with the finding it is named for and,
// for tampered attestations, with nothing else. This is what makes the
// golden files reviewable: a regenerated golden that loses its finding
// fails here.
func TestSampleExpectations(t *testing.T) {
	p := mustParser(t)
	expect := map[string][]string{
		"bad_missing_required.spec.json":                  {"malformed benchmarks"},
		"bad_wrong_type.spec.json":                        {"malformed benchmarks[0].target"},
		"bad_category_enum.spec.json":                     {"malformed capabilities[0].category"},
		"bad_avir_version_pattern.spec.json":              {"malformed avir_version"},
		"bad_repository_uri.spec.json":                    {"malformed system.repository"},
		"bad_tolerance_out_of_range.spec.json":            {"tolerance_out_of_range benchmarks[0].tolerance"},
		"bad_runs_zero.spec.json":                         {"runs_out_of_range benchmarks[0].runs"},
		"bad_runs_not_integer.spec.json":                  {"malformed benchmarks[0].runs"},
		"bad_warmup_runs_negative.spec.json":              {"warmup_runs_out_of_range benchmarks[0].warmup_runs"},
		"bad_outlier_policy.spec.json":                    {"outlier_policy_invalid benchmarks[0].outlier_policy"},
		"bad_setup_not_strings.spec.json":                 {"malformed benchmarks[0].setup[1]"},
		"bad_metadata_not_object.spec.json":               {"malformed metadata"},
		"bad_duplicate_benchmark_id.spec.json":            {"duplicate_benchmark_id benchmarks[3].id"},
		"bad_unknown_benchmark_ref.spec.json":             {"unknown_benchmark_ref capabilities[0].benchmarks[1]"},
		"bad_not_object.spec.json":                        {"malformed "},
		"bad_float_overflow.spec.json":                    {"malformed benchmarks[0].target"},
		"bad_integer_too_long.spec.json":                  {"malformed benchmarks[0].target"},
		"bad_json_syntax.spec.json":                       {"json_syntax "},
		"bad_invalid_yaml.spec.yaml":                      {"yaml_syntax "},
		"bad_yaml_multiple_documents.spec.yaml":           {"yaml_syntax "},
		"bad_yaml_duplicate_key.spec.yaml":                {"malformed avir_version"},
		"bad_yaml_non_string_key.spec.yaml":               {"malformed metadata"},
		"bad_yaml_unsupported_tag.spec.yaml":              {"malformed metadata.logo"},
		"bad_yaml_non_finite.spec.yaml":                   {"malformed benchmarks[0].target"},
		"bad_yaml_bad_scalar.spec.yaml":                   {"malformed benchmarks[0].target"},
		"bad_yaml_alias_cycle.spec.yaml":                  {"malformed metadata[0][0]"},
		"bad_yaml_alias_bomb.spec.yaml":                   nil, // any malformed finding; checked below
		"bad_missing_attestation_chain.attestation.json":  {"malformed attestation_chain"},
		"bad_missing_summary.attestation.json":            {"malformed results.summary"},
		"bad_level_enum.attestation.json":                 {"malformed verification_level"},
		"bad_hash_pattern.attestation.json":               {"malformed attestation_chain.env_hash"},
		"bad_timestamp_format.attestation.json":           {"malformed attestation_chain.timestamp"},
		"bad_verdict_enum.attestation.json":               {"malformed verdict"},
		"bad_item_verdict_enum.attestation.json":          {"malformed results.benchmarks[1].verdict"},
		"bad_item_missing_id.attestation.json":            {"malformed results.benchmarks[0].benchmark_id"},
		"bad_mixed_forms.attestation.json":                {"malformed results.benchmarks[2]"},
		"bad_statistics_type.attestation.json":            {"malformed results.benchmarks[0].statistics.mean"},
		"bad_signature_shape.attestation.json":            {"malformed signature.public_key"},
		"bad_json_syntax.attestation.json":                {"json_syntax "},
		"bad_results_hash_mismatch.attestation.json":      {"results_hash_mismatch attestation_chain.results_hash"},
		"bad_env_hash_mismatch.attestation.json":          {"env_hash_mismatch attestation_chain.env_hash"},
		"bad_chain_hash_mismatch.attestation.json":        {"chain_hash_mismatch attestation_chain.chain_hash"},
		"bad_signature_invalid.attestation.json":          {"signature_invalid signature.signature"},
		"bad_signature_algorithm.attestation.json":        {"signature_unsupported_algorithm signature.algorithm"},
		"bad_public_key_invalid.attestation.json":         {"public_key_invalid signature.public_key"},
		"bad_timestamp_mismatch.attestation.json":         {"timestamp_mismatch attestation_chain.timestamp"},
		"bad_verdict_tampered.attestation.json":           {"verdict_mismatch verdict"},
		"bad_verdict_details_mismatch.attestation.json":   {"verdict_details_mismatch verdict_details"},
		"bad_summary_mismatch.attestation.json":           {"summary_mismatch results.summary.passed"},
		"bad_duration_mismatch.attestation.json":          {"duration_mismatch execution.duration_seconds"},
		"bad_benchmark_verdict_tampered.attestation.json": {"benchmark_verdict_mismatch results.benchmarks[2].verdict"},
		"bad_threshold_mismatch.attestation.json":         {"threshold_mismatch results.benchmarks[0].threshold"},
		"bad_result_mismatch.attestation.json":            {"result_mismatch results.benchmarks[0].result"},
		"bad_statistics_inconsistent.attestation.json":    {"statistics_inconsistent results.benchmarks[0].statistics.median"},
		"bad_level_L2_3_runs.attestation.json": {
			"level_evidence results.benchmarks[0].statistics.count",
			"level_evidence results.benchmarks[1].statistics.count",
			"level_evidence results.benchmarks[2].statistics.count",
		},
		"bad_level_L4_5_runs.attestation.json": {
			"level_evidence results.benchmarks[0].statistics.count",
			"level_evidence results.benchmarks[1].statistics.count",
			"level_evidence results.benchmarks[2].statistics.count",
		},
	}
	// Checked only against the paired specification; alone they verify.
	expectWithSpec := map[string][]string{
		"bad_spec_hash_mismatch.attestation.json":   {"spec_hash_mismatch attestation_chain.spec_hash"},
		"bad_spec_system_mismatch.attestation.json": {"spec_hash_mismatch attestation_chain.spec_hash", "spec_system_mismatch system.version"},
		"bad_spec_benchmarks_mismatch.attestation.json": {
			"spec_benchmarks_mismatch results.benchmarks[1].benchmark_id",
			"spec_hash_mismatch attestation_chain.spec_hash",
			"spec_benchmarks_mismatch results.benchmarks",
		},
		"bad_spec_target_mismatch.attestation.json":    {"spec_hash_mismatch attestation_chain.spec_hash", "spec_target_mismatch results.benchmarks[0].target"},
		"bad_spec_tolerance_mismatch.attestation.json": {"spec_hash_mismatch attestation_chain.spec_hash", "spec_tolerance_mismatch results.benchmarks[2].tolerance"},
		"bad_spec_runs_mismatch.attestation.json": {
			"spec_hash_mismatch attestation_chain.spec_hash",
			"spec_runs_mismatch results.benchmarks[0].statistics.count",
			"spec_runs_mismatch results.benchmarks[1].statistics.count",
			"spec_runs_mismatch results.benchmarks[2].statistics.count",
		},
	}
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	specs := map[string]*Spec{}
	for _, s := range genSamples(t) {
		var got []string
		var verifyErrs []string
		if strings.Contains(s.name, ".spec.") {
			_, err := p.ParseSpec(s.data)
			got = codes(codec.FindingsOf(err))
			if err == nil {
				specs[s.name] = mustSpec(t, p, s.data)
			}
		} else {
			a, err := p.ParseAttestation(s.data)
			if err != nil {
				got = codes(codec.FindingsOf(err))
			} else {
				got = codes(a.Verify(VerifyOptions{}))
				if s.spec != "" {
					sp := specs[s.spec]
					if sp == nil {
						sp = mustSpec(t, p, readFile(t, filepath.Join(sampleDir, s.spec)))
					}
					verifyErrs = codes(a.Verify(VerifyOptions{Spec: sp}))
				}
			}
		}
		want, isBad := expect[s.name]
		withSpec, isSpecBad := expectWithSpec[s.name]
		switch {
		case s.name == "bad_yaml_alias_bomb.spec.yaml":
			if len(got) == 0 || !strings.HasPrefix(got[0], "malformed") {
				t.Errorf("%s: got %v, want a malformed finding", s.name, got)
			}
		case isBad:
			if !slices.Equal(sorted(got), sorted(want)) {
				t.Errorf("%s: got %q, want %q", s.name, got, want)
			}
			if s.spec != "" && !strings.HasPrefix(s.name, "bad_spec_") && !slices.Equal(sorted(verifyErrs), sorted(want)) {
				t.Errorf("%s against its spec: got %q, want %q", s.name, verifyErrs, want)
			}
		case isSpecBad:
			if len(got) != 0 {
				t.Errorf("%s alone: got %q, want no findings", s.name, got)
			}
			if !slices.Equal(sorted(verifyErrs), sorted(withSpec)) {
				t.Errorf("%s against its spec: got %q, want %q", s.name, verifyErrs, withSpec)
			}
		case strings.HasPrefix(s.name, "bad_"):
			t.Errorf("%s: no expectation recorded", s.name)
		default:
			if len(got) != 0 || len(verifyErrs) != 0 {
				t.Errorf("%s: valid sample has findings %q / against spec %q", s.name, got, verifyErrs)
			}
		}
	}
}

func mustSpec(t testing.TB, p *Parser, data []byte) *Spec {
	t.Helper()
	s, err := p.ParseSpec(data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
