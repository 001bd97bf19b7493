package avir

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"strings"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// VerifyOptions says what an attestation is verified against.
type VerifyOptions struct {
	// Spec, when set, is the specification the attestation claims to
	// verify. Its hash must be the chain's spec_hash, its system and
	// benchmark ids must match the attestation's, each item's target and
	// tolerance must be the spec's, each benchmark must have had at least
	// the spec's runs, and benchmark directions (lower_is_better) come
	// from it.
	Spec *Spec
}

// Report is what Verify found. Findings is empty for an attestation that
// verifies; Facts say how the checks went where the attestation left
// room (which environment form matched, an assumed benchmark direction).
type Report struct {
	Findings []codec.Finding
	Facts    []codec.Fact
	// SignatureChecked reports that a signature was present and the
	// Ed25519 check ran (whatever its outcome).
	SignatureChecked bool
}

// Tolerances of the recomputations. The reference rounds means,
// thresholds and results to 3 decimals and durations to 2.
const (
	roundTol    = 0.0005
	durationTol = 0.01
)

// Verify checks everything an attestation claims that can be recomputed
// from its own content (and from opts.Spec when given) and returns one
// named finding per disagreement; see VerifyReport.
func (a *Attestation) Verify(opts VerifyOptions) []codec.Finding {
	return a.VerifyReport(opts).Findings
}

// VerifyReport verifies the attestation:
//
//   - results_hash, env_hash and chain_hash are recomputed (the reference's
//     own check recomputes only chain_hash): results_hash_mismatch,
//     env_hash_mismatch, chain_hash_mismatch;
//   - the chain timestamp must be execution.completed_at
//     (timestamp_mismatch) and duration_seconds the time between start
//     and completion within 0.01 s (duration_mismatch);
//   - an Ed25519 signature over the ASCII chain_hash must verify
//     (signature_unsupported_algorithm, public_key_invalid,
//     signature_invalid); an unsigned attestation skips only this;
//   - each item's verdict is recomputed from its statistics.mean, target,
//     tolerance and direction (benchmark_verdict_mismatch), its threshold
//     and result checked (threshold_mismatch, result_mismatch) and its
//     statistics checked for consistency (statistics_inconsistent);
//   - results.summary is recomputed from the items' verdicts
//     (summary_mismatch), the overall verdict from that summary by the
//     section 10 rule (verdict_mismatch) and, in the reference form,
//     verdict_details from the same counts (verdict_details_mismatch);
//   - the verification level must be backed by the run counts: 5 per
//     benchmark for L2 and L3, 10 for L4 (level_evidence);
//   - with opts.Spec: spec_hash_mismatch, spec_system_mismatch,
//     spec_benchmarks_mismatch, spec_target_mismatch,
//     spec_tolerance_mismatch, spec_runs_mismatch.
//
// Each check compares one layer with the layer beneath it (item verdicts
// with statistics, the summary with the item verdicts as written, the
// overall verdict with the summary recomputed from them), so one edit
// yields one finding rather than a cascade.
//
// INCONCLUSIVE ("insufficient data") is accepted only where the section
// 10 rule has no data either: an attestation with no benchmark results,
// for which INVALID is also accepted. Anywhere else it contradicts the
// recorded results and is a verdict_mismatch.
func (a *Attestation) VerifyReport(opts VerifyOptions) Report {
	v := &verification{a: a, spec: opts.Spec, r: &report{src: &source{data: a.raw, root: a.root}}}
	v.hashes()
	v.times()
	v.signature()
	if v.spec != nil {
		v.againstSpec()
	} else {
		v.fact("spec", "not supplied: spec_hash, targets and directions not checked against a specification")
	}
	v.items()
	v.summary()
	v.level()
	sortFindings(v.r.list)
	return Report{Findings: capFindings(v.r.list), Facts: v.facts, SignatureChecked: v.sigChecked}
}

type verification struct {
	a          *Attestation
	spec       *Spec
	r          *report
	facts      []codec.Fact
	sigChecked bool
}

func (v *verification) fact(label, format string, args ...any) {
	v.facts = append(v.facts, codec.Fact{Label: label, Value: fmt.Sprintf(format, args...)})
}

var chainPath = path{}.key("attestation_chain")

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// chainHash is the reference's chain hash: SHA-256 of the ASCII
// concatenation of the component hashes and the timestamp.
func chainHash(specHash, envHash, resultsHash, timestamp string) string {
	return sha256Hex([]byte(specHash + envHash + resultsHash + timestamp))
}

