package avirrun

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/avir"
	"github.com/proofledger/ledger/codec/canonjson"
)

// The reference's attestation 01_verified_L2 (../shared/specs/vectors/avir,
// copied to testdata/vector01.attestation.json) and its specification with
// a command and timeout_seconds added to each benchmark
// (testdata/vector01.spec.json). The commands print, one per run, values
// whose statistics are the vector's: 399.0 420.0 430.5 441.25 450.0
// (mean 428.15, std_dev 19.816) and 1210 1100 1300 1180 1250 (mean 1208,
// std_dev 75.299).
var (
	vectorValues = map[string][]string{
		"memory_entity_creation": {"399.0", "420.0", "430.5", "441.25", "450.0"},
		"task_decomposition":     {"1210", "1100", "1300", "1180", "1250"},
	}
	vectorEnv = avir.Environment{Container: "docker", OS: "linux", Arch: "x86_64", PythonVersion: "3.11.7", CPUCores: 16, MemoryGB: 125.7}
)

func readVector(t testing.TB) (*avir.Spec, *avir.Attestation) {
	t.Helper()
	sd, err := os.ReadFile("testdata/vector01.spec.json")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := avir.ParseSpec(sd)
	if err != nil {
		t.Fatal(err)
	}
	ad, err := os.ReadFile("testdata/vector01.attestation.json")
	if err != nil {
		t.Fatal(err)
	}
	att, err := avir.ParseAttestation(ad)
	if err != nil {
		t.Fatal(err)
	}
	return spec, att
}

// vectorScript prints the vector's values, by the command's benchmark.
func vectorScript(spec *avir.Spec) script {
	ext, _ := readExtensions(spec)
	m := map[string]script{}
	for id, e := range ext {
		m[e.command] = values(vectorValues[id]...)
	}
	return perCommand(m)
}

// stripRun removes ledger_run from every item and recomputes results_hash
// and chain_hash over what is left: the attestation the reference would
// have written from the same measurements. Signature removed.
func stripRun(a *avir.Attestation) canonjson.Value {
	root := a.Value()
	results, _ := root.Get("results")
	items, _ := results.Get("benchmarks")
	var out []canonjson.Value
	for _, it := range items.Elems() {
		out = append(out, it.Without(runField))
	}
	verdicts := canonjson.MakeArray(out...)
	rh := hashOf(canonjson.MakeObject(
		canonjson.Member{Key: "suite", Value: canonjson.MakeString(a.SystemKey())},
		canonjson.Member{Key: "verdicts", Value: verdicts},
	))
	c := a.Chain()
	chain, _ := root.Get("attestation_chain")
	chain = chain.With("results_hash", canonjson.MakeString(rh)).
		With("chain_hash", canonjson.MakeString(chainHash(c.SpecHash, c.EnvHash, rh, c.Timestamp)))
	return root.With("results", results.With("benchmarks", verdicts)).With("attestation_chain", chain).Without("signature")
}

// TestReferenceVector runs the vector's specification (with commands)
// through Run with the vector's environment, verifier and clock, and
// checks that, but for the ledger_run objects, it writes the reference's
// attestation: the same spec_hash (commands are not in it), env_hash,
// statistics, verdicts, summary, and, once ledger_run is taken out, the
// same results_hash and chain_hash.
func TestReferenceVector(t *testing.T) {
	spec, ref := readVector(t)
	if spec.Hash() != ref.SpecHash() {
		t.Fatalf("spec with commands hashes to %s; the reference's spec_hash is %s", spec.Hash(), ref.SpecHash())
	}
	o := opts()
	o.Environment = &vectorEnv
	o.Verifier = ref.Verifier()
	o.SpecSource = ref.System().SpecSource
	o.Now = clock(time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC), 323*time.Second)
	res, err := Run(context.Background(), &fakeRunner{script: vectorScript(spec)}, spec, o)
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, res)
	if res.Attestation.Chain().EnvHash != ref.Chain().EnvHash {
		t.Errorf("env_hash %s, reference %s", res.Attestation.Chain().EnvHash, ref.Chain().EnvHash)
	}
	got, want := stripRun(res.Attestation), ref.Value().Without("signature")
	if !canonjson.Equal(got, want) {
		t.Errorf("attestation without ledger_run differs from the reference's\n got %s\nwant %s", canonjson.Indent(got), canonjson.Indent(want))
	}
	// With ledger_run in, results_hash and chain_hash differ from the
	// reference's (they cover the commands); nothing else does.
	if res.Attestation.Chain().ResultsHash == ref.Chain().ResultsHash {
		t.Error("ledger_run is not covered by results_hash")
	}
	lr, _ := item(t, res.Attestation, 1).Get(runField)
	vals, _ := lr.Get("values")
	var lits []string
	for _, v := range vals.Elems() {
		lits = append(lits, string(canonjson.Canonical(v)))
	}
	if strings.Join(lits, " ") != "1210 1100 1300 1180 1250" {
		t.Errorf("ledger_run.values %v", lits)
	}
	to, _ := lr.Get("timeout_seconds")
	if n, err := strconv.Atoi(to.Literal()); err != nil || n != 10 {
		t.Errorf("ledger_run.timeout_seconds %s", to.Literal())
	}
}

// TestEnvHash: the environment object and its hash as the reference
// writes them, nulls included.
func TestEnvHash(t *testing.T) {
	_, ref := readVector(t)
	if got := hashOf(envValue(vectorEnv)); got != ref.Chain().EnvHash {
		t.Errorf("env_hash %s, reference %s", got, ref.Chain().EnvHash)
	}
	e := avir.Environment{OS: "linux", Arch: "amd64", CPUCores: 2, MemoryGB: 23.0}
	const want = `{"arch":"amd64","container":null,"os":"linux","python_version":null,"resources":{"cpu_cores":2,"memory_gb":23.0}}`
	if got := string(canonjson.Canonical(envValue(e))); got != want {
		t.Errorf("environment\n got %s\nwant %s", got, want)
	}
}

// pyReferenceCheck is codec/avir's copy of the reference's checks, read
// from there rather than copied.
const pyReferenceCheck = "../../codec/avir/testdata/reference_check.py"

// TestPythonReferenceCheck runs the reference's checks, in CPython, over
// the golden attestations and one built here: chain hash, Ed25519
// signature (with the cryptography package), and env_hash and
// results_hash recomputed with Python's json, so that the hashes this
// package recomputes after adding ledger_run are checked against the real
// interpreter. It skips without python3 or cryptography.
func TestPythonReferenceCheck(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("skipping: python3 not installed")
	}
	if err := exec.Command(py, "-c", "import cryptography").Run(); err != nil {
		t.Skip("skipping: python3 has no cryptography module")
	}
	spec, _ := readVector(t)
	res, err := Run(context.Background(), &fakeRunner{script: vectorScript(spec)}, spec, opts())
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{string(res.Attestation.Bytes())}
	for _, name := range []string{"attestation.json", "awk_latency.attestation.json"} {
		b, err := os.ReadFile("testdata/golden/" + name)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	in, _ := json.Marshal(docs)
	cmd := exec.Command(py, pyReferenceCheck)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	var got []map[string]any
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(docs) {
		t.Fatalf("python output %s: %v", out, err)
	}
	for i, g := range got {
		for _, k := range []string{"chain_ok", "signature_ok", "env_ok", "results_ok"} {
			if g[k] != true {
				t.Errorf("document %d: %s is %v", i, k, g[k])
			}
		}
	}
}
