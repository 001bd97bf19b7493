package avir

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/canonjson"
)

// A sample is one generated document under testdata/avir. Attestations
// name the spec sample they are also verified against.
type sample struct {
	name string
	data []byte
	spec string
}

// Fixed inputs, so that -update rewrites identical bytes.
var (
	sampleStarted   = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	sampleCompleted = time.Date(2025, 3, 1, 9, 7, 41, 250000000, time.UTC)
	sampleEnv       = Environment{Container: "avir-verification:1.0.0", OS: "linux", Arch: "amd64", PythonVersion: "3.11.7", CPUCores: 8, MemoryGB: 31.2}
	sampleVerifier  = Verifier{Provider: "claude", Model: "claude-sonnet-4-20250514", InstanceID: "0b6f3c2e-5d7a-4c1e-9f4b-2a8d6e1c3b57"}
)

// fullSpec is a specification with every optional field, three benchmarks
// (one lower-is-better, one with an int target) and two capabilities.
func fullSpec() canonjson.Value {
	return jv(kv{
		"avir_version", "1.0.0",
		"system", kv{
			"name", "Agentic System",
			"version", "2.0.0",
			"description", "24/7 autonomous AI with persistent memory",
			"repository", "https://github.com/marc-shade/agentic-system-oss",
		},
		"capabilities", list{
			kv{"name", "persistent_memory", "description", "4-tier memory with automatic curation", "category", "memory",
				"benchmarks", list{"memory_entity_creation", "semantic_search_latency"}},
			kv{"name", "planning", "description", "task decomposition", "category", "reasoning",
				"benchmarks", list{"task_decomposition_accuracy"}},
		},
		"benchmarks", list{
			kv{"id", "memory_entity_creation", "description", "Create memory entities with versioning",
				"methodology", "Create 1000 entities of 100B-10KB, measure throughput",
				"target", 435, "unit", "ops/s", "tolerance", 0.2, "lower_is_better", false,
				"runs", 6, "warmup_runs", 2, "outlier_policy", "iqr",
				"requirements", list{"Qdrant vector database", "enhanced-memory-mcp server"},
				"setup", list{"docker run -d qdrant/qdrant:latest"},
				"teardown", list{"docker stop qdrant"}},
			kv{"id", "semantic_search_latency", "description", "Search 10k entities",
				"methodology", "Run 100 semantic queries, measure p50 latency",
				"target", 120.5, "unit", "ms", "tolerance", 0.25, "lower_is_better", true,
				"runs", 5, "outlier_policy", "none"},
			kv{"id", "task_decomposition_accuracy", "description", "Decompose planning tasks",
				"methodology", "Score 50 decompositions against a rubric",
				"target", 0.9, "unit", "ratio", "tolerance", 0.05},
		},
		"metadata", kv{"author", "proofledger", "created", "2025-01-15", "tags", list{"memory", "reasoning"}},
	})
}

// fullSpecYAML is fullSpec written as YAML, with YAML 1.1 typing to get
// right: a date, quoted numbers-as-strings, and a block scalar.
const fullSpecYAML = `# AVIR specification, YAML form of full.spec.json
avir_version: "1.0.0"
system:
  name: Agentic System
  version: "2.0.0"
  description: 24/7 autonomous AI with persistent memory
  repository: https://github.com/marc-shade/agentic-system-oss
capabilities:
  - name: persistent_memory
    description: 4-tier memory with automatic curation
    category: memory
    benchmarks: [memory_entity_creation, semantic_search_latency]
  - name: planning
    description: task decomposition
    category: reasoning
    benchmarks:
      - task_decomposition_accuracy
benchmarks:
  - id: memory_entity_creation
    description: Create memory entities with versioning
    methodology: >-
      Create 1000 entities of 100B-10KB,
      measure throughput
    target: 435
    unit: ops/s
    tolerance: 0.20
    lower_is_better: no
    runs: 6
    warmup_runs: 2
    outlier_policy: iqr
    requirements:
      - Qdrant vector database
      - enhanced-memory-mcp server
    setup: ["docker run -d qdrant/qdrant:latest"]
    teardown: ["docker stop qdrant"]
  - id: semantic_search_latency
    description: Search 10k entities
    methodology: Run 100 semantic queries, measure p50 latency
    target: 120.5
    unit: ms
    tolerance: 0.25
    lower_is_better: yes
    runs: 5
    outlier_policy: none
  - id: task_decomposition_accuracy
    description: Decompose planning tasks
    methodology: Score 50 decompositions against a rubric
    target: 0.9
    unit: ratio
    tolerance: 0.05
metadata:
  author: proofledger
  created: 2025-01-15
  tags: [memory, reasoning]
`

