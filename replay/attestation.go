package replay

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/avir"
	"github.com/proofledger/ledger/codec/canonjson"
)

// AttestationReport is the replay of one AVIR attestation: every
// benchmark verdict and the overall verdict recomputed from the
// attestation's own statistics, beside what it claims.
type AttestationReport struct {
	Kind      string `json:"kind"` // always "avir-attestation"
	ID        string `json:"id"`   // the chain hash
	Form      string `json:"form"`
	System    string `json:"system"`
	Level     string `json:"level"`
	Verifier  string `json:"verifier"`
	Timestamp string `json:"timestamp"` // RFC 3339, UTC
	Verdict   string `json:"verdict"`

	Signature Signature `json:"signature"`
	// Spec is the hash of the specification the attestation was checked
	// against, "" when none was supplied.
	Spec string `json:"spec"`
	// Valid reports that codec/avir's verification found nothing.
	Valid bool `json:"valid"`
	// Claims lists each benchmark verdict, results.summary, the overall
	// verdict and (reference form) verdict_details beside the values the
	// statistics give.
	Claims []Claim `json:"claims"`
	// Findings are codec/avir's verification findings (hashes, signature,
	// times, thresholds, statistics, level, specification), as it reports
	// them.
	Findings []codec.Finding `json:"findings"`
	// Facts are codec/avir's notes on how its checks went.
	Facts []codec.Fact `json:"facts"`
}

// passRateTol is the tolerance of a pass rate: the reference rounds it to
// three decimals (codec/avir compares with the same tolerance).
const passRateTol = 0.0005

// Attestation replays a parsed AVIR attestation, verified as codec/avir
// verifies it (opts.Spec, when set, is the specification it is checked
// against).
//
// Each benchmark's verdict is the one codec/avir recomputes from the
// item's statistics.mean, target, tolerance and direction: it is the
// claimed verdict unless codec/avir reports a benchmark_verdict_mismatch
// for the item, whose reason then gives the basis. results.summary and
// the overall verdict (section 10.2) are then recomputed from those
// recomputed verdicts, not from the verdicts as written: so a forged item
// verdict with a summary and overall verdict forged to match shows in
// every row it touched, where codec/avir, checking each layer against
// the one beneath as written, reports it once. Everything else codec/avir
// checks is listed in Findings.
func Attestation(a *avir.Attestation, opts avir.VerifyOptions) (*AttestationReport, error) {
	if a == nil {
		return nil, fmt.Errorf("replay: nil attestation")
	}
	vr := a.VerifyReport(opts)
	sys := a.System()
	ver := a.Verifier()
	rep := &AttestationReport{
		Kind: string(codec.KindAVIRAttestation), ID: a.ID(), Form: string(a.Form()),
		System: sys.Name + " v" + sys.Version, Level: a.Level(),
		Verifier: strings.Join(slices.DeleteFunc([]string{ver.Provider, ver.Model, ver.InstanceID}, func(s string) bool { return s == "" }), " / "),
		Verdict:  a.Verdict(),
		Valid:    len(vr.Findings) == 0,
		Claims:   []Claim{},
		Findings: nonNil(vr.Findings),
		Facts:    nonNil(vr.Facts),
	}
	if ts := a.Timestamp(); !ts.IsZero() {
		rep.Timestamp = ts.UTC().Format(time.RFC3339Nano)
	}
	if opts.Spec != nil {
		rep.Spec = opts.Spec.Hash()
	}
	rep.Signature = attestationSignature(a, vr)
	rep.Claims = attestationClaims(a, vr.Findings)
	return rep, nil
}

func attestationSignature(a *avir.Attestation, vr avir.Report) Signature {
	if !a.Signed() {
		return Signature{Status: SignatureNone}
	}
	var bad []string
	for _, f := range vr.Findings {
		switch f.Code {
		case "signature_invalid", "public_key_invalid", "signature_unsupported_algorithm":
			bad = append(bad, f.Reason)
		}
	}
	if len(bad) > 0 || !vr.SignatureChecked {
		if len(bad) == 0 {
			bad = []string{"not checked"}
		}
		return Signature{Status: SignatureNotVerified, KeyID: a.Signer(), Detail: strings.Join(bad, "; ")}
	}
	return Signature{Status: SignatureVerified, KeyID: a.Signer()}
}

var reItemIndex = regexp.MustCompile(`^results\.benchmarks\[(\d+)\]`)

