package index

import (
	"errors"
	"math"
	"sort"
	"time"

	"github.com/proofledger/ledger/ledger"
)

// Reader is what queries need: a consistent view with point reads and
// ordered range scans. *ledger.Snapshot implements it.
type Reader interface {
	Get(key []byte) ([]byte, error) // ledger.ErrNotFound when absent
	Range(lower, upper []byte, fn func(k, v []byte) (bool, error)) error
}

// Reputation is the reputation of an agent, a signer or a task type.
type Reputation struct {
	// Subject names the agent, the signer ("ed25519:<hex>") or the task type.
	Subject                    string
	Pass, Fail, Partial, Error int64
	// First and Last are the document times of the first and last receipt.
	First, Last time.Time
	s, f        float64 // decayed sums, scaled to decayEpoch
}

// Receipts returns the number of receipts counted.
func (r Reputation) Receipts() int64 { return r.Pass + r.Fail + r.Partial + r.Error }

// decay returns the decayed success and failure weights at now.
func (r Reputation) decay(now time.Time) (s, f float64) {
	k := 1 / growth(now.UnixNano())
	return r.s * k, r.f * k
}

// Effective returns the decayed number of observations at now, prior included.
func (r Reputation) Effective(now time.Time) float64 {
	s, f := r.decay(now)
	return s + f + PriorStrength
}

// Score returns the Bayesian success estimate at now: decayed successes
// plus the prior's, over decayed observations plus the prior's.
func (r Reputation) Score(now time.Time) float64 {
	s, f := r.decay(now)
	ps := PriorStrength * PriorSuccess
	return (s + ps) / (s + f + PriorStrength)
}

// Confidence returns how much the score can be trusted at now, in (0, 1):
// a logistic curve of the effective observations, 50% at 10.
func (r Reputation) Confidence(now time.Time) float64 {
	return 1 / (1 + math.Exp(-0.2*(r.Effective(now)-10)))
}

func fromAgg(subject string, a *repAgg) Reputation {
	r := Reputation{Subject: subject, Pass: int64(a.pass), Fail: int64(a.fail), Partial: int64(a.partial), Error: int64(a.errs), s: a.s, f: a.f}
	if a.pass+a.fail+a.partial+a.errs > 0 {
		r.First, r.Last = time.Unix(0, a.first).UTC(), time.Unix(0, a.last).UTC()
	}
	return r
}

// AgentReport is one agent's reputation with its task-type breakdown.
type AgentReport struct {
	Reputation
	TaskTypes []Reputation
}