// envHashInput is the reference's Environment.to_dict(): the five fields
// it hashes, missing ones as null.
func envHashInput(env canonjson.Value) canonjson.Value {
	field := func(o canonjson.Value, k string) canonjson.Member {
		x, ok := o.Get(k)
		if !ok {
			x = canonjson.MakeNull()
		}
		return canonjson.Member{Key: k, Value: x}
	}
	res, _ := env.Get("resources")
	return canonjson.MakeObject(
		field(env, "container"), field(env, "os"), field(env, "arch"), field(env, "python_version"),
		canonjson.Member{Key: "resources", Value: canonjson.MakeObject(field(res, "cpu_cores"), field(res, "memory_gb"))},
	)
}

// resultsHashInput is what the reference hashes for results_hash.
func resultsHashInput(suite string, verdicts canonjson.Value) canonjson.Value {
	return canonjson.MakeObject(
		canonjson.Member{Key: "suite", Value: canonjson.MakeString(suite)},
		canonjson.Member{Key: "verdicts", Value: verdicts},
	)
}

func (v *verification) hashes() {
	a := v.a
	results, _ := a.root.Get("results")
	items, _ := results.Get("benchmarks")
	type candidate struct {
		name string
		val  canonjson.Value
	}
	match := func(label string, want string, cands []candidate) (string, bool) {
		var got []string
		for _, c := range cands {
			h := sha256Hex(canonjson.Canonical(c.val))
			if h == want {
				v.fact(label, "matches the %s", c.name)
				return h, true
			}
			got = append(got, fmt.Sprintf("%s of the %s", h, c.name))
		}
		return strings.Join(got, ", "), false
	}

	rc := []candidate{{"reference's {suite, verdicts} object", resultsHashInput(a.SystemKey(), items)}}
	if a.form == codec.FormSpec {
		rc = append(rc, candidate{"results object as given", results})
	}
	if got, ok := match("results_hash", a.chain.ResultsHash, rc); !ok {
		v.r.add("results_hash_mismatch", chainPath.key("results_hash"), "recomputed %s; attestation says %s", got, a.chain.ResultsHash)
	}

	if a.environment.IsNull() {
		v.fact("env_hash", "not recomputed: the attestation has no environment object")
	} else {
		ec := []candidate{{"normalized environment (reference form)", envHashInput(a.environment)}}
		if !canonjson.Equal(ec[0].val, a.environment) {
			ec = append(ec, candidate{"environment object as given", a.environment})
		}
		if got, ok := match("env_hash", a.chain.EnvHash, ec); !ok {
			v.r.add("env_hash_mismatch", chainPath.key("env_hash"), "recomputed %s; attestation says %s", got, a.chain.EnvHash)
		}
	}

	c := a.chain
	if h := chainHash(c.SpecHash, c.EnvHash, c.ResultsHash, c.Timestamp); h != c.ChainHash {
		v.r.add("chain_hash_mismatch", chainPath.key("chain_hash"), "SHA-256 of spec_hash+env_hash+results_hash+timestamp is %s; attestation says %s", h, c.ChainHash)
	}
}

func (v *verification) times() {
	a := v.a
	ex := a.execution
	xp := path{}.key("execution")
	if ex.CompletedAt == "" {
		v.fact("timestamp", "not compared: no execution.completed_at")
	} else {
		completed, err := parseTime(ex.CompletedAt)
		same := a.chain.Timestamp == ex.CompletedAt || (err == nil && completed.Equal(a.timestamp))
		if !same {
			v.r.add("timestamp_mismatch", chainPath.key("timestamp"), "timestamp %s is not execution.completed_at %s", a.chain.Timestamp, ex.CompletedAt)
		}
	}
	if ex.DurationSeconds != nil && ex.StartedAt != "" && ex.CompletedAt != "" {
		start, err1 := parseTime(ex.StartedAt)
		end, err2 := parseTime(ex.CompletedAt)
		if err1 == nil && err2 == nil {
			want := end.Sub(start).Seconds()
			if !near(*ex.DurationSeconds, want, durationTol) {
				v.r.add("duration_mismatch", xp.key("duration_seconds"), "duration_seconds %s, but completed_at - started_at is %s s",
					canonjson.FormatFloat(*ex.DurationSeconds), canonjson.FormatFloat(want))
			}
		}
	}
}