func attestationClaims(a *avir.Attestation, findings []codec.Finding) []Claim {
	items := a.Benchmarks()
	// codec/avir lists at most 1000 findings, in document order; when it
	// stopped, items past the last one it reached are not recomputed.
	reached := len(items) - 1
	mismatch := map[int]string{}
	for _, f := range findings {
		if f.Code == "too_many_findings" {
			reached = -1
			for _, g := range findings {
				if m := reItemIndex.FindStringSubmatch(g.Field); m != nil {
					if i, err := strconv.Atoi(m[1]); err == nil {
						reached = max(reached, i)
					}
				}
			}
		}
		if f.Code == "benchmark_verdict_mismatch" {
			if m := reItemIndex.FindStringSubmatch(f.Field); m != nil {
				if i, err := strconv.Atoi(m[1]); err == nil {
					mismatch[i] = f.Reason
				}
			}
		}
	}

	var claims []Claim
	passed, known := 0, true
	for i, b := range items {
		c := Claim{Field: fmt.Sprintf("results.benchmarks[%d].verdict", i), Item: b.ID, Claim: b.Verdict}
		switch reason, bad := mismatch[i]; {
		case i > reached:
			known = false
			c.Basis = "not recomputed: codec/avir stopped listing findings before this item"
		case bad:
			c.Recomputed = flip(b.Verdict)
			c.Agrees = boolPtr(false)
			c.Basis = reason
		default:
			c.Recomputed = b.Verdict
			c.Agrees = boolPtr(true)
			c.Basis = itemBasis(b)
		}
		if c.Recomputed == "PASS" {
			passed++
		}
		claims = append(claims, c)
	}

	total := len(items)
	s := a.ResultSummary()
	from := fmt.Sprintf("the recomputed verdicts: %d of %d PASS", passed, total)
	count := func(field string, claim int64, recomputed int) {
		c := Claim{Field: field, Claim: strconv.FormatInt(claim, 10), Basis: from}
		if known {
			c.Recomputed = strconv.Itoa(recomputed)
			c.Agrees = boolPtr(claim == int64(recomputed))
		}
		claims = append(claims, c)
	}
	count("results.summary.total", s.Total, total)
	count("results.summary.passed", s.Passed, passed)
	count("results.summary.failed", s.Failed, total-passed)
	rate := Claim{Field: "results.summary.pass_rate", Claim: canonjson.FormatFloat(s.PassRate), Basis: from}
	if known {
		r := 0.0
		if total > 0 {
			r = float64(passed) / float64(total)
		}
		rate.Recomputed = canonjson.FormatFloat(math.Round(r*1000) / 1000)
		rate.Agrees = boolPtr(math.Abs(s.PassRate-r) <= passRateTol)
	}
	claims = append(claims, rate)

	verdict := Claim{Field: "verdict", Claim: a.Verdict(), Basis: "section 10.2 over " + from}
	if known {
		want := avir.OverallVerdict(passed, total)
		verdict.Recomputed = want
		ok := a.Verdict() == want
		if total == 0 {
			verdict.Recomputed = "INVALID or INCONCLUSIVE"
			ok = ok || a.Verdict() == "INCONCLUSIVE"
		}
		verdict.Agrees = boolPtr(ok)
	}
	claims = append(claims, verdict)

	if d := a.VerdictDetails(); a.Form() == codec.FormReference && d != "" {
		c := Claim{Field: "verdict_details", Claim: d, Basis: "the reference's wording for " + from}
		if want := avir.VerdictDetails(passed, total); known && want != "" {
			c.Recomputed = want
			c.Agrees = boolPtr(d == want)
		}
		claims = append(claims, c)
	}
	return claims
}

func flip(verdict string) string {
	if verdict == "PASS" {
		return "FAIL"
	}
	return "PASS"
}

// itemBasis renders what an item's verdict rests on, numbers as parsed.
func itemBasis(b avir.BenchmarkResult) string {
	f := canonjson.FormatFloat
	var sb strings.Builder
	fmt.Fprintf(&sb, "mean %s", f(b.Statistics.Mean))
	if b.Unit != "" {
		sb.WriteString(" " + b.Unit)
	}
	fmt.Fprintf(&sb, ", target %s, tolerance %s", f(b.Target), f(b.Tolerance))
	if b.Threshold != nil {
		fmt.Fprintf(&sb, ", threshold %s", f(*b.Threshold))
	}
	return sb.String()
}

// WriteJSON writes the report as one line of JSON.
func (r *AttestationReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteText writes the report for people.
func (r *AttestationReport) WriteText(w io.Writer, o TextOptions) error {
	t := newTextWriter(w, o)
	t.printf("%s %s\n", t.paint(sgrBold, "AVIR attestation"), inert(r.ID, false))
	t.field("system", r.System)
	t.field("form", r.Form)
	t.field("level", orText(r.Level, "none"))
	t.field("verifier", orText(r.Verifier, "none"))
	t.field("timestamp", orText(r.Timestamp, "none"))
	t.field("verdict", r.Verdict)
	t.field("signature", documentSignatureLine(r.Signature, "Ed25519"))
	t.field("specification", orText(r.Spec, "not supplied"))
	writeStatus(t, r.Valid, len(r.Findings))
	writeClaims(t, "claims, recomputed from the attestation's statistics", r.Claims)
	writeFindings(t, r.Findings)
	writeFacts(t, r.Facts)
	return t.err
}