// Agent returns one agent's reputation from receipts whose own time is on
// or after since's day (all receipts when since is zero; windows are whole
// UTC days). It returns ledger.ErrNotFound for an agent with no receipts.
func Agent(r Reader, agent string, since time.Time) (*AgentReport, error) {
	rep, err := subjectRep(r, pAgent, pAgentDay, agent, since)
	if err != nil {
		return nil, err
	}
	out := &AgentReport{Reputation: rep}
	p := join(pAgentTask, []byte(agent), []byte{0})
	err = r.Range(p, prefixEnd(p), func(k, v []byte) (bool, error) {
		a, err := decodeRep(k, v)
		if err != nil {
			return false, err
		}
		out.TaskTypes = append(out.TaskTypes, fromAgg(string(k[len(p):]), a))
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Signer returns one signer's (verifier's) figures, like Agent.
func Signer(r Reader, signer string, since time.Time) (Reputation, error) {
	return subjectRep(r, pSigner, pSignerDay, signer, since)
}

func subjectRep(r Reader, all, days []byte, subject string, since time.Time) (Reputation, error) {
	if since.IsZero() {
		k := join(all, []byte(subject), []byte{0})
		v, err := r.Get(k)
		if err != nil {
			return Reputation{}, err
		}
		a, err := decodeRep(k, v)
		if err != nil {
			return Reputation{}, err
		}
		return fromAgg(subject, a), nil
	}
	p := join(days, []byte(subject), []byte{0})
	sum := &repAgg{}
	err := r.Range(join(p, DayOf(since).key()), prefixEnd(p), func(k, v []byte) (bool, error) {
		if len(k) != len(p)+4 {
			// Not a day of this subject: one of a subject whose name
			// continues this one's past a NUL byte.
			return true, nil
		}
		a, err := decodeRep(k, v)
		if err != nil {
			return false, err
		}
		sum.merge(a)
		return true, nil
	})
	if err != nil {
		return Reputation{}, err
	}
	if sum.pass+sum.fail+sum.partial+sum.errs == 0 {
		return Reputation{}, ledger.ErrNotFound
	}
	return fromAgg(subject, sum), nil
}

// Agents returns every agent's reputation (since as in Agent), ranked by
// score at now, then by receipts, then by name.
func Agents(r Reader, since, now time.Time) ([]Reputation, error) {
	return ranking(r, pAgent, pAgentDay, since, now)
}

// Signers ranks every signer like Agents.
func Signers(r Reader, since, now time.Time) ([]Reputation, error) {
	return ranking(r, pSigner, pSignerDay, since, now)
}

func ranking(r Reader, all, days []byte, since, now time.Time) ([]Reputation, error) {
	var out []Reputation
	err := r.Range(all, prefixEnd(all), func(k, v []byte) (bool, error) {
		subject, err := subjectFromKey(k, all)
		if err != nil {
			return false, err
		}
		if since.IsZero() {
			a, err := decodeRep(k, v)
			if err != nil {
				return false, err
			}
			out = append(out, fromAgg(subject, a))
			return true, nil
		}
		rep, err := subjectRep(r, all, days, subject, since)
		if errors.Is(err, ledger.ErrNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		out = append(out, rep)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		si, sj := out[i].Score(now), out[j].Score(now)
		if si != sj {
			return si > sj
		}
		if out[i].Receipts() != out[j].Receipts() {
			return out[i].Receipts() > out[j].Receipts()
		}
		return out[i].Subject < out[j].Subject
	})
	return out, nil
}

// TierVerdicts returns VRF verdict counts per tier: tier → verdict → count.
func TierVerdicts(r Reader) (map[int]map[string]int64, error) {
	out := map[int]map[string]int64{}
	err := r.Range(pTier, prefixEnd(pTier), func(k, v []byte) (bool, error) {
		tier, verdict, err := tierFromKey(k)
		if err != nil {
			return false, err
		}
		n, err := decodeCounter(k, v)
		if err != nil {
			return false, err
		}
		if out[tier] == nil {
			out[tier] = map[string]int64{}
		}
		out[tier][verdict] = int64(*n)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Attestation is one AVIR attestation in a system's history.
type Attestation struct {
	Seq           int64
	ID            string // chain_hash
	Time          time.Time
	Verdict       string
	Level         string
	Passed, Total int64
	Signer        string
}

// System is an AVIR system ("name vX.Y.Z") and its attestations in log order.
type System struct {
	Key     string
	History []Attestation
}

// Latest returns the system's most recent attestation by its own time.
func (s System) Latest() Attestation {
	best := s.History[0]
	for _, a := range s.History[1:] {
		if !a.Time.Before(best.Time) {
			best = a
		}
	}
	return best
}

// Systems returns every attested system, by key.
func Systems(r Reader) ([]System, error) {
	var out []System
	err := r.Range(pSystem, prefixEnd(pSystem), func(k, v []byte) (bool, error) {
		key, seq, err := nameSeqFromKey(k, pSystem)
		if err != nil {
			return false, err
		}
		rec, err := decodeSys(k, v)
		if err != nil {
			return false, err
		}
		a := Attestation{Seq: seq, Verdict: rec.verdict, Level: rec.level, Passed: rec.passed, Total: rec.total, Time: time.Unix(0, rec.ns).UTC(), Signer: rec.signer, ID: rec.id}
		if len(out) == 0 || out[len(out)-1].Key != key {
			out = append(out, System{Key: key})
		}
		out[len(out)-1].History = append(out[len(out)-1].History, a)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// VerifierAttestations returns, per verifier key, the systems it attested
// and the verdicts it gave, in log order.
func VerifierAttestations(r Reader) (map[string][][2]string, error) {
	out := map[string][][2]string{}
	err := r.Range(pVerifier, prefixEnd(pVerifier), func(k, v []byte) (bool, error) {
		signer, _, err := nameSeqFromKey(k, pVerifier)
		if err != nil {
			return false, err
		}
		rec, err := decodeVer(k, v)
		if err != nil {
			return false, err
		}
		out[signer] = append(out[signer], [2]string{rec.system, rec.verdict})
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
