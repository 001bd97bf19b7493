package ledgertest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/rvww"
)

// recentTasks is how many recent tasks a re-run may pick from.
const recentTasks = 512

// task is the planner's state of one task.
type task struct {
	id       [16]byte
	policy   int // index into governance.Defaults()
	attempts uint16
	seed     uint64 // draws the task's repository and SPEC text
}

// bundlePlan is what the planner fixes about a bundle.
type bundlePlan struct {
	task      [16]byte
	policy    int
	retry     uint16
	taskSeed  uint64
	createdNS uint64
}

// planBundle picks the next bundle's task: a recent one again (a retry or
// re-run) or a new one.
func (p *planner) planBundle(at time.Time, index int) *bundlePlan {
	var t *task
	if len(p.tasks) > 0 && p.rng.Float64() < p.cfg.TaskRepeat {
		t = p.tasks[p.rng.IntN(len(p.tasks))]
	} else {
		policy := 2 // autonomous 40%, approved 35%, restricted 25%
		switch u := p.rng.Float64(); {
		case u < 0.25:
			policy = 0
		case u < 0.60:
			policy = 1
		}
		t = &task{id: uuid4(p.rng), policy: policy, seed: p.rng.Uint64()}
		if len(p.tasks) < recentTasks {
			p.tasks = append(p.tasks, t)
		} else {
			p.tasks[p.taskNext] = t
			p.taskNext = (p.taskNext + 1) % recentTasks
		}
	}
	bp := &bundlePlan{task: t.id, policy: t.policy, retry: t.attempts, taskSeed: t.seed,
		// Times are whole microseconds; the index's last three digits keep
		// two runs of one task in the same microsecond apart.
		createdNS: uint64(at.UnixNano()) + uint64(index%1000)}
	t.attempts++
	return bp
}

// Tool mixes: name and weight.
type weighted struct {
	name   string
	weight int
}

var (
	readOnlyTools = []weighted{{"Read", 35}, {"Grep", 25}, {"Glob", 20}, {"WebFetch", 10}, {"WebSearch", 10}}
	allTools      = []weighted{{"Read", 25}, {"Grep", 15}, {"Glob", 9}, {"Edit", 18}, {"Bash", 15}, {"Write", 7}, {"WebFetch", 5}, {"WebSearch", 3}, {"TodoWrite", 2}, {"Task", 1}}
	deniedTools   = []string{"Bash", "Edit", "Write"}
)

func pickWeighted(r *rand.Rand, list []weighted) string {
	total := 0
	for _, w := range list {
		total += w.weight
	}
	n := r.IntN(total)
	for _, w := range list {
		if n < w.weight {
			return w.name
		}
		n -= w.weight
	}
	return list[len(list)-1].name
}

// The ways a bundle can break its policy on purpose.
const (
	violateNone = iota
	violateDenied
	violateCost
	violateCalls
)

