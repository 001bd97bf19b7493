package avirrun

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/avir"
)

// goldenValues are the scripted measurements of testdata/golden.spec.yaml.
var goldenValues = map[string][]string{
	"echo_throughput": {"421", "430", "405", "440", "999"},
	"awk_latency":     {"12.25", "12.5", "11.75", "12.0", "12.25"},
	"plan_steps":      {"5", "6", "5"},
}

// TestGolden runs testdata/golden.spec.yaml (YAML, three benchmarks,
// warm-up, setup and teardown, both outlier policies) with scripted
// measurements, a fixed environment, clock and key, and compares the
// signed attestation, and the one-benchmark run's reduced specification
// and attestation, with testdata/golden/. `go test -run TestGolden
// -update` rewrites them.
func TestGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/golden.spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := avir.ParseSpec(data)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := readExtensions(spec)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]script{}
	for id, e := range ext {
		m[e.command] = values(goldenValues[id]...)
	}
	o := opts()
	o.Verifier = avir.Verifier{Provider: "ledger", Model: "avirrun", InstanceID: "golden"}
	o.Now = clock(time.Date(2025, 2, 1, 8, 0, 0, 602548000, time.UTC), 61*time.Second)
	res, err := Run(context.Background(), &fakeRunner{script: perCommand(m)}, spec, o)
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, res)
	if res.Verdict != "PARTIAL" || res.Level != "L1" {
		t.Errorf("verdict %s level %s", res.Verdict, res.Level)
	}
	golden(t, "attestation.json", res.Attestation.Bytes())

	o.BenchmarkID = "awk_latency"
	o.Now = clock(time.Date(2025, 2, 1, 9, 0, 0, 0, time.UTC), 5*time.Second)
	res, err = Run(context.Background(), &fakeRunner{script: perCommand(m)}, spec, o)
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, res)
	if res.Verdict != "VERIFIED" || res.Level != "L2" {
		t.Errorf("one benchmark: verdict %s level %s", res.Verdict, res.Level)
	}
	golden(t, "awk_latency.spec.json", res.Spec.Bytes())
	golden(t, "awk_latency.attestation.json", res.Attestation.Bytes())
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGolden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -run TestGolden -update rewrites it)\n got %s", path, got)
	}
}
