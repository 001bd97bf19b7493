package avir

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// Environment is the verification environment as the reference records
// it (Environment.to_dict). The reference reports memory in GB as a float
// and CPU cores as an int, and so does BuildAttestation.
type Environment struct {
	Container     string
	OS            string
	Arch          string
	PythonVersion string
	CPUCores      int
	MemoryGB      float64
}

// BuildInput is what BuildAttestation needs.
type BuildInput struct {
	// Spec is the specification that was verified.
	Spec *Spec
	// SpecSource is recorded as system.spec_source.
	SpecSource string
	// Runs holds each benchmark's measured values by benchmark id, warmup
	// runs already excluded (the reference executes warmup runs and never
	// records them). Every benchmark of the spec needs at least its runs
	// values. Values are JSON numbers so that Python's int/float
	// distinction survives: canonjson.MakeInt(1100) is an int run,
	// canonjson.MakeFloat(399) the float 399.0. Ints are limited to ±2^53.
	Runs map[string][]canonjson.Value
	// Environment and Verifier are recorded as given.
	Environment Environment
	Verifier    Verifier
	// Level is the verification_level, "L1" to "L4". BuildAttestation does
	// not check the level against the run counts; Verify does.
	Level string
	// Started and Completed bound the run. They are recorded in UTC with
	// microsecond precision (finer digits are truncated, as Python's
	// datetime cannot hold them); Completed is the chain timestamp.
	Started, Completed time.Time
}

// BuildAttestation builds an unsigned attestation exactly in the shape the
// reference (avir-protocol) writes: statistics as its
// Benchmark.calculate_statistics computes them, including which numbers
// are ints, verdict items, summary, overall verdict and verdict_details,
// the environment, results and chain hashes, and "signature": null. Its
// Bytes are canonjson.Indent of the document, as the reference's
// json.dumps(indent=2). Sign it with Sign.
//
// Outlier policies "iqr" and "none" are supported; for "zscore" the
// reference's computation is not known and BuildAttestation returns an
// error. The INVALID verdict (a specification without benchmarks) gets
// the details "No benchmarks were run", a text the reference was not
// observed to write.
func BuildAttestation(in BuildInput) (*Attestation, error) {
	if in.Spec == nil {
		return nil, errors.New("avir: build: no specification")
	}
	if !contains(levels, in.Level) {
		return nil, fmt.Errorf("avir: build: verification level %q is not one of L1..L4", in.Level)
	}
	started, completed := pyTime(in.Started), pyTime(in.Completed)
	for _, t := range []time.Time{started, completed} {
		if t.Year() < 1 || t.Year() > 9999 {
			return nil, fmt.Errorf("avir: build: time %v is outside Python's datetime range", t)
		}
	}
	if completed.Before(started) {
		return nil, fmt.Errorf("avir: build: completed %v is before started %v", completed, started)
	}
	for id := range in.Runs {
		if _, ok := in.Spec.Benchmark(id); !ok {
			return nil, fmt.Errorf("avir: build: runs given for %q, which the specification does not define", id)
		}
	}

	items := make([]canonjson.Value, 0, len(in.Spec.benchmarks))
	passed := 0
	for _, b := range in.Spec.benchmarks {
		item, ok, err := buildItem(b, in.Runs[b.ID])
		if err != nil {
			return nil, fmt.Errorf("avir: build: benchmark %q: %w", b.ID, err)
		}
		if ok {
			passed++
		}
		items = append(items, item)
	}
	total := len(items)
	rate := 0.0
	if total > 0 {
		rate = float64(passed) / float64(total)
	}
	verdict := OverallVerdict(passed, total)
	details := VerdictDetails(passed, total)
	if details == "" {
		details = "No benchmarks were run"
	}

	env := envValue(in.Environment)
	verdicts := canonjson.MakeArray(items...)
	suite := in.Spec.SystemKey()
	specHash := in.Spec.Hash()
	envHash := sha256Hex(canonjson.Canonical(env))
	resultsHash := sha256Hex(canonjson.Canonical(resultsHashInput(suite, verdicts)))
	ts := isoformatZ(completed)

	str := canonjson.MakeString
	m := func(k string, v canonjson.Value) canonjson.Member { return canonjson.Member{Key: k, Value: v} }
	root := canonjson.MakeObject(
		m("avir_protocol_version", str("1.0.0")),
		m("verification_level", str(in.Level)),
		m("system", canonjson.MakeObject(
			m("name", str(in.Spec.system.Name)),
			m("version", str(in.Spec.system.Version)),
			m("spec_source", str(in.SpecSource)),
		)),
		m("verifier", canonjson.MakeObject(
			m("provider", str(in.Verifier.Provider)),
			m("model", str(in.Verifier.Model)),
			m("instance_id", str(in.Verifier.InstanceID)),
		)),
		m("environment", env),
		m("execution", canonjson.MakeObject(
			m("started_at", str(isoformatZ(started))),
			m("completed_at", str(ts)),
			m("duration_seconds", canonjson.MakeFloat(pyDuration(started, completed))),
		)),
		m("results", canonjson.MakeObject(
			m("benchmarks", verdicts),
			m("summary", canonjson.MakeObject(
				m("total", canonjson.MakeInt(int64(total))),
				m("passed", canonjson.MakeInt(int64(passed))),
				m("failed", canonjson.MakeInt(int64(total-passed))),
				m("pass_rate", canonjson.MakeFloat(rate)),
			)),
		)),
		m("attestation_chain", canonjson.MakeObject(
			m("spec_hash", str(specHash)),
			m("env_hash", str(envHash)),
			m("results_hash", str(resultsHash)),
			m("timestamp", str(ts)),
			m("chain_hash", str(chainHash(specHash, envHash, resultsHash, ts))),
		)),
		m("signature", canonjson.MakeNull()),
		m("verdict", str(verdict)),
		m("verdict_details", str(details)),
	)
	return fromValue(root)
}

