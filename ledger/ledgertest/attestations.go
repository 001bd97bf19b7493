package ledgertest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/proofledger/ledger/codec/avir"
	"github.com/proofledger/ledger/codec/canonjson"
)

var (
	systemNames  = []string{"Agentic System", "CodeWeaver", "Memoria", "Atlas Planner", "Sentinel RAG", "Helix Coder", "Orca Tools", "Quill Docs"}
	versionNames = []string{"1.0.0", "1.1.0", "1.2.3", "2.0.0", "2.1.0", "3.0.0"}
	verifiers    = []avir.Verifier{
		{Provider: "claude", Model: "claude-sonnet-4-20250514"},
		{Provider: "openai", Model: "gpt-4.1-2025-04-14"},
		{Provider: "google", Model: "gemini-2.5-pro"},
	}
	environments = []avir.Environment{
		{Container: "avir-verification:1.0.0", OS: "linux", Arch: "amd64", PythonVersion: "3.11.7", CPUCores: 8, MemoryGB: 31.2},
		{Container: "avir-verification:1.0.0", OS: "linux", Arch: "arm64", PythonVersion: "3.12.4", CPUCores: 16, MemoryGB: 62.8},
		{Container: "avir-verification:1.1.0", OS: "linux", Arch: "amd64", PythonVersion: "3.12.4", CPUCores: 4, MemoryGB: 15.6},
	}
)

// benchDef is a benchmark a generated specification may define.
type benchDef struct {
	id, description, methodology, unit, category string
	target                                       float64
	intTarget                                    bool
	tolerance                                    float64
	lowerIsBetter                                bool
	decimals                                     int // of the recorded run values; 0 records ints
}

var benchPool = []benchDef{
	{"memory_entity_creation", "Create memory entities with versioning", "Create 1000 entities of 100B-10KB, measure throughput", "ops/s", "memory", 435, true, 0.2, false, 0},
	{"semantic_search_latency", "Search 10k entities", "Run 100 semantic queries, measure p50 latency", "ms", "memory", 120.5, false, 0.25, true, 2},
	{"task_decomposition_accuracy", "Decompose planning tasks", "Score 50 decompositions against a rubric", "ratio", "reasoning", 0.9, false, 0.05, false, 3},
	{"code_completion_pass_at_1", "Complete functions from docstrings", "Run 164 problems, count first-try passes", "ratio", "reasoning", 0.62, false, 0.1, false, 3},
	{"tool_call_latency_p50", "Round-trip of one tool call", "Time 500 tool calls through the agent loop", "ms", "performance", 850, true, 0.2, true, 1},
	{"multi_agent_handoff", "Hand a task between two agents", "Run 200 handoffs, count completed ones", "ratio", "coordination", 0.95, false, 0.03, false, 3},
	{"context_recall", "Recall facts from a long context", "Ask 300 questions over 100k-token contexts", "ratio", "memory", 0.85, false, 0.08, false, 3},
	{"tokens_per_second", "Generation throughput", "Generate 50 answers of 1k tokens, measure tokens/s", "tokens/s", "performance", 95, true, 0.15, false, 1},
}

// system is one version of an AVIR system under test and its specification.
type system struct {
	key     string // "name vversion"
	spec    *avir.Spec
	data    []byte // the specification as a JSON document
	benches []avir.Benchmark
	decs    map[string]int // run value decimals by benchmark id
	levels  []string
	env     avir.Environment
	emitted bool // planner state: the spec document was emitted
}

// newSystems builds the specifications of every system version.
func newSystems(r *rand.Rand, cfg *Config) ([]*system, error) {
	parser, err := avir.NewParser()
	if err != nil {
		return nil, fmt.Errorf("ledgertest: %w", err)
	}
	var out []*system
	str := canonjson.MakeString
	m := func(k string, v canonjson.Value) canonjson.Member { return canonjson.Member{Key: k, Value: v} }
	for s := range cfg.Systems {
		name := systemNames[s]
		defs := make([]benchDef, 0, 5)
		for _, i := range r.Perm(len(benchPool))[:3+r.IntN(3)] {
			defs = append(defs, benchPool[i])
		}
		runs := []int{3, 5, 5, 10}[r.IntN(4)]
		levels := map[int][]string{3: {"L1"}, 5: {"L2", "L2", "L3"}, 10: {"L4", "L4", "L2"}}[runs]
		env := environments[r.IntN(len(environments))]
		for v := range cfg.Versions {
			version := versionNames[v]
			var benches []canonjson.Value
			caps := map[string][]canonjson.Value{}
			var catOrder []string
			decs := map[string]int{}
			for _, d := range defs {
				// Later versions aim higher (or lower, for lower-is-better).
				scale := 1 + 0.04*float64(v)
				if d.lowerIsBetter {
					scale = 1 / scale
				}
				target := canonjson.MakeFloat(math.Round(d.target*scale*1000) / 1000)
				if d.intTarget {
					target = canonjson.MakeInt(int64(math.Round(d.target * scale)))
				}
				if d.unit == "ratio" {
					target = canonjson.MakeFloat(math.Min(math.Round(d.target*scale*1000)/1000, 0.99))
				}
				benches = append(benches, canonjson.MakeObject(
					m("id", str(d.id)),
					m("description", str(d.description)),
					m("methodology", str(d.methodology)),
					m("target", target),
					m("unit", str(d.unit)),
					m("tolerance", canonjson.MakeFloat(d.tolerance)),
					m("lower_is_better", canonjson.MakeBool(d.lowerIsBetter)),
					m("runs", canonjson.MakeInt(int64(runs))),
					m("warmup_runs", canonjson.MakeInt(int64(r.IntN(3)))),
					m("outlier_policy", str("iqr")),
				))
				if _, ok := caps[d.category]; !ok {
					catOrder = append(catOrder, d.category)
				}
				caps[d.category] = append(caps[d.category], str(d.id))
				decs[d.id] = d.decimals
			}
			var capList []canonjson.Value
			for _, c := range catOrder {
				capList = append(capList, canonjson.MakeObject(
					m("name", str(c+"_capability")),
					m("description", str("what the "+c+" benchmarks demonstrate")),
					m("category", str(c)),
					m("benchmarks", canonjson.MakeArray(caps[c]...)),
				))
			}
			doc := canonjson.MakeObject(
				m("avir_version", str("1.0.0")),
				m("system", canonjson.MakeObject(
					m("name", str(name)),
					m("version", str(version)),
					m("description", str(name+", an AI system under independent verification")),
					m("repository", str(fmt.Sprintf("https://github.com/%s/%s", orgNames[s%len(orgNames)], slug(name)))),
				)),
				m("capabilities", canonjson.MakeArray(capList...)),
				m("benchmarks", canonjson.MakeArray(benches...)),
				m("metadata", canonjson.MakeObject(
					m("author", str("ledgertest")),
					m("tags", canonjson.MakeArray(str("generated"), str(slug(name)))),
				)),
			)
			data := canonjson.Indent(doc)
			spec, err := parser.ParseSpec(data)
			if err != nil {
				return nil, fmt.Errorf("ledgertest: specification of %s %s: %w", name, version, err)
			}
			out = append(out, &system{key: spec.SystemKey(), spec: spec, data: data, benches: spec.Benchmarks(),
				decs: decs, levels: levels, env: env})
		}
	}
	return out, nil
}

