package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/avir"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/inspect"
	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/codec/vrf"
)

// The project's sample documents, and where the goldens go.
const (
	rvwwSamples = "../testdata/rvww"
	rvwwVectors = "../testdata/vectors/rvww"
	demoBundles = "../testdata/demo/rvww"
	avirSamples = "../testdata/avir"
	avirVectors = "../testdata/vectors/avir"
	vrfSamples  = "../testdata/vrf"
	vrfVectors  = "../testdata/vectors/vrf"
	goldenDir   = "testdata/golden"
)

// demoPicks are demo bundles replayed into goldens, one per kind of
// outcome and test log the demo corpus has; TestDemoOutcomes covers the
// whole corpus in one file.
var demoPicks = []string{
	"2026-W02-000-b585e0d4-ef65-4047-9de8-41e89af350cc", // solved, pytest
	"2026-W02-002-f72003e8-21f2-42f3-a424-aff105a2b660", // failed, pytest
	"2026-W02-005-64507db7-a624-4ef5-a011-cc59db7c79c6", // solved, go test -v
	"2026-W02-009-196c4b5f-8f2e-484d-80cf-1c21fafe01c9", // failed, no test log
	"2026-W02-011-8033bd4d-6e28-4a98-ad6a-0ba6f2687cff", // errored, pytest failures
	"2026-W03-012-7e8af731-7664-4e19-9a39-bdc426fed84c", // failed, go test -v
	"2026-W04-020-c830afcc-a12d-4630-8bc7-69d3141e279d", // skipped
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func vectorKey(t testing.TB) []byte { return readFile(t, filepath.Join(rvwwVectors, "hmac_key.txt")) }

// bundleKeys are the keys bundles are verified with: the vectors' key
// (samples, vectors, fixtures) and the demo key.
func bundleKeys(t testing.TB) []rvww.Key {
	return []rvww.Key{
		{Name: "hmac_key.txt", Secret: vectorKey(t)},
		{Name: "demo/hmac_key.bin", Secret: readFile(t, "../testdata/demo/hmac_key.bin")},
	}
}

// extraPolicies are the policies registered besides the defaults: the
// custom policy of the rvww samples.
func extraPolicies(t testing.TB) []governance.Policy {
	p, err := governance.ParsePolicy(readFile(t, filepath.Join(rvwwSamples, "policies", "custom_read_grep.json")))
	if err != nil {
		t.Fatal(err)
	}
	return []governance.Policy{p}
}

// replayBytes decodes and verifies a bundle as the ledger does (keys,
// registered policies) and replays it.
func replayBytes(t testing.TB, data []byte) (*BundleReport, error) {
	t.Helper()
	b, err := rvww.Decode(data)
	if err != nil {
		return nil, err
	}
	b.Verify(bundleKeys(t))
	opts := BundleOptions{KeyID: b.VerifiedKey(), SignatureVerified: b.VerifiedKey() != ""}
	if p, ok := inspect.PolicyByHash(b.Header.PolicyHash, extraPolicies(t)); ok {
		opts.Policy = &p
	}
	r, err := Bundle(b, opts)
	if err != nil {
		t.Fatalf("Bundle: %v", err)
	}
	return r, nil
}

func replayFile(t testing.TB, path string) *BundleReport {
	t.Helper()
	r, err := replayBytes(t, readFile(t, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// renderings are the bytes of one report: text, coloured text and JSON.
type renderings struct{ text, color, json []byte }

// writer is what the three reports have in common.
type writer interface {
	WriteText(w io.Writer, o TextOptions) error
	WriteJSON(w io.Writer) error
}

func render(t testing.TB, r writer) renderings {
	t.Helper()
	var text, color, js bytes.Buffer
	if err := errors.Join(r.WriteText(&text, TextOptions{}), r.WriteText(&color, TextOptions{Color: true}), r.WriteJSON(&js)); err != nil {
		t.Fatal(err)
	}
	return renderings{text.Bytes(), color.Bytes(), js.Bytes()}
}

// checkInert fails unless text is UTF-8 with nothing a terminal would act
// on: no escape sequence, no control character but newline and tab, no
// bidirectional-text control.
func checkInert(t testing.TB, name string, text []byte) {
	t.Helper()
	if !utf8.Valid(text) {
		t.Errorf("%s: plain text is not UTF-8", name)
		return
	}
	for i, ch := range string(text) {
		if ch != '\n' && needsEscape(ch, true) {
			t.Errorf("%s: plain text has %U at byte %d", name, ch, i)
			return
		}
	}
}

// goldenCase is one replay rendered into goldens: <golden>.txt and
// <golden>.json, and <golden>.color.txt when color is set.
type goldenCase struct {
	golden string
	color  bool
	run    func(t testing.TB) renderings
}

// avirSpecFor names the specification each sample attestation was made
// for (codec/avir's sample generator pairs them the same way).
func avirSpecFor(name string) string {
	switch name {
	case "spec_form_signed.attestation.json":
		return "valid_minimal.spec.json"
	case "invalid_no_benchmarks.attestation.json":
		return "valid_no_benchmarks.spec.json"
	case "bad_level_L2_3_runs.attestation.json":
		return "valid_three_runs.spec.json"
	}
	return "valid_full.spec.json"
}

// goldenCases lists every replay with a golden: the rvww samples that
// decode, the rvww vectors, the fixtures, the demo picks; every AVIR
// sample attestation that parses, against its specification (and the
// verified one without, too), and the AVIR vectors; every VRF sample
// receipt that parses and the VRF vectors. It also returns the inputs
// that do not decode, which have no replay.
func goldenCases(t testing.TB) (cases []goldenCase, undecodable []string) {
	t.Helper()
	bundle := func(golden, path string, color bool) {
		data := readFile(t, path)
		if _, err := rvww.Decode(data); err != nil {
			if !errors.Is(err, codec.ErrMalformed) {
				t.Fatalf("%s: %v", path, err)
			}
			undecodable = append(undecodable, path)
			return
		}
		cases = append(cases, goldenCase{golden, color, func(t testing.TB) renderings {
			r, err := replayBytes(t, data)
			if err != nil {
				t.Fatal(err)
			}
			return render(t, r)
		}})
	}
	for _, dir := range []struct{ path, golden string }{
		{rvwwSamples, "rvww"}, {rvwwVectors, "vectors/rvww"}, {fixtureDir, "fixtures"},
	} {
		for _, name := range listDir(t, dir.path, ".rvww") {
			bundle(dir.golden+"/"+strings.TrimSuffix(name, ".rvww"), filepath.Join(dir.path, name), dir.golden == "fixtures")
		}
	}
	for _, name := range demoPicks {
		bundle("demo/"+name, filepath.Join(demoBundles, name+".rvww"), false)
	}

	parser, err := avir.NewParser()
	if err != nil {
		t.Fatal(err)
	}
	spec := func(path string) *avir.Spec {
		s, err := parser.ParseSpec(readFile(t, path))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return s
	}
	attestation := func(golden, path string, s *avir.Spec) {
		a, err := parser.ParseAttestation(readFile(t, path))
		if err != nil {
			undecodable = append(undecodable, path)
			return
		}
		cases = append(cases, goldenCase{golden, false, func(t testing.TB) renderings {
			r, err := Attestation(a, avir.VerifyOptions{Spec: s})
			if err != nil {
				t.Fatal(err)
			}
			return render(t, r)
		}})
	}
	for _, name := range listDir(t, avirSamples, ".attestation.json") {
		base := strings.TrimSuffix(name, ".attestation.json")
		attestation("avir/"+base, filepath.Join(avirSamples, name), spec(filepath.Join(avirSamples, avirSpecFor(name))))
		if name == "verified_signed.attestation.json" {
			attestation("avir/"+base+".no_spec", filepath.Join(avirSamples, name), nil)
		}
	}
	vectorSpec := spec(filepath.Join(avirVectors, "01_verified_L2.spec.json"))
	for _, name := range listDir(t, avirVectors, ".attestation.json") {
		attestation("vectors/avir/"+strings.TrimSuffix(name, ".attestation.json"), filepath.Join(avirVectors, name), vectorSpec)
	}

	receipt := func(golden, path string) {
		r, err := vrf.Parse(readFile(t, path))
		if err != nil {
			undecodable = append(undecodable, path)
			return
		}
		cases = append(cases, goldenCase{golden, false, func(t testing.TB) renderings {
			rep, err := Receipt(r)
			if err != nil {
				t.Fatal(err)
			}
			return render(t, rep)
		}})
	}
	for _, dir := range []struct{ path, golden string }{{vrfSamples, "vrf"}, {vrfVectors, "vectors/vrf"}} {
		for _, name := range listDir(t, dir.path, ".json") {
			if strings.HasSuffix(name, "_key.json") {
				continue // key files, not receipts
			}
			receipt(dir.golden+"/"+strings.TrimSuffix(name, ".json"), filepath.Join(dir.path, name))
		}
	}
	return cases, undecodable
}

// listDir returns the names in dir ending in suffix, sorted.
func listDir(t testing.TB, dir, suffix string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), suffix) {
			names = append(names, e.Name())
		}
	}
	return names
}

// checkGolden compares got with the golden file, or rewrites it under
// -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./replay -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the replay (run go test ./replay -update and review the diff):\n%s", path, firstDiff(want, got))
	}
}

