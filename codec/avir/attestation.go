package avir

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

// Attestation is a parsed AVIR attestation that passed the Appendix A.2
// schema and the typed reading of every field verification needs. Parsing
// does not verify anything: call Verify. An Attestation is immutable.
type Attestation struct {
	raw             []byte
	root            canonjson.Value
	form            codec.Form
	protocolVersion string
	level           string
	system          System
	verifier        Verifier
	environment     canonjson.Value // null when absent
	execution       Execution
	benchmarks      []BenchmarkResult
	summary         ResultSummary
	chain           Chain
	timestamp       time.Time
	signature       *Signature
	verdict         string
	verdictDetails  string
}

// System names the system under test as the attestation records it.
type System struct {
	Name       string
	Version    string
	SpecSource string
}

// Verifier names the AI system that ran the verification.
type Verifier struct {
	Provider   string
	Model      string
	InstanceID string
}

// Execution holds the run's times as written. DurationSeconds is nil when
// absent.
type Execution struct {
	StartedAt       string
	CompletedAt     string
	DurationSeconds *float64
}

// ResultSummary is results.summary as written.
type ResultSummary struct {
	Total    int64
	Passed   int64
	Failed   int64
	PassRate float64
}

// Chain is the attestation_chain: the component hashes, the timestamp and
// the chain hash over them.
type Chain struct {
	SpecHash    string
	EnvHash     string
	ResultsHash string
	Timestamp   string
	ChainHash   string
}

// Signature is the signature object as written (base64 strings).
type Signature struct {
	Algorithm string
	PublicKey string
	Signature string
}

// BenchmarkResult is one results.benchmarks item. The reference form names
// the benchmark benchmark_id and carries result, threshold, unit and
// reason; the spec-text form names it id and may carry runs. Optional
// numbers are nil when absent.
type BenchmarkResult struct {
	ID         string
	Verdict    string
	Target     float64
	Tolerance  float64
	Result     *float64
	Threshold  *float64
	Unit       string
	Reason     string
	Runs       *int64
	Statistics Statistics

	raw canonjson.Value // the item as written
}

// Statistics is an item's statistics object. Only Mean is required.
type Statistics struct {
	Mean            float64
	StdDev          *float64
	Min             *float64
	Max             *float64
	Median          *float64
	P95             *float64
	P99             *float64
	Count           *int64
	OutliersRemoved *int64
}