func (v *verification) signature() {
	a := v.a
	sig := a.signature
	if sig == nil {
		v.fact("signature", "none: the attestation is unsigned")
		if a.level == "L3" || a.level == "L4" {
			v.fact("note", "%s attestations SHOULD be signed (section 7.4)", a.level)
		}
		return
	}
	sp := path{}.key("signature")
	if !strings.EqualFold(sig.Algorithm, "Ed25519") {
		v.r.add("signature_unsupported_algorithm", sp.key("algorithm"), "algorithm %q is not Ed25519", sig.Algorithm)
		return
	}
	pub, err := base64.StdEncoding.DecodeString(sig.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		reason := fmt.Sprintf("want standard base64 of %d bytes", ed25519.PublicKeySize)
		if err == nil {
			reason += fmt.Sprintf(", got %d bytes", len(pub))
		}
		v.r.add("public_key_invalid", sp.key("public_key"), "%s", reason)
		return
	}
	raw, err := base64.StdEncoding.DecodeString(sig.Signature)
	if err != nil || len(raw) != ed25519.SignatureSize {
		v.r.add("signature_invalid", sp.key("signature"), "want standard base64 of %d bytes", ed25519.SignatureSize)
		return
	}
	v.sigChecked = true
	if !ed25519.Verify(ed25519.PublicKey(pub), []byte(a.chain.ChainHash), raw) {
		v.r.add("signature_invalid", sp.key("signature"), "Ed25519 signature over chain_hash does not verify under ed25519:%s", hex.EncodeToString(pub))
	}
}

func itemPath(i int) path { return path{}.key("results").key("benchmarks").idx(i) }

// idKey is the member naming an item's benchmark in its form.
func (v *verification) idKey(i int) string {
	items, _ := v.a.root.Get("results")
	items, _ = items.Get("benchmarks")
	if elems := items.Elems(); i < len(elems) && !elems[i].Has("benchmark_id") && elems[i].Has("id") {
		return "id"
	}
	return "benchmark_id"
}

func (v *verification) againstSpec() {
	a, s := v.a, v.spec
	if a.chain.SpecHash != s.Hash() {
		v.r.add("spec_hash_mismatch", chainPath.key("spec_hash"), "the specification's hash is %s; attestation says %s", s.Hash(), a.chain.SpecHash)
	}
	sysPath := path{}.key("system")
	if a.system.Name != s.system.Name {
		v.r.add("spec_system_mismatch", sysPath.key("name"), "system name %q is not the specification's %q", a.system.Name, s.system.Name)
	}
	if a.system.Version != s.system.Version {
		v.r.add("spec_system_mismatch", sysPath.key("version"), "system version %q is not the specification's %q", a.system.Version, s.system.Version)
	}
	reported := map[string]bool{}
	for i, b := range a.benchmarks {
		reported[b.ID] = true
		ip := itemPath(i)
		sb, ok := s.Benchmark(b.ID)
		if !ok {
			v.r.add("spec_benchmarks_mismatch", ip.key(v.idKey(i)), "benchmark %q is not in the specification", b.ID)
			continue
		}
		if b.Target != sb.Target {
			v.r.add("spec_target_mismatch", ip.key("target"), "target %s is not the specification's %s", b.literal("target"), canonjson.Canonical(sb.target))
		}
		if b.Tolerance != sb.Tolerance {
			v.r.add("spec_tolerance_mismatch", ip.key("tolerance"), "tolerance %s is not the specification's %s", b.literal("tolerance"), canonjson.Canonical(sb.tolerance))
		}
		if n, ok := b.observedRuns(); ok && n < int64(sb.Runs) {
			v.r.add("spec_runs_mismatch", ip.key(runsField(b)), "%d runs recorded; the specification asks for at least %d", n, sb.Runs)
		}
	}
	for _, sb := range s.benchmarks {
		if !reported[sb.ID] {
			v.r.add("spec_benchmarks_mismatch", path{}.key("results").key("benchmarks"), "the specification's benchmark %q has no result", sb.ID)
		}
	}
}

// runsField names the member a run count was read from.
func runsField(b BenchmarkResult) string {
	if b.Runs != nil {
		return "runs"
	}
	return "statistics.count"
}

// direction decides whether lower is better for an item: from the
// specification, else from which side of the target the threshold lies,
// else from the comparison written in the reason, else the protocol's
// default (higher is better).
func (v *verification) direction(b BenchmarkResult) (lower bool, source string) {
	if v.spec != nil {
		if sb, ok := v.spec.Benchmark(b.ID); ok {
			return sb.LowerIsBetter, "specification"
		}
	}
	if b.Threshold != nil {
		lo := b.Target * (1 - b.Tolerance)
		hi := b.Target * (1 + b.Tolerance)
		dLo, dHi := math.Abs(*b.Threshold-lo), math.Abs(*b.Threshold-hi)
		switch {
		case dLo < dHi:
			return false, "threshold"
		case dHi < dLo:
			return true, "threshold"
		}
	}
	switch {
	case strings.Contains(b.Reason, " <= threshold"):
		return true, "reason"
	case strings.Contains(b.Reason, " >= threshold"):
		return false, "reason"
	}
	return false, "default"
}