// minimalSpec has only the required fields.
func minimalSpec() canonjson.Value {
	return jv(kv{
		"avir_version", "1.0.0",
		"system", kv{"name", "Minimal System", "version", "0.1.0"},
		"capabilities", list{kv{"name", "throughput", "description", "raw speed", "category", "performance", "benchmarks", list{"ops"}}},
		"benchmarks", list{kv{"id", "ops", "description", "operations", "methodology", "count operations for 10 s", "target", 1000, "unit", "ops/s", "tolerance", 0.1}},
	})
}

const minimalSpecYAML = `avir_version: 1.0.0
system: {name: Minimal System, version: 0.1.0}
capabilities:
- {name: throughput, description: raw speed, category: performance, benchmarks: [ops]}
benchmarks:
- {id: ops, description: operations, methodology: count operations for 10 s, target: 1000, unit: ops/s, tolerance: 0.1}
`

// yaml11Spec exercises YAML 1.1 scalars, anchors and merge keys in
// metadata, where the schema lets anything through to the hash.
const yaml11Spec = `avir_version: "1.0.0"
system: {name: YAML Eleven, version: 1.2.3}
capabilities: []
benchmarks:
  - &base
    id: a
    description: first
    methodology: measure
    target: 1_000
    unit: ops/s
    tolerance: .25
  - <<: *base
    id: b
    target: 0x10
    lower_is_better: on
metadata:
  booleans: [yes, No, on, OFF, true, y, n]
  ints: [010, 0b101, 1:30, -0, +7, 08]
  floats: [1.0e+3, 1e3, 1., 190:20:30.15, -.5, .5]
  nulls: [~, null, Null, ""]
  dates: [2025-01-15, 2025-01-15 10:05:23.5Z, 2025-1-5]
  block: |
    line one
    line two
`

func spec(t testing.TB, v canonjson.Value) *Spec {
	t.Helper()
	s, err := ParseSpec(canonjson.Indent(v))
	if err != nil {
		t.Fatalf("sample spec: %v", err)
	}
	return s
}

// runsOf builds run values: ints for int literals, floats otherwise.
func runsOf(xs ...any) []canonjson.Value {
	out := make([]canonjson.Value, len(xs))
	for i, x := range xs {
		out[i] = jv(x)
	}
	return out
}

// The run values behind the verdict samples.
var (
	runsPass = map[string][]canonjson.Value{
		// 120 is an IQR outlier; the kept ints average to the float 433.6.
		"memory_entity_creation":      runsOf(431, 440, 428, 436, 433, 120),
		"semantic_search_latency":     runsOf(101.5, 98.25, 110.0, 104.75, 99.5),
		"task_decomposition_accuracy": runsOf(0.91, 0.88, 0.93, 0.9, 0.89),
	}
	runsAccuracyFails = map[string][]canonjson.Value{
		"memory_entity_creation":      runsPass["memory_entity_creation"],
		"semantic_search_latency":     runsPass["semantic_search_latency"],
		"task_decomposition_accuracy": runsOf(0.8, 0.82, 0.79, 0.81, 0.8),
	}
	runsTwoFail = map[string][]canonjson.Value{
		"memory_entity_creation":      runsOf(300, 310, 305, 298, 302, 301),
		"semantic_search_latency":     runsPass["semantic_search_latency"],
		"task_decomposition_accuracy": runsAccuracyFails["task_decomposition_accuracy"],
	}
	runsThree = map[string][]canonjson.Value{
		"memory_entity_creation":      runsOf(431, 440, 428),
		"semantic_search_latency":     runsOf(101.5, 98.25, 110.0),
		"task_decomposition_accuracy": runsOf(0.91, 0.88, 0.93),
	}
	runsTen = map[string][]canonjson.Value{
		"memory_entity_creation":      runsOf(431, 440, 428, 436, 433, 429, 441, 437, 430, 435),
		"semantic_search_latency":     runsOf(101.5, 98.25, 110.0, 104.75, 99.5, 102.0, 100.25, 103.5, 97.75, 105.0),
		"task_decomposition_accuracy": runsOf(0.91, 0.88, 0.93, 0.9, 0.89, 0.92, 0.9, 0.91, 0.87, 0.9),
	}
)