// The enumerations of the protocol (sections 7.2 and 10).
var (
	levels          = []string{"L1", "L2", "L3", "L4"}
	overallVerdicts = []string{"VERIFIED", "PARTIAL", "FAILED", "INVALID", "INCONCLUSIVE"}
	itemVerdicts    = []string{"PASS", "FAIL"}
	hashRE          = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// ParseAttestation reads an attestation with a Parser compiled for this
// call. Callers that parse many documents keep a Parser instead.
func ParseAttestation(data []byte) (*Attestation, error) {
	p, err := NewParser()
	if err != nil {
		return nil, err
	}
	return p.ParseAttestation(data)
}

// ParseAttestation reads a JSON attestation: the Appendix A.2 schema plus
// a typed reading of everything verification needs (system name and
// version, results.benchmarks items and their statistics, results.summary,
// the chain, the signature object when not null). It accepts both forms:
// items named benchmark_id (reference) or id (spec text). Every problem
// found is returned in a *codec.MalformedError.
func (ps *Parser) ParseAttestation(data []byte) (*Attestation, error) {
	v, err := canonjson.Parse(data)
	if err != nil {
		if se, ok := err.(*canonjson.SyntaxError); ok {
			return nil, codec.AsMalformed([]codec.Finding{se.Finding()})
		}
		return nil, codec.AsMalformed([]codec.Finding{{Code: "json_syntax", Offset: codec.NoOffset, Reason: err.Error()}})
	}
	src := &source{data: data, root: v}
	r := &report{src: src}
	inst := instance(r)
	validate(ps.attestation, inst, r)
	early := r.list
	r.list = nil
	a := &Attestation{raw: data, root: v}
	a.read(r)
	if all := mergeFindings(r.list, early); len(all) > 0 {
		return nil, codec.AsMalformed(all)
	}
	return a, nil
}

func (a *Attestation) read(r *report) {
	root := r.src.root
	if root.Type() != canonjson.Object {
		r.malformed(nil, "want object, got %s", typeName(root))
		return
	}
	a.protocolVersion, _ = r.str(root, nil, "avir_protocol_version", true)
	if lv, ok := r.str(root, nil, "verification_level", false); ok {
		a.level = lv
		if !contains(levels, lv) {
			r.malformed(path{}.key("verification_level"), "want one of %s, got %q", strings.Join(levels, ", "), lv)
		}
	}
	if sys, sp, ok := r.object(root, nil, "system", true); ok {
		a.system.Name, _ = r.str(sys, sp, "name", true)
		a.system.Version, _ = r.str(sys, sp, "version", true)
		a.system.SpecSource, _ = r.optStr(sys, sp, "spec_source")
	}
	if ver, vp, ok := r.object(root, nil, "verifier", true); ok {
		a.verifier.Provider, _ = r.optStr(ver, vp, "provider")
		a.verifier.Model, _ = r.optStr(ver, vp, "model")
		a.verifier.InstanceID, _ = r.optStr(ver, vp, "instance_id")
	}
	if ev, ok := root.Get("environment"); ok && !ev.IsNull() {
		if env, _, ok := r.object(root, nil, "environment", false); ok {
			a.environment = env
		}
	}
	if ex, xp, ok := r.object(root, nil, "execution", false); ok {
		a.execution.StartedAt, _ = r.optStr(ex, xp, "started_at")
		a.execution.CompletedAt, _ = r.optStr(ex, xp, "completed_at")
		if d, ok := r.num(ex, xp, "duration_seconds", false); ok {
			a.execution.DurationSeconds = &d
		}
	}
	if res, rp, ok := r.object(root, nil, "results", true); ok {
		a.readResults(r, res, rp)
	}
	if ch, cp, ok := r.object(root, nil, "attestation_chain", true); ok {
		for _, h := range []struct {
			key string
			dst *string
		}{
			{"spec_hash", &a.chain.SpecHash},
			{"env_hash", &a.chain.EnvHash},
			{"results_hash", &a.chain.ResultsHash},
			{"chain_hash", &a.chain.ChainHash},
		} {
			if s, ok := r.str(ch, cp, h.key, true); ok {
				*h.dst = s
				if !hashRE.MatchString(s) {
					r.malformed(cp.key(h.key), "want 64 lowercase hex digits, got %q", s)
				}
			}
		}
		if ts, ok := r.str(ch, cp, "timestamp", true); ok {
			a.chain.Timestamp = ts
			t, err := parseTime(ts)
			if err != nil {
				r.malformed(cp.key("timestamp"), "%q is not an RFC 3339 date-time", ts)
			}
			a.timestamp = t
		}
	}
	if sv, ok := root.Get("signature"); ok && !sv.IsNull() {
		if sig, sp, ok := r.object(root, nil, "signature", false); ok {
			var s Signature
			s.Algorithm, _ = r.str(sig, sp, "algorithm", true)
			s.PublicKey, _ = r.str(sig, sp, "public_key", true)
			s.Signature, _ = r.str(sig, sp, "signature", true)
			a.signature = &s
		}
	}
	if vd, ok := r.str(root, nil, "verdict", true); ok {
		a.verdict = vd
		if !contains(overallVerdicts, vd) {
			r.malformed(path{}.key("verdict"), "want one of %s, got %q", strings.Join(overallVerdicts, ", "), vd)
		}
	}
	a.verdictDetails, _ = r.optStr(root, nil, "verdict_details")
}

func (a *Attestation) readResults(r *report, res canonjson.Value, rp path) {
	if sum, sp, ok := r.object(res, rp, "summary", true); ok {
		a.summary.Total, _ = r.integer(sum, sp, "total", true, true)
		a.summary.Passed, _ = r.integer(sum, sp, "passed", true, true)
		a.summary.Failed, _ = r.integer(sum, sp, "failed", true, true)
		a.summary.PassRate, _ = r.num(sum, sp, "pass_rate", true)
	}
	items, bp, ok := r.array(res, rp, "benchmarks", true)
	if !ok {
		return
	}
	a.form = codec.FormReference
	firstForm := -1
	for i, iv := range items.Elems() {
		ip := bp.idx(i)
		if iv.Type() != canonjson.Object {
			r.malformed(ip, "want object, got %s", typeName(iv))
			continue
		}
		b := BenchmarkResult{raw: iv}
		form := codec.FormReference
		switch {
		case iv.Has("benchmark_id"):
			b.ID, _ = r.str(iv, ip, "benchmark_id", true)
			if id, ok := iv.Get("id"); ok {
				if s, _ := id.Str(); s != b.ID {
					r.malformed(ip.key("id"), "id %s disagrees with benchmark_id %q", canonjson.Canonical(id), b.ID)
				}
			}
		case iv.Has("id"):
			form = codec.FormSpec
			b.ID, _ = r.str(iv, ip, "id", true)
		default:
			r.list = append(r.list, codec.Finding{Code: "malformed", Field: ip.key("benchmark_id").String(), Offset: r.src.offset(ip), Reason: "missing required field (benchmark_id, or id in the spec-text form)"})
		}
		switch {
		case firstForm < 0:
			firstForm = i
			a.form = form
		case form != a.form:
			r.malformed(ip, "item uses the %s form's naming but results.benchmarks[%d] uses the %s form's", form, firstForm, a.form)
		}
		if vd, ok := r.str(iv, ip, "verdict", true); ok {
			b.Verdict = vd
			if !contains(itemVerdicts, vd) {
				r.malformed(ip.key("verdict"), "want one of PASS, FAIL, got %q", vd)
			}
		}
		b.Target, _ = r.num(iv, ip, "target", true)
		b.Tolerance, _ = r.num(iv, ip, "tolerance", true)
		if x, ok := r.num(iv, ip, "result", false); ok {
			b.Result = &x
		}
		if x, ok := r.num(iv, ip, "threshold", false); ok {
			b.Threshold = &x
		}
		b.Unit, _ = r.optStr(iv, ip, "unit")
		b.Reason, _ = r.optStr(iv, ip, "reason")
		if n, ok := r.integer(iv, ip, "runs", false, true); ok {
			b.Runs = &n
		}
		if st, stp, ok := r.object(iv, ip, "statistics", true); ok {
			s := &b.Statistics
			s.Mean, _ = r.num(st, stp, "mean", true)
			for _, f := range []struct {
				key string
				dst **float64
			}{
				{"std_dev", &s.StdDev}, {"min", &s.Min}, {"max", &s.Max},
				{"median", &s.Median}, {"p95", &s.P95}, {"p99", &s.P99},
			} {
				if x, ok := r.num(st, stp, f.key, false); ok {
					*f.dst = &x
				}
			}
			if n, ok := r.integer(st, stp, "count", false, true); ok {
				s.Count = &n
			}
			if n, ok := r.integer(st, stp, "outliers_removed", false, true); ok {
				s.OutliersRemoved = &n
			}
		}
		a.benchmarks = append(a.benchmarks, b)
	}
}

// parseTime reads an RFC 3339 date-time (the JSON Schema "date-time"
// format), accepting the lowercase t and z the format allows.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// Bytes returns the input the attestation was parsed from (for a built or
// signed attestation, its canonjson.Indent encoding). The slice must not
// be modified.
func (a *Attestation) Bytes() []byte { return a.raw }

// Value returns the attestation as a JSON value.
func (a *Attestation) Value() canonjson.Value { return a.root }

// Form reports which encoding the results items used: codec.FormReference
// (benchmark_id) or codec.FormSpec (id).
func (a *Attestation) Form() codec.Form { return a.form }

// ID returns the attestation's identifier, its chain_hash.
func (a *Attestation) ID() string { return a.chain.ChainHash }

// ProtocolVersion returns avir_protocol_version.
func (a *Attestation) ProtocolVersion() string { return a.protocolVersion }

// System returns the system under test.
func (a *Attestation) System() System { return a.system }

// SystemKey returns "name vversion", the suite name results are hashed
// under and the ledger's subject for the attestation.
func (a *Attestation) SystemKey() string { return a.system.Name + " v" + a.system.Version }

// Verdict returns the overall verdict as written.
func (a *Attestation) Verdict() string { return a.verdict }

// VerdictDetails returns verdict_details as written ("" when absent).
func (a *Attestation) VerdictDetails() string { return a.verdictDetails }

// Level returns verification_level ("L1".."L4"), or "" when absent.
func (a *Attestation) Level() string { return a.level }

// Timestamp returns attestation_chain.timestamp in UTC.
func (a *Attestation) Timestamp() time.Time { return a.timestamp }

// Chain returns the attestation_chain.
func (a *Attestation) Chain() Chain { return a.chain }

// SpecHash returns attestation_chain.spec_hash.
func (a *Attestation) SpecHash() string { return a.chain.SpecHash }

// Signed reports whether the attestation carries a signature object.
func (a *Attestation) Signed() bool { return a.signature != nil }

// Signature returns the signature object, or nil when unsigned.
func (a *Attestation) Signature() *Signature {
	if a.signature == nil {
		return nil
	}
	s := *a.signature
	return &s
}

// Signer returns the signing key as "ed25519:<hex>", or "" when the
// attestation is unsigned or its public key is not 32 bytes of base64.
func (a *Attestation) Signer() string {
	if a.signature == nil {
		return ""
	}
	pub, err := base64.StdEncoding.DecodeString(a.signature.PublicKey)
	if err != nil || len(pub) != 32 {
		return ""
	}
	return "ed25519:" + hex.EncodeToString(pub)
}

// PassRate returns results.summary as written: passed, total and the
// pass_rate number.
func (a *Attestation) PassRate() (passed, total int64, rate float64) {
	return a.summary.Passed, a.summary.Total, a.summary.PassRate
}

// ResultSummary returns results.summary as written.
func (a *Attestation) ResultSummary() ResultSummary { return a.summary }

// Benchmarks returns the results items in document order. The slice must
// not be modified.
func (a *Attestation) Benchmarks() []BenchmarkResult { return a.benchmarks }

// Verifier returns the verifier block.
func (a *Attestation) Verifier() Verifier { return a.verifier }

// Execution returns the execution block as written.
func (a *Attestation) Execution() Execution { return a.execution }

// Environment returns the environment object, or null when absent.
func (a *Attestation) Environment() canonjson.Value { return a.environment }

// Summary returns the kind-independent view. Summary does not verify:
// SignatureChecked is false; Verify's Report says what was checked.
func (a *Attestation) Summary() codec.Summary {
	signer := a.Signer()
	sigFact := "none (unsigned)"
	if a.signature != nil {
		sigFact = a.signature.Algorithm + " " + signer
		if signer == "" {
			sigFact = a.signature.Algorithm + " (public key unreadable)"
		}
	}
	verdict := a.verdict
	if a.verdictDetails != "" {
		verdict += " (" + a.verdictDetails + ")"
	}
	level := a.level
	if level == "" {
		level = "(none)"
	}
	facts := []codec.Fact{
		{Label: "verdict", Value: verdict},
		{Label: "level", Value: level},
		{Label: "pass rate", Value: fmt.Sprintf("%d/%d", a.summary.Passed, a.summary.Total)},
		{Label: "verifier", Value: strings.Join(nonEmpty(a.verifier.Provider, a.verifier.Model, a.verifier.InstanceID), " / ")},
		{Label: "spec hash", Value: a.chain.SpecHash},
		{Label: "signature", Value: sigFact},
	}
	if a.execution.StartedAt != "" || a.execution.CompletedAt != "" {
		facts = append(facts, codec.Fact{Label: "execution", Value: a.execution.StartedAt + " .. " + a.execution.CompletedAt})
	}
	for _, b := range a.benchmarks {
		facts = append(facts, codec.Fact{Label: "benchmark " + b.ID, Value: b.line()})
	}
	return codec.Summary{
		Kind:    codec.KindAVIRAttestation,
		Form:    a.form,
		ID:      a.chain.ChainHash,
		Signed:  a.signature != nil,
		Signer:  signer,
		Subject: a.SystemKey(),
		Time:    a.timestamp,
		Facts:   facts,
	}
}

func nonEmpty(ss ...string) []string {
	out := ss[:0:0]
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// line renders an item on one line for reports, numbers as written.
func (b BenchmarkResult) line() string {
	lit := b.literal
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: mean %s", b.Verdict, lit("statistics", "mean"))
	if b.Unit != "" {
		sb.WriteString(" " + b.Unit)
	}
	if b.Threshold != nil {
		fmt.Fprintf(&sb, ", threshold %s", lit("threshold"))
	}
	fmt.Fprintf(&sb, " (target %s, tolerance %s)", lit("target"), lit("tolerance"))
	if n, ok := b.observedRuns(); ok {
		fmt.Fprintf(&sb, ", %d runs", n)
	}
	return sb.String()
}

// literal renders the item's member at keys as written.
func (b BenchmarkResult) literal(keys ...string) string {
	v := b.raw
	for _, k := range keys {
		v, _ = v.Get(k)
	}
	out := canonjson.Canonical(v)
	if len(out) > 80 {
		return string(out[:80]) + "..."
	}
	return string(out)
}

// observedRuns is the item's run count: runs when present, else
// statistics.count plus outliers_removed.
func (b BenchmarkResult) observedRuns() (int64, bool) {
	if b.Runs != nil {
		return *b.Runs, true
	}
	if b.Statistics.Count != nil {
		n := *b.Statistics.Count
		if b.Statistics.OutliersRemoved != nil {
			n += *b.Statistics.OutliersRemoved
		}
		return n, true
	}
	return 0, false
}