// buildBundle builds and HMAC-signs a witness bundle with the content
// drawn from r.
func (g *generator) buildBundle(j *job, r *rand.Rand) ([]byte, error) {
	bp := j.bundle
	cfg := &g.cfg
	policy := governance.Defaults()[bp.policy]
	tr := rand.New(rand.NewPCG(bp.taskSeed, 0x7461736b))
	rp := newRepo(tr)

	outcome := rvww.OutcomeSolved
	if r.Float64() >= cfg.Solved {
		switch u := r.Float64(); {
		case u < 0.65:
			outcome = rvww.OutcomeFailed
		case u < 0.85:
			outcome = rvww.OutcomeErrored
		default:
			outcome = rvww.OutcomeSkipped
		}
	}

	violation := violateNone
	if r.Float64() < cfg.Violations {
		switch u := r.Float64(); {
		case policy.Mode == governance.ModeRestricted && u < 0.5:
			violation = violateDenied
		case u < 0.8:
			violation = violateCost
		default:
			violation = violateCalls
		}
	}

	// The trace: 3 to 60 calls within the call budget, unless it is the
	// budget that is broken.
	maxCalls := min(int(policy.MaxToolCalls), 60)
	n := 3 + r.IntN(maxCalls-2)
	if violation == violateCalls {
		n = int(policy.MaxToolCalls) + 1 + r.IntN(10)
	}
	tools := allTools
	if policy.Mode == governance.ModeRestricted {
		tools = readOnlyTools
	}
	calls := make([]rvww.ToolCall, n)
	for i := range calls {
		calls[i].Action = pickWeighted(r, tools)
	}
	if violation == violateDenied {
		for range 1 + r.IntN(2) {
			calls[r.IntN(n)].Action = pick(r, deniedTools)
		}
	}
	budget := float64(policy.MaxCostMicrodollars)
	target := budget * (0.02 + r.Float64()*0.6)
	if violation == violateCost {
		target = budget * (1.05 + r.Float64()*0.55)
	}
	weights := make([]float64, n)
	sum := 0.0
	for i := range weights {
		weights[i] = logNormal(r, 1, 0.8, 0.05, 20)
		sum += weights[i]
	}
	var cost uint64
	for i := range calls {
		c := &calls[i]
		c.PolicyCheck = rvww.PolicyCheck(policy.Check(c.Action))
		c.CostMicrodollars = uint32(target * weights[i] / sum)
		cost += uint64(c.CostMicrodollars)
		c.LatencyMS = uint32(logNormal(r, 400, 1.2, 5, 120_000))
		c.Tokens = uint32(logNormal(r, 1500, 1.0, 50, 32_000))
		for k := range 8 {
			c.ArgsHash[k] = byte(r.Uint32())
			c.ResultHash[k] = byte(r.Uint32())
		}
	}
	if violation == violateCost && cost <= uint64(policy.MaxCostMicrodollars) {
		calls[n-1].CostMicrodollars += uint32(uint64(policy.MaxCostMicrodollars) - cost + 1)
	}

	b := &rvww.Bundle{
		Header: rvww.Header{
			TaskID:     bp.task,
			PolicyHash: policy.Hash(),
			CreatedNS:  bp.createdNS,
			Outcome:    outcome,
			Mode:       rvww.Mode(policy.Mode),
			RetryCount: bp.retry,
		},
		Calls: calls,
	}
	solved := outcome == rvww.OutcomeSolved
	b.HasSpec = true
	b.HasPlan = r.Float64() < 0.85
	switch outcome {
	case rvww.OutcomeSolved:
		b.HasDiff, b.HasTestLog = true, true
	case rvww.OutcomeFailed:
		b.HasDiff, b.HasTestLog = r.Float64() < 0.7, r.Float64() < 0.9
	case rvww.OutcomeErrored:
		b.HasDiff, b.HasTestLog = r.Float64() < 0.3, r.Float64() < 0.5
	}
	b.HasPostmortem = !solved && r.Float64() < 0.6
	if solved && r.Float64() < cfg.Incomplete {
		switch u := r.Float64(); {
		case u < 0.5:
			b.HasTestLog = false
		case u < 0.8:
			b.HasDiff = false
		default:
			b.HasSpec = false
		}
	}
	// The text sections come last, so that TextScale, which changes how
	// many draws they take from r, changes nothing above.
	if s := cfg.TextScale; s != 1 {
		scaledSections(b, r, tr, rp, s, outcome.String(), int(bp.retry), solved)
	} else {
		if b.HasSpec {
			b.Spec = specText(tr, rp)
		}
		if b.HasPlan {
			b.Plan = planText(r, rp)
		}
		if b.HasDiff {
			b.Diff = diffText(r, rp, int(logNormal(r, 5<<10, 0.8, 1<<10, 30<<10)))
		}
		if b.HasTestLog {
			b.TestLog = testLogText(r, rp, int(logNormal(r, 2<<10, 0.8, 512, 10<<10)), solved)
		}
		if b.HasPostmortem {
			b.Postmortem = postmortemText(r, rp, outcome.String(), int(bp.retry))
		}
	}
	data, err := rvww.Encode(b, g.keys.HMAC.Secret)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", uuidString(bp.task), err)
	}
	return data, nil
}

// scaledSections fills b's text sections at scale s (Config.TextScale, not
// 1): the sizes the default draws, times s. DIFF and TEST_LOG are made at
// the scaled size; SPEC, PLAN and POSTMORTEM, whose size the default does
// not draw, are cut or repeated to it.
func scaledSections(b *rvww.Bundle, r, tr *rand.Rand, rp repo, s float64, outcome string, retry int, solved bool) {
	scaled := func(n int) int { return max(1, int(math.Round(float64(n)*s))) }
	if b.HasSpec {
		spec := specText(tr, rp)
		b.Spec = fitText(spec, scaled(len(spec)))
	}
	if b.HasPlan {
		plan := planText(r, rp)
		b.Plan = fitText(plan, scaled(len(plan)))
	}
	if b.HasDiff {
		n := scaled(int(logNormal(r, 5<<10, 0.8, 1<<10, 30<<10)))
		b.Diff = fitText(diffText(r, rp, n), n)
	}
	if b.HasTestLog {
		n := scaled(int(logNormal(r, 2<<10, 0.8, 512, 10<<10)))
		b.TestLog = fitText(testLogText(r, rp, n, solved), n)
	}
	if b.HasPostmortem {
		pm := postmortemText(r, rp, outcome, retry)
		b.Postmortem = fitText(pm, scaled(len(pm)))
	}
}

// fitText returns text cut to n bytes, or repeated until it is n bytes
// long. The generated text is ASCII, so a cut never splits a character.
func fitText(text []byte, n int) []byte {
	if len(text) == 0 || n <= len(text) {
		return text[:min(n, len(text))]
	}
	out := make([]byte, 0, n)
	for len(out) < n {
		out = append(out, text[:min(len(text), n-len(out))]...)
	}
	return out
}