func build(t testing.TB, s *Spec, runs map[string][]canonjson.Value, level string) *Attestation {
	t.Helper()
	a, err := BuildAttestation(BuildInput{
		Spec: s, SpecSource: "https://github.com/marc-shade/agentic-system-oss/avir-spec.yaml",
		Runs: runs, Environment: sampleEnv, Verifier: sampleVerifier, Level: level,
		Started: sampleStarted, Completed: sampleCompleted,
	})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return a
}

func signed(t testing.TB, a *Attestation) canonjson.Value {
	t.Helper()
	s, err := Sign(a, sampleKey())
	if err != nil {
		t.Fatal(err)
	}
	return s.Value()
}

// genSamples generates every sample document. It is deterministic.
func genSamples(t testing.TB) []sample {
	t.Helper()
	var out []sample
	add := func(name string, data []byte, spec string) {
		out = append(out, sample{name: name, data: data, spec: spec})
	}
	addV := func(name string, v canonjson.Value, spec string) { add(name, canonjson.Indent(v), spec) }

	// Specifications.
	full := fullSpec()
	addV("valid_full.spec.json", full, "")
	add("valid_full.spec.yaml", []byte(fullSpecYAML), "")
	addV("valid_minimal.spec.json", minimalSpec(), "")
	add("valid_minimal.spec.yaml", []byte(minimalSpecYAML), "")
	add("valid_yaml11_scalars.spec.yaml", []byte(yaml11Spec), "")
	addV("valid_version_not_semver.spec.json", setAt(minimalSpec(), "2024.10", "system", "version"), "")
	noBench := setAt(setAt(minimalSpec(), list{}, "benchmarks"), list{}, "capabilities")
	addV("valid_no_benchmarks.spec.json", noBench, "")
	threeRuns := setAt(full, 3, "benchmarks", 0, "runs")
	threeRuns = setAt(threeRuns, 3, "benchmarks", 1, "runs")
	threeRuns = setAt(threeRuns, 3, "benchmarks", 2, "runs")
	addV("valid_three_runs.spec.json", threeRuns, "")

	bench0 := func(nv any, key string) canonjson.Value { return setAt(full, nv, "benchmarks", 0, key) }
	addV("bad_missing_required.spec.json", full.Without("benchmarks"), "")
	addV("bad_wrong_type.spec.json", bench0("435", "target"), "")
	addV("bad_category_enum.spec.json", setAt(full, "vision", "capabilities", 0, "category"), "")
	addV("bad_avir_version_pattern.spec.json", setAt(full, "1.0", "avir_version"), "")
	addV("bad_repository_uri.spec.json", setAt(full, "not a uri", "system", "repository"), "")
	addV("bad_tolerance_out_of_range.spec.json", bench0(1.5, "tolerance"), "")
	addV("bad_runs_zero.spec.json", bench0(0, "runs"), "")
	addV("bad_runs_not_integer.spec.json", bench0(lit("5.0"), "runs"), "")
	addV("bad_warmup_runs_negative.spec.json", bench0(-1, "warmup_runs"), "")
	addV("bad_outlier_policy.spec.json", bench0("mad", "outlier_policy"), "")
	addV("bad_setup_not_strings.spec.json", bench0(list{"docker run", 7}, "setup"), "")
	addV("bad_metadata_not_object.spec.json", setAt(full, list{"tags"}, "metadata"), "")
	addV("bad_duplicate_benchmark_id.spec.json", full.With("benchmarks", jv(append(slices.Clone(getAt(full, "benchmarks").Elems()), getAt(full, "benchmarks", 0)))), "")
	addV("bad_unknown_benchmark_ref.spec.json", setAt(full, "memory_promotion", "capabilities", 0, "benchmarks", 1), "")
	addV("bad_not_object.spec.json", jv(list{full}), "")
	add("bad_float_overflow.spec.json", bytes.Replace(canonjson.Indent(full), []byte(`"target": 435,`), []byte(`"target": 1e400,`), 1), "")
	addV("bad_integer_too_long.spec.json", bench0(lit("1"+strings.Repeat("0", maxIntDigits)), "target"), "")
	indented := canonjson.Indent(full)
	add("bad_json_syntax.spec.json", indented[:len(indented)/2], "")
	add("bad_invalid_yaml.spec.yaml", []byte(strings.Replace(fullSpecYAML, "  name: Agentic System", "  name: [Agentic System", 1)), "")
	add("bad_yaml_multiple_documents.spec.yaml", []byte(minimalSpecYAML+"---\n"+minimalSpecYAML), "")
	add("bad_yaml_duplicate_key.spec.yaml", []byte(strings.Replace(minimalSpecYAML, "system:", "avir_version: 1.0.1\nsystem:", 1)), "")
	add("bad_yaml_non_string_key.spec.yaml", []byte(minimalSpecYAML+"metadata: {yes: 1}\n"), "")
	add("bad_yaml_unsupported_tag.spec.yaml", []byte(minimalSpecYAML+"metadata: {logo: !!binary aGVsbG8=}\n"), "")
	add("bad_yaml_non_finite.spec.yaml", []byte(strings.Replace(minimalSpecYAML, "target: 1000", "target: .inf", 1)), "")
	add("bad_yaml_bad_scalar.spec.yaml", []byte(strings.Replace(minimalSpecYAML, "target: 1000", "target: !!int 'x'", 1)), "")
	add("bad_yaml_alias_cycle.spec.yaml", []byte(minimalSpecYAML+"metadata: &m [*m]\n"), "")
	var bomb strings.Builder
	bomb.WriteString(minimalSpecYAML + "metadata:\n  a0: &a0 [x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		fmt.Fprintf(&bomb, "  a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	add("bad_yaml_alias_bomb.spec.yaml", []byte(bomb.String()), "")

	// Attestations.
	fullS := spec(t, full)
	key := sampleKey()
	verified := signed(t, build(t, fullS, runsPass, "L2"))
	partial := signed(t, build(t, fullS, runsAccuracyFails, "L2"))
	failed := signed(t, build(t, fullS, runsTwoFail, "L2"))
	const fullName = "valid_full.spec.json"
	addV("verified_signed.attestation.json", verified, fullName)
	addV("partial_signed.attestation.json", partial, fullName)
	addV("failed_signed.attestation.json", failed, fullName)
	addV("verified_unsigned.attestation.json", build(t, fullS, runsPass, "L2").Value(), fullName)
	addV("verified_L4_signed.attestation.json", signed(t, build(t, fullS, runsTen, "L4")), fullName)
	addV("invalid_no_benchmarks.attestation.json", signed(t, build(t, spec(t, noBench), nil, "L1")), "valid_no_benchmarks.spec.json")
	addV("spec_form_signed.attestation.json", specFormAttestation(t, spec(t, minimalSpec()), key), "valid_minimal.spec.json")

	// Schema and typed-reading failures.
	addV("bad_missing_attestation_chain.attestation.json", verified.Without("attestation_chain"), "")
	addV("bad_missing_summary.attestation.json", setAt(verified, deleted, "results", "summary"), "")
	addV("bad_level_enum.attestation.json", setAt(verified, "L5", "verification_level"), "")
	addV("bad_hash_pattern.attestation.json", setAt(verified, "ABC123", "attestation_chain", "env_hash"), "")
	addV("bad_timestamp_format.attestation.json", setAt(verified, "2025-03-01 09:07:41", "attestation_chain", "timestamp"), "")
	addV("bad_verdict_enum.attestation.json", setAt(verified, "PASSED", "verdict"), "")
	addV("bad_item_verdict_enum.attestation.json", setAt(verified, "MAYBE", "results", "benchmarks", 1, "verdict"), "")
	addV("bad_item_missing_id.attestation.json", setAt(verified, deleted, "results", "benchmarks", 0, "benchmark_id"), "")
	mixed := setAt(verified, deleted, "results", "benchmarks", 2, "benchmark_id")
	addV("bad_mixed_forms.attestation.json", setAt(mixed, "task_decomposition_accuracy", "results", "benchmarks", 2, "id"), "")
	addV("bad_statistics_type.attestation.json", setAt(verified, "433.6", "results", "benchmarks", 0, "statistics", "mean"), "")
	addV("bad_signature_shape.attestation.json", setAt(verified, deleted, "signature", "public_key"), "")
	vb := canonjson.Indent(verified)
	add("bad_json_syntax.attestation.json", vb[:len(vb)-2], "")

	// Edits the hashes catch.
	addV("bad_results_hash_mismatch.attestation.json", setAt(verified, 2.5, "results", "benchmarks", 0, "statistics", "std_dev"), fullName)
	addV("bad_env_hash_mismatch.attestation.json", setAt(verified, 64.0, "environment", "resources", "memory_gb"), fullName)
	addV("bad_chain_hash_mismatch.attestation.json",
		resign(t, setAt(verified, sha256Hex([]byte("forged")), "attestation_chain", "chain_hash"), key), fullName)
	sig, _ := getAt(verified, "signature", "signature").Str()
	sigBytes, _ := base64.StdEncoding.DecodeString(sig)
	sigBytes[10] ^= 0x01
	addV("bad_signature_invalid.attestation.json", setAt(verified, base64.StdEncoding.EncodeToString(sigBytes), "signature", "signature"), fullName)
	addV("bad_signature_algorithm.attestation.json", setAt(verified, "ECDSA-P256", "signature", "algorithm"), fullName)
	addV("bad_public_key_invalid.attestation.json", setAt(verified, base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)[:31]), "signature", "public_key"), fullName)
	addV("bad_timestamp_mismatch.attestation.json",
		resign(t, rechain(setAt(verified, "2025-03-01T09:07:42.250000Z", "attestation_chain", "timestamp")), key), fullName)

	// Edits only the recomputations catch: nothing hashed changes, or a
	// forger holding the key re-hashed and re-signed consistently.
	addV("bad_verdict_tampered.attestation.json", setAt(partial, "VERIFIED", "verdict"), fullName)
	addV("bad_verdict_details_mismatch.attestation.json", setAt(partial, "All 3 benchmarks passed within tolerance", "verdict_details"), fullName)
	addV("bad_summary_mismatch.attestation.json", setAt(partial, 3, "results", "summary", "passed"), fullName)
	addV("bad_duration_mismatch.attestation.json", setAt(verified, 120.0, "execution", "duration_seconds"), fullName)
	forged := setAt(partial, "PASS", "results", "benchmarks", 2, "verdict")
	forged = setAt(forged, 3, "results", "summary", "passed")
	forged = setAt(forged, 0, "results", "summary", "failed")
	forged = setAt(forged, 1.0, "results", "summary", "pass_rate")
	forged = setAt(forged, "VERIFIED", "verdict")
	forged = setAt(forged, "All 3 benchmarks passed within tolerance", "verdict_details")
	addV("bad_benchmark_verdict_tampered.attestation.json", resign(t, rechain(forged), key), fullName)
	addV("bad_threshold_mismatch.attestation.json",
		resign(t, rechain(setAt(verified, 340.0, "results", "benchmarks", 0, "threshold")), key), fullName)
	addV("bad_result_mismatch.attestation.json",
		resign(t, rechain(setAt(verified, 440.0, "results", "benchmarks", 0, "result")), key), fullName)
	addV("bad_statistics_inconsistent.attestation.json",
		resign(t, rechain(setAt(verified, 460.0, "results", "benchmarks", 0, "statistics", "median")), key), fullName)
	addV("bad_level_L2_3_runs.attestation.json", signed(t, build(t, spec(t, threeRuns), runsThree, "L2")), "valid_three_runs.spec.json")
	addV("bad_level_L4_5_runs.attestation.json", signed(t, build(t, fullS, runsPass, "L4")), fullName)

	// Disagreements with the specification (checked only when it is
	// supplied): attestations of edited specifications.
	variant := func(name string, v canonjson.Value, level string) {
		runs := runsPass
		if id, _ := getAt(v, "benchmarks", 1, "id").Str(); id != "semantic_search_latency" {
			runs = map[string][]canonjson.Value{id: runsPass["semantic_search_latency"]}
			for k, r := range runsPass {
				if k != "semantic_search_latency" {
					runs[k] = r
				}
			}
		}
		addV(name, signed(t, build(t, spec(t, v), runs, level)), fullName)
	}
	variant("bad_spec_hash_mismatch.attestation.json", setAt(full, "someone else", "metadata", "author"), "L2")
	variant("bad_spec_system_mismatch.attestation.json", setAt(full, "2.1.0", "system", "version"), "L2")
	renamed := setAt(full, "semantic_search_p50", "benchmarks", 1, "id")
	variant("bad_spec_benchmarks_mismatch.attestation.json", setAt(renamed, "semantic_search_p50", "capabilities", 0, "benchmarks", 1), "L2")
	variant("bad_spec_target_mismatch.attestation.json", setAt(full, 400, "benchmarks", 0, "target"), "L2")
	variant("bad_spec_tolerance_mismatch.attestation.json", setAt(full, 0.1, "benchmarks", 2, "tolerance"), "L2")
	addV("bad_spec_runs_mismatch.attestation.json", signed(t, build(t, spec(t, threeRuns), runsThree, "L1")), fullName)
	return out
}

