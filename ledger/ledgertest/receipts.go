package ledgertest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/proofledger/ledger/codec/vrf"
)

var (
	taskTypes        = []string{"code_generation", "translation", "data_processing", "refactoring", "test_generation", "bug_fix", "documentation", "sql_query"}
	verifierVersions = []string{"clawbizarre-verify/1.0", "clawbizarre-verify/1.1", "proofledger-vrf/1.0", "acme-verifier/2.3"}
	agentRoles       = []string{"coder", "reviewer", "translator", "etl", "tester", "planner", "docs", "sql"}
)

// agent is the planner's state of one agent's receipt chain.
type agent struct {
	id       string
	chained  bool   // receipts carry metadata.previous_receipt / chain_position
	last     string // receipt_id of the latest receipt, "" before the first
	next     int64  // chain_position of the next receipt
	signer   int    // verifier key of the latest receipt
	taskType string
	lang     int
}

// receiptPlan is what the planner fixes about a receipt: everything that
// depends on the receipts before it.
type receiptPlan struct {
	agentID   string
	receiptID string
	chain     *vrf.ChainLink // nil for an unchained agent
	signer    int
	taskType  string
	lang      int
}

// planReceipt picks the agent of the next receipt and advances its chain.
func (p *planner) planReceipt() *receiptPlan {
	a := p.agents[p.pickAgent()]
	if a.last != "" && len(p.keys.Verifiers) > 1 && p.rng.Float64() < p.cfg.SignerSwitch {
		a.signer = (a.signer + 1 + p.rng.IntN(len(p.keys.Verifiers)-1)) % len(p.keys.Verifiers)
	}
	rp := &receiptPlan{
		agentID:   a.id,
		receiptID: uuidString(uuid4(p.rng)),
		signer:    a.signer,
		taskType:  a.taskType,
		lang:      a.lang,
	}
	if a.chained {
		rp.chain = &vrf.ChainLink{PreviousReceipt: a.last, Position: a.next}
		a.next++
	}
	a.last = rp.receiptID
	return rp
}

