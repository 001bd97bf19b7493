package avirrun

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/proofledger/ledger/codec/avir"
	"github.com/proofledger/ledger/codec/canonjson"
)

// runField is the member each attestation item gains: what the ledger ran
// and measured for the benchmark. results_hash is over the items as
// written, so it, the chain hash and the signature cover it.
const runField = "ledger_run"

// level is the verification level the run supports (section 10.3): L2
// when every benchmark had at least 5 measured runs and the IQR outlier
// removal, else L1. A single verifier never shows the several providers
// L3 and L4 ask for.
func level(spec *avir.Spec) string {
	bs := spec.Benchmarks()
	if len(bs) == 0 {
		return "L1"
	}
	for _, b := range bs {
		if b.Runs < 5 || b.OutlierPolicy != "iqr" {
			return "L1"
		}
	}
	return "L2"
}

// attest builds, signs and checks the attestation of a fully measured
// result.
func (o Options) attest(res *Result) error {
	lvl := level(res.Spec)
	att, err := o.build(res.Spec, res, lvl)
	if err != nil {
		return err
	}
	signed, err := avir.Sign(att, o.Key)
	if err != nil {
		return fmt.Errorf("avirrun: %w", err)
	}
	// Every attestation this package signs must verify, against its
	// specification, under the same code that will check it later.
	if rep := signed.VerifyReport(avir.VerifyOptions{Spec: res.Spec}); len(rep.Findings) > 0 {
		var fs []string
		for _, f := range rep.Findings {
			fs = append(fs, f.Code+": "+f.String())
		}
		return fmt.Errorf("avirrun: internal error: the attestation built does not verify: %s", strings.Join(fs, "; "))
	}
	res.Attestation = signed
	res.Level = lvl
	res.Verdict = signed.Verdict()
	res.VerdictDetails = signed.VerdictDetails()
	o.attachItems(res, signed)
	return nil
}

// build makes the unsigned attestation of spec's benchmarks from res's
// values with codec/avir's builder (statistics, verdicts, summary and
// hashes as the reference computes them), then adds each item's
// ledger_run object, writes the environment with its nulls, and
// recomputes results_hash, env_hash and chain_hash over the result.
func (o Options) build(spec *avir.Spec, res *Result, lvl string) (*avir.Attestation, error) {
	runs := map[string][]canonjson.Value{}
	byID := map[string]*BenchmarkResult{}
	for i := range res.Benchmarks {
		b := &res.Benchmarks[i]
		byID[b.ID] = b
	}
	for _, b := range spec.Benchmarks() {
		br := byID[b.ID]
		if br == nil || br.Status != StatusMeasured {
			return nil, fmt.Errorf("avirrun: internal error: benchmark %q was not measured", b.ID)
		}
		runs[b.ID] = br.Values
	}
	att, err := avir.BuildAttestation(avir.BuildInput{
		Spec:        spec,
		SpecSource:  o.SpecSource,
		Runs:        runs,
		Environment: res.Environment,
		Verifier:    o.Verifier,
		Level:       lvl,
		Started:     res.Started,
		Completed:   res.Completed,
	})
	if err != nil {
		return nil, fmt.Errorf("avirrun: %w", err)
	}

	root := att.Value()
	results, _ := root.Get("results")
	items, _ := results.Get("benchmarks")
	ext := make([]canonjson.Value, 0, items.Len())
	for i, it := range items.Elems() {
		br := byID[spec.Benchmarks()[i].ID]
		ext = append(ext, it.With(runField, runValue(br, res.Sandbox)))
	}
	verdicts := canonjson.MakeArray(ext...)
	env := envValue(res.Environment)

	chain, _ := root.Get("attestation_chain")
	specHash, _ := chain.Get("spec_hash")
	ts, _ := chain.Get("timestamp")
	sh, _ := specHash.Str()
	t, _ := ts.Str()
	eh := hashOf(env)
	rh := hashOf(canonjson.MakeObject(
		canonjson.Member{Key: "suite", Value: canonjson.MakeString(spec.SystemKey())},
		canonjson.Member{Key: "verdicts", Value: verdicts},
	))
	chain = chain.
		With("env_hash", canonjson.MakeString(eh)).
		With("results_hash", canonjson.MakeString(rh)).
		With("chain_hash", canonjson.MakeString(chainHash(sh, eh, rh, t)))
	root = root.
		With("environment", env).
		With("results", results.With("benchmarks", verdicts)).
		With("attestation_chain", chain)
	out, err := avir.ParseAttestation(canonjson.Indent(root))
	if err != nil {
		return nil, fmt.Errorf("avirrun: internal error: attestation does not read back: %w", err)
	}
	return out, nil
}

// hashOf is the reference's canonical_hash: hex SHA-256 of the canonical
// JSON (sorted keys, no spaces, ensure_ascii).
func hashOf(v canonjson.Value) string {
	sum := sha256.Sum256(canonjson.Canonical(v))
	return hex.EncodeToString(sum[:])
}

// runValue is an item's ledger_run object: the command (which spec_hash
// does not cover), the per-step timeout in seconds, the measured values
// in run order before outlier removal, and the sandbox description.
func runValue(br *BenchmarkResult, sandboxDesc string) canonjson.Value {
	m := func(k string, v canonjson.Value) canonjson.Member { return canonjson.Member{Key: k, Value: v} }
	timeout, _ := canonjson.MakeNumber(strconv.FormatFloat(br.Timeout.Seconds(), 'f', -1, 64))
	return canonjson.MakeObject(
		m("command", canonjson.MakeString(br.Command)),
		m("timeout_seconds", timeout),
		m("values", canonjson.MakeArray(br.Values...)),
		m("sandbox", canonjson.MakeString(sandboxDesc)),
	)
}

// attachItems points each measured benchmark at its item in att.
func (o Options) attachItems(res *Result, att *avir.Attestation) {
	items := att.Benchmarks()
	for i := range res.Benchmarks {
		b := &res.Benchmarks[i]
		for j := range items {
			if items[j].ID == b.ID {
				it := items[j]
				b.Item = &it
				b.Verdict = it.Verdict
			}
		}
	}
}

// chainHash is the reference's chain hash: hex SHA-256 of the ASCII
// concatenation spec_hash + env_hash + results_hash + timestamp.
func chainHash(specHash, envHash, resultsHash, timestamp string) string {
	sum := sha256.Sum256([]byte(specHash + envHash + resultsHash + timestamp))
	return hex.EncodeToString(sum[:])
}