// specFormAttestation writes an attestation in the form the spec text's
// example shows: items named id with runs and fewer statistics, an
// environment without python_version hashed as given, results_hash over
// the whole results object, an integral duration.
func specFormAttestation(t testing.TB, s *Spec, key ed25519.PrivateKey) canonjson.Value {
	t.Helper()
	values := []pyNum{pyInt(1020), pyInt(1075), pyInt(990), pyInt(1110), pyInt(1050)}
	st, err := calcStats(values, "iqr")
	if err != nil {
		t.Fatal(err)
	}
	r3 := func(n pyNum) canonjson.Value { return pyRound(n, 3).value() }
	env := jv(kv{"container", "avir-verification:1.0.0", "os", "linux", "arch", "amd64", "resources", kv{"cpu_cores", 4, "memory_gb", 16}})
	results := jv(kv{
		"benchmarks", list{kv{
			"id", "ops", "runs", 5,
			"statistics", kv{"mean", r3(st.mean), "std_dev", r3(st.stdDev), "min", r3(st.min), "max", r3(st.max), "p95", r3(st.p95)},
			"target", 1000, "tolerance", 0.1, "verdict", "PASS",
		}},
		"summary", kv{"total", 1, "passed", 1, "failed", 0, "pass_rate", 1.0},
	})
	specHash := s.Hash()
	envHash := sha256Hex(canonjson.Canonical(env))
	resultsHash := sha256Hex(canonjson.Canonical(results))
	ts := "2025-01-15T10:05:23Z"
	v := jv(kv{
		"avir_protocol_version", "1.0.0",
		"verification_level", "L2",
		"system", kv{"name", "Minimal System", "version", "0.1.0", "spec_source", "https://example.invalid/minimal.yaml"},
		"verifier", kv{"provider", "openai", "model", "gpt-4-turbo", "instance_id", "5e0c9d1a-8f7b-4a36-b2c4-91d3e7f60a18"},
		"environment", env,
		"execution", kv{"started_at", "2025-01-15T10:00:00Z", "completed_at", ts, "duration_seconds", 323},
		"results", results,
		"attestation_chain", kv{"spec_hash", specHash, "env_hash", envHash, "results_hash", resultsHash, "timestamp", ts,
			"chain_hash", chainHash(specHash, envHash, resultsHash, ts)},
		"signature", nil,
		"verdict", "VERIFIED",
		"verdict_details", "All 1 benchmarks passed within tolerance",
	})
	return resign(t, v, key)
}