func slug(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case c == ' ':
			b[i] = '-'
		}
	}
	return string(b)
}

// attestPlan is what the planner fixes about an attestation.
type attestPlan struct {
	sys *system
}

// buildAttestation runs (on paper) every benchmark of the system, builds
// the attestation and signs it.
func (g *generator) buildAttestation(j *job, r *rand.Rand) (data []byte, id string, err error) {
	sys := j.attest.sys
	cfg := &g.cfg
	n := len(sys.benches)
	// Choose the verdict, then how many benchmarks fail to give it: pass
	// rate 1 is VERIFIED, at least 0.6 PARTIAL, below FAILED.
	// Pass rate (n-f)/n >= 0.6 holds exactly when f <= 2n/5.
	fails := 0
	switch u := r.Float64(); {
	case u < cfg.AttestPartial:
		fails = 1 // with fewer than three benchmarks this is FAILED
		if maxF := 2 * n / 5; maxF > 1 {
			fails = 1 + r.IntN(maxF)
		}
	case u < cfg.AttestPartial+cfg.AttestFailed:
		minF := 2*n/5 + 1
		fails = minF + r.IntN(n-minF+1)
	}
	failing := map[int]bool{}
	for _, i := range r.Perm(n)[:fails] {
		failing[i] = true
	}
	runs := make(map[string][]canonjson.Value, n)
	for i, b := range sys.benches {
		// Pass values sit clearly on the good side of the threshold, fail
		// values clearly on the bad side, so that the mean after outlier
		// filtering lands where intended.
		var lo, hi float64
		if b.LowerIsBetter {
			thr := b.Target * (1 + b.Tolerance)
			lo, hi = b.Target*0.75, thr*0.97
			if failing[i] {
				lo, hi = thr*1.05, thr*1.5
			}
		} else {
			thr := b.Target * (1 - b.Tolerance)
			lo, hi = thr*1.03, b.Target*1.1
			if failing[i] {
				lo, hi = thr*0.6, thr*0.95
			}
		}
		dec := sys.decs[b.ID]
		vals := make([]canonjson.Value, b.Runs)
		for k := range vals {
			v := lo + r.Float64()*(hi-lo)
			if dec == 0 {
				vals[k] = canonjson.MakeInt(int64(math.Round(v)))
			} else {
				p := math.Pow(10, float64(dec))
				vals[k] = canonjson.MakeFloat(math.Round(v*p) / p)
			}
		}
		runs[b.ID] = vals
	}
	completed := j.at
	started := completed.Add(-time.Duration(5*60+r.IntN(55*60)) * time.Second).Add(-time.Duration(r.IntN(1_000_000)) * time.Microsecond)
	ver := verifiers[r.IntN(len(verifiers))]
	ver.InstanceID = uuidString(uuid4(r))
	a, err := avir.BuildAttestation(avir.BuildInput{
		Spec:        sys.spec,
		SpecSource:  "specs/" + slug(sys.key) + ".avir.json",
		Runs:        runs,
		Environment: sys.env,
		Verifier:    ver,
		Level:       pick(r, sys.levels),
		Started:     started,
		Completed:   completed,
	})
	if err != nil {
		return nil, "", fmt.Errorf("attestation of %s: %w", sys.key, err)
	}
	signed, err := avir.Sign(a, g.keys.AVIR)
	if err != nil {
		return nil, "", fmt.Errorf("attestation of %s: %w", sys.key, err)
	}
	return signed.Bytes(), signed.ID(), nil
}