// buildItem is the reference's BenchmarkVerdict.to_dict() for one
// benchmark, and whether it passed.
func buildItem(b Benchmark, raw []canonjson.Value) (canonjson.Value, bool, error) {
	if len(raw) < b.Runs {
		return canonjson.Value{}, false, fmt.Errorf("%d run values, the specification asks for %d", len(raw), b.Runs)
	}
	values := make([]pyNum, len(raw))
	for i, r := range raw {
		n, err := numOf(r)
		if err != nil {
			return canonjson.Value{}, false, fmt.Errorf("run %d: %w", i, err)
		}
		values[i] = n
	}
	st, err := calcStats(values, b.OutlierPolicy)
	if err != nil {
		return canonjson.Value{}, false, err
	}
	target, err := numOf(b.target)
	if err != nil {
		return canonjson.Value{}, false, fmt.Errorf("target: %w", err)
	}
	tol, err := numOf(b.tolerance)
	if err != nil {
		return canonjson.Value{}, false, fmt.Errorf("tolerance: %w", err)
	}
	var threshold pyNum
	var passed bool
	op := ">="
	if b.LowerIsBetter {
		threshold = pyMul(target, pyAdd(pyInt(1), tol))
		passed = pyCmp(st.mean, threshold) <= 0
		op = "<="
	} else {
		threshold = pyMul(target, pySub(pyInt(1), tol))
		passed = pyCmp(st.mean, threshold) >= 0
	}
	verdict := "FAIL"
	if passed {
		verdict = "PASS"
	}
	r3 := func(n pyNum) canonjson.Value { return pyRound(n, 3).value() }
	m := func(k string, v canonjson.Value) canonjson.Member { return canonjson.Member{Key: k, Value: v} }
	item := canonjson.MakeObject(
		m("benchmark_id", canonjson.MakeString(b.ID)),
		m("verdict", canonjson.MakeString(verdict)),
		m("target", b.target),
		m("result", r3(st.mean)),
		m("threshold", r3(threshold)),
		m("unit", canonjson.MakeString(b.Unit)),
		m("tolerance", b.tolerance),
		m("statistics", canonjson.MakeObject(
			m("mean", r3(st.mean)),
			m("std_dev", r3(st.stdDev)),
			m("min", r3(st.min)),
			m("max", r3(st.max)),
			m("median", r3(st.median)),
			m("p95", r3(st.p95)),
			m("p99", r3(st.p99)),
			m("count", canonjson.MakeInt(int64(st.count))),
			m("outliers_removed", canonjson.MakeInt(int64(st.outliers))),
		)),
		m("reason", canonjson.MakeString(fmt.Sprintf("Mean %s %s threshold %s (target: %s, tolerance: %s)",
			pyFormatFixed(st.mean, 2), op, pyFormatFixed(threshold, 2), target.str(), pyFormatPercent(tol)))),
	)
	return item, passed, nil
}