func (v *verification) items() {
	var assumed []string
	defer func() {
		if len(assumed) > 0 {
			v.fact("direction", "assumed higher is better (no specification, threshold or reason says otherwise) for %s", nameList(assumed))
		}
	}()
	for i, b := range v.a.benchmarks {
		ip := itemPath(i)
		lower, src := v.direction(b)
		if src == "default" {
			assumed = append(assumed, b.ID)
		}
		threshold, op, sign := b.Target*(1-b.Tolerance), ">=", "-"
		if lower {
			threshold, op, sign = b.Target*(1+b.Tolerance), "<=", "+"
		}
		mean := b.Statistics.Mean
		if !near(mean, threshold, roundTol) {
			holds := (!lower && mean >= threshold) || (lower && mean <= threshold)
			want, how := "FAIL", "does not hold"
			if holds {
				want, how = "PASS", "holds"
			}
			if b.Verdict != want {
				v.r.add("benchmark_verdict_mismatch", ip.key("verdict"), "verdict %s, but mean %s %s threshold %s %s, so %s (direction from %s)",
					b.Verdict, b.literal("statistics", "mean"), op, canonjson.FormatFloat(threshold), how, want, src)
			}
		}
		if b.Threshold != nil && !near(*b.Threshold, threshold, roundTol) {
			v.r.add("threshold_mismatch", ip.key("threshold"), "threshold %s is not target*(1%stolerance) = %s",
				b.literal("threshold"), sign, canonjson.FormatFloat(pyRound(pyFloat(threshold), 3).f))
		}
		if b.Result != nil && !near(*b.Result, mean, roundTol) {
			v.r.add("result_mismatch", ip.key("result"), "result %s is not statistics.mean %s", b.literal("result"), b.literal("statistics", "mean"))
		}
		v.statistics(b.Statistics, ip.key("statistics"))
	}
}

// nameList joins names, eliding past the tenth.
func nameList(names []string) string {
	if len(names) > 10 {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:10], ", "), len(names)-10)
	}
	return strings.Join(names, ", ")
}

// statistics checks the order relations every summary of one sample
// obeys.
func (v *verification) statistics(s Statistics, sp path) {
	bad := func(field, format string, args ...any) {
		v.r.add("statistics_inconsistent", sp.key(field), format, args...)
	}
	f := canonjson.FormatFloat
	if s.Count != nil && *s.Count < 1 {
		bad("count", "count %d is below 1", *s.Count)
	}
	if s.OutliersRemoved != nil && *s.OutliersRemoved < 0 {
		bad("outliers_removed", "outliers_removed %d is negative", *s.OutliersRemoved)
	}
	if s.StdDev != nil && *s.StdDev < 0 {
		bad("std_dev", "std_dev %s is negative", f(*s.StdDev))
	}
	if s.Min != nil && s.Max != nil && !le(*s.Min, *s.Max) {
		bad("min", "min %s is above max %s", f(*s.Min), f(*s.Max))
	}
	if s.Min != nil && !le(*s.Min, s.Mean) {
		bad("mean", "mean %s is below min %s", f(s.Mean), f(*s.Min))
	}
	if s.Max != nil && !le(s.Mean, *s.Max) {
		bad("mean", "mean %s is above max %s", f(s.Mean), f(*s.Max))
	}
	for _, q := range []struct {
		name string
		val  *float64
	}{{"median", s.Median}, {"p95", s.P95}, {"p99", s.P99}} {
		if q.val == nil {
			continue
		}
		if s.Min != nil && !le(*s.Min, *q.val) {
			bad(q.name, "%s %s is below min %s", q.name, f(*q.val), f(*s.Min))
		}
		if s.Max != nil && !le(*q.val, *s.Max) {
			bad(q.name, "%s %s is above max %s", q.name, f(*q.val), f(*s.Max))
		}
	}
	if s.P95 != nil && s.P99 != nil && !le(*s.P95, *s.P99) {
		bad("p99", "p99 %s is below p95 %s", f(*s.P99), f(*s.P95))
	}
	if s.StdDev != nil && s.Min != nil && s.Max != nil && *s.StdDev > (*s.Max-*s.Min)+3*roundTol {
		// A sample's standard deviation never exceeds its range.
		bad("std_dev", "std_dev %s exceeds the range max - min = %s", f(*s.StdDev), f(*s.Max-*s.Min))
	}
	if s.Count != nil && *s.Count == 1 {
		if s.StdDev != nil && *s.StdDev != 0 {
			bad("std_dev", "std_dev %s for a single value", f(*s.StdDev))
		}
		if s.Min != nil && s.Max != nil && *s.Min != *s.Max {
			bad("max", "min %s and max %s differ for a single value", f(*s.Min), f(*s.Max))
		}
	}
}