// firstDiff shows the first line where two renderings differ.
func firstDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			// Show the neighbourhood of the first differing byte.
			at := 0
			for at < len(w) && at < len(g) && w[at] == g[at] {
				at++
			}
			from := max(at-40, 0)
			clip := func(s string) string { return s[min(from, len(s)):min(at+80, len(s))] }
			return fmt.Sprintf("line %d, byte %d:\n want %q\n  got %q", i+1, at+1, clip(w), clip(g))
		}
	}
	return "(same lines)"
}

// TestGolden replays every sample, vector and fixture and compares each
// rendering with its golden file under testdata/golden; -update rewrites
// them. Files in testdata/golden that no case makes are reported.
func TestGolden(t *testing.T) {
	cases, undecodable := goldenCases(t)
	if len(cases) < 100 {
		t.Fatalf("only %d cases: are the samples there?", len(cases))
	}
	made := map[string]bool{}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			r := c.run(t)
			base := filepath.Join(goldenDir, filepath.FromSlash(c.golden))
			made[base+".txt"], made[base+".json"] = true, true
			checkGolden(t, base+".txt", r.text)
			checkGolden(t, base+".json", r.json)
			if c.color {
				made[base+".color.txt"] = true
				checkGolden(t, base+".color.txt", r.color)
			}
		})
	}
	list := filepath.Join(goldenDir, "undecodable.txt")
	made[list] = true
	slices.Sort(undecodable)
	checkGolden(t, list, []byte(strings.Join(undecodable, "\n")+"\n"))

	if *update {
		return
	}
	err := filepath.WalkDir(goldenDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !made[path] && !strings.HasPrefix(d.Name(), "demo-") {
			t.Errorf("%s is not made by any case; delete it", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDeterministic replays every case twice, each time from freshly
// decoded documents, and demands the same bytes in every rendering.
func TestDeterministic(t *testing.T) {
	cases, _ := goldenCases(t)
	again, _ := goldenCases(t)
	for i, c := range cases {
		first, second := c.run(t), again[i].run(t)
		for _, r := range []struct {
			name string
			a, b []byte
		}{{"text", first.text, second.text}, {"color", first.color, second.color}, {"json", first.json, second.json}} {
			if !bytes.Equal(r.a, r.b) {
				t.Errorf("%s: %s rendering differs between two runs:\n%s", c.golden, r.name, firstDiff(r.a, r.b))
			}
		}
	}
}

var reSGR = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// TestTextIsInert checks every plain rendering for bytes a terminal would
// act on: no escape sequence, no control character but newline and tab,
// no bidirectional-text control; and that the coloured rendering differs
// from it only by SGR sequences.
func TestTextIsInert(t *testing.T) {
	cases, _ := goldenCases(t)
	for _, c := range cases {
		r := c.run(t)
		checkInert(t, c.golden, r.text)
		if stripped := reSGR.ReplaceAll(r.color, nil); !bytes.Equal(stripped, r.text) {
			t.Errorf("%s: coloured text is not the plain text plus colour:\n%s", c.golden, firstDiff(r.text, stripped))
		}
	}
}

// TestDemoOutcomes replays the whole demo corpus and keeps one line per
// bundle (outcome, runner, counts, outcome check) in
// testdata/golden/demo-outcomes.txt.
func TestDemoOutcomes(t *testing.T) {
	var out bytes.Buffer
	names := listDir(t, demoBundles, ".rvww")
	if len(names) < 200 {
		t.Fatalf("only %d demo bundles", len(names))
	}
	for _, name := range names {
		r := replayFile(t, filepath.Join(demoBundles, name))
		if r.Signature.Status != SignatureVerified || r.Policy == nil {
			t.Errorf("%s: signature %s, policy %v: the demo bundles are signed with the demo key under default policies", name, r.Signature.Status, r.Policy)
		}
		runner := r.Tests.Runner
		if runner == "" {
			runner = "-"
		}
		fmt.Fprintf(&out, "%s  %-8s %-8s %-40s %s\n", strings.TrimSuffix(name, ".rvww"), r.Outcome, runner, r.Tests.Counts, r.OutcomeCheck)
	}
	checkGolden(t, filepath.Join(goldenDir, "demo-outcomes.txt"), out.Bytes())
}