// pickAgent draws an agent index, busier agents (low indexes) more often.
func (p *planner) pickAgent() int {
	u := p.rng.Float64() * p.agentCDF[len(p.agentCDF)-1]
	lo, hi := 0, len(p.agentCDF)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if p.agentCDF[mid] < u {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// newAgents makes the agents of a corpus and the cumulative weights the
// planner draws them by (weight 1/(k+1)^AgentSkew).
func newAgents(r *rand.Rand, cfg *Config) ([]*agent, []float64) {
	agents := make([]*agent, cfg.Agents)
	cdf := make([]float64, cfg.Agents)
	sum := 0.0
	for k := range agents {
		role := r.IntN(len(agentRoles))
		agents[k] = &agent{
			id:       fmt.Sprintf("%s-%s-%03d", pick(r, orgNames), agentRoles[role], k),
			chained:  r.Float64() >= cfg.Unchained,
			signer:   r.IntN(max(cfg.VerifierKeys, 1)),
			taskType: taskTypes[role%len(taskTypes)],
			lang:     r.IntN(len(languages)),
		}
		sum += 1 / math.Pow(float64(k+1), cfg.AgentSkew)
		cdf[k] = sum
	}
	return agents, cdf
}

// buildReceipt builds and signs a receipt with the content drawn from r.
func (g *generator) buildReceipt(j *job, r *rand.Rand) ([]byte, error) {
	rp := j.receipt
	cfg := &g.cfg
	lang := languages[rp.lang]
	taskType := rp.taskType
	if r.Float64() < 0.2 {
		taskType = pick(r, taskTypes) // agents do other work now and then
	}
	tier := 0
	if r.Float64() < cfg.Tier1 {
		tier = 1
	}

	n := cfg.MinDetails + r.IntN(cfg.MaxDetails-cfg.MinDetails+1)
	verdict := vrf.VerdictPass
	switch u := r.Float64(); {
	case u < cfg.ReceiptPartial:
		verdict = vrf.VerdictPartial
	case u < cfg.ReceiptPartial+cfg.ReceiptFail:
		verdict = vrf.VerdictFail
	case u < cfg.ReceiptPartial+cfg.ReceiptFail+cfg.ReceiptError:
		verdict = vrf.VerdictError
	}
	if verdict == vrf.VerdictPartial && n < 2 {
		if cfg.MaxDetails >= 2 {
			n = 2
		} else {
			verdict = vrf.VerdictFail
		}
	}
	status := make([]string, n)
	for i := range status {
		status[i] = vrf.StatusPass
	}
	switch verdict {
	case vrf.VerdictPartial:
		for _, i := range r.Perm(n)[:1+r.IntN(n-1)] {
			status[i] = vrf.StatusFail
		}
	case vrf.VerdictFail:
		for i := range status {
			status[i] = vrf.StatusFail
		}
	case vrf.VerdictError:
		for _, i := range r.Perm(n)[:1+r.IntN(max(1, n/4))] {
			status[i] = vrf.StatusError
			if r.IntN(3) == 0 {
				status[i] = vrf.StatusTimeout
			}
		}
	}

	details := make([]vrf.Detail, n)
	total := 0.0
	for i := range details {
		d := vrf.Detail{Name: testName(r, lang.goStyle), Status: status[i], DurationMS: logNormal(r, 35, 1.1, 0.05, 20000)}
		switch status[i] {
		case vrf.StatusFail:
			d.Error = fmt.Sprintf("AssertionError: expected %d, got %d", r.IntN(100), 100+r.IntN(100))
		case vrf.StatusError:
			d.Error = pick(r, []string{"RuntimeError: sandbox exited with code 137", "ImportError: No module named 'numpy'", "SyntaxError: unexpected EOF while parsing"})
		case vrf.StatusTimeout:
			d.DurationMS = 5000 + r.Float64()*50
			d.Error = "timed out after 5000 ms"
		}
		if tier == 0 && r.IntN(4) == 0 {
			d.Output = fmt.Sprintf("%d assertions, %d lines of output", 1+r.IntN(12), r.IntN(40))
		}
		total += d.DurationMS
		details[i] = d
	}

	taskID := ""
	if r.Float64() < 0.9 {
		taskID = pick(r, []string{"acp-tx-", "x402-", "job-", "seedref-task-"}) + hex8(r)
	}
	var out [8]byte
	for i := range out {
		out[i] = byte(r.Uint32())
	}
	h := vrf.Hashes{
		Input:  vrf.ShortHash([]byte(taskID + taskType + rp.agentID)),
		Output: vrf.ShortHash(out[:]),
		Suite:  vrf.ShortHash([]byte(taskType + lang.runtime)),
	}
	if tier == 0 {
		h.Environment = vrf.ShortHash([]byte(lang.runtime + "/sandbox"))
	}
	draft := vrf.Draft{
		ReceiptID:  rp.receiptID,
		VerifiedAt: j.at,
		Tier:       tier,
		Details:    details,
		Hashes:     h,
		Metadata: vrf.Metadata{
			VerifierVersion: verifierVersions[rp.signer%len(verifierVersions)],
			ExecutionMS:     math.Round((total+20+r.Float64()*180)*100) / 100,
			Sandboxed:       r.IntN(20) != 0,
			Language:        lang.name,
			Runtime:         lang.runtime,
		},
		TaskID:   taskID,
		TaskType: taskType,
		AgentID:  rp.agentID,
		Chain:    rp.chain,
	}
	doc, err := draft.Build()
	if err != nil {
		return nil, fmt.Errorf("receipt %s: %w", rp.receiptID, err)
	}
	data, err := vrf.Sign(doc, g.keys.Verifiers[rp.signer])
	if err != nil {
		return nil, fmt.Errorf("receipt %s: %w", rp.receiptID, err)
	}
	return data, nil
}