func envValue(e Environment) canonjson.Value {
	m := func(k string, v canonjson.Value) canonjson.Member { return canonjson.Member{Key: k, Value: v} }
	return canonjson.MakeObject(
		m("container", canonjson.MakeString(e.Container)),
		m("os", canonjson.MakeString(e.OS)),
		m("arch", canonjson.MakeString(e.Arch)),
		m("python_version", canonjson.MakeString(e.PythonVersion)),
		m("resources", canonjson.MakeObject(
			m("cpu_cores", canonjson.MakeInt(int64(e.CPUCores))),
			m("memory_gb", canonjson.MakeFloat(e.MemoryGB)),
		)),
	)
}

// pyTime is t as a Python UTC datetime holds it: microsecond precision.
func pyTime(t time.Time) time.Time {
	t = t.UTC()
	return t.Add(-time.Duration(t.Nanosecond() % 1000))
}

// isoformatZ is the reference's dt.isoformat() + "Z" for a naive UTC
// datetime: microseconds only when non-zero.
func isoformatZ(t time.Time) string {
	s := t.Format("2006-01-02T15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		s += fmt.Sprintf(".%06d", us)
	}
	return s + "Z"
}

// pyDuration is round((completed - started).total_seconds(), 2).
func pyDuration(started, completed time.Time) float64 {
	us := completed.UnixMicro() - started.UnixMicro()
	secs, _ := new(big.Rat).SetFrac64(us, 1_000_000).Float64()
	return pyRound(pyFloat(secs), 2).f
}

// Sign returns a copy of a signed with priv: signature = {algorithm
// "Ed25519", public_key, signature}, both standard base64 of the raw
// bytes, the signature over the ASCII chain_hash as the reference signs.
// Sign does not check the chain; Verify does.
func Sign(a *Attestation, priv ed25519.PrivateKey) (*Attestation, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("avir: sign: private key is %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	pub := priv.Public().(ed25519.PublicKey)
	sig := ed25519.Sign(priv, []byte(a.chain.ChainHash))
	m := func(k string, v canonjson.Value) canonjson.Member { return canonjson.Member{Key: k, Value: v} }
	root := a.root.With("signature", canonjson.MakeObject(
		m("algorithm", canonjson.MakeString("Ed25519")),
		m("public_key", canonjson.MakeString(base64.StdEncoding.EncodeToString(pub))),
		m("signature", canonjson.MakeString(base64.StdEncoding.EncodeToString(sig))),
	))
	return fromValue(root)
}

// fromValue makes an Attestation of a document this package wrote: its
// bytes are canonjson.Indent(v) and its fields are read as
// ParseAttestation reads them.
func fromValue(v canonjson.Value) (*Attestation, error) {
	data := canonjson.Indent(v)
	r := &report{src: &source{data: data, root: v}}
	a := &Attestation{raw: data, root: v}
	a.read(r)
	if len(r.list) > 0 {
		return nil, fmt.Errorf("avir: built attestation does not read back: %w", codec.AsMalformed(r.list))
	}
	return a, nil
}