// OverallVerdict is the section 10.2 rule as the reference applies it:
// the overall verdict of passed benchmarks out of total.
func OverallVerdict(passed, total int) string {
	if total == 0 {
		return "INVALID"
	}
	rate := float64(passed) / float64(total)
	switch {
	case rate == 1:
		return "VERIFIED"
	case rate >= 0.6:
		return "PARTIAL"
	}
	return "FAILED"
}

// VerdictDetails is the reference's verdict_details text for passed
// benchmarks out of total, "" where it is not known (INVALID).
func VerdictDetails(passed, total int) string {
	failed := total - passed
	switch OverallVerdict(passed, total) {
	case "VERIFIED":
		return fmt.Sprintf("All %d benchmarks passed within tolerance", total)
	case "PARTIAL":
		return fmt.Sprintf("%d/%d benchmarks passed (%d failed)", passed, total, failed)
	case "FAILED":
		return fmt.Sprintf("Only %d/%d benchmarks passed (%d failed)", passed, total, failed)
	}
	return ""
}

func (v *verification) summary() {
	a := v.a
	total, passed := len(a.benchmarks), 0
	for _, b := range a.benchmarks {
		if b.Verdict == "PASS" {
			passed++
		}
	}
	failed := total - passed
	rate := 0.0
	if total > 0 {
		rate = float64(passed) / float64(total)
	}
	sp := path{}.key("results").key("summary")
	s := a.summary
	for _, c := range []struct {
		key       string
		got, want int64
	}{{"total", s.Total, int64(total)}, {"passed", s.Passed, int64(passed)}, {"failed", s.Failed, int64(failed)}} {
		if c.got != c.want {
			v.r.add("summary_mismatch", sp.key(c.key), "%s %d, but the items give %d", c.key, c.got, c.want)
		}
	}
	if !near(s.PassRate, rate, roundTol) {
		v.r.add("summary_mismatch", sp.key("pass_rate"), "pass_rate %s, but the items give %d/%d = %s", canonjson.FormatFloat(s.PassRate), passed, total, canonjson.FormatFloat(rate))
	}
	want := OverallVerdict(passed, total)
	ok := a.verdict == want || (total == 0 && a.verdict == "INCONCLUSIVE")
	if !ok {
		v.r.add("verdict_mismatch", path{}.key("verdict"), "verdict %s, but %d/%d benchmarks passed, which section 10.2 calls %s", a.verdict, passed, total, want)
	}
	if a.form == codec.FormReference && a.verdictDetails != "" {
		if d := VerdictDetails(passed, total); d != "" && d != a.verdictDetails {
			v.r.add("verdict_details_mismatch", path{}.key("verdict_details"), "verdict_details %q, but the items give %q", a.verdictDetails, d)
		}
	}
}

// minRuns is the run count section 10.3 asks of each benchmark per level.
func minRuns(level string) int64 {
	switch level {
	case "L1":
		return 1
	case "L2", "L3":
		return 5
	case "L4":
		return 10
	}
	return 0
}

func (v *verification) level() {
	a := v.a
	if a.level == "" {
		v.fact("level", "none stated; run counts not checked against a level")
		return
	}
	need := minRuns(a.level)
	for i, b := range a.benchmarks {
		ip := itemPath(i)
		n, ok := b.observedRuns()
		switch {
		case !ok && need > 1:
			v.r.add("level_evidence", ip.key("statistics"), "%s needs %d runs per benchmark (section 10.3); %s records no run count", a.level, need, b.ID)
		case ok && n < need:
			v.r.add("level_evidence", ip.key(runsField(b)), "%s needs %d runs per benchmark (section 10.3); %s has %d", a.level, need, b.ID, n)
		}
	}
	if a.level == "L3" || a.level == "L4" {
		v.fact("note", "%s also requires several providers (section 10.3), which one attestation's single verifier cannot show", a.level)
	}
}

// near reports |a - b| <= tol, with room for float64 representation error
// at large magnitudes.
func near(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol+1e-12*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// le is a <= b up to representation error.
func le(a, b float64) bool { return a <= b || near(a, b, 0) }
