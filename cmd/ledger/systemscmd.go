package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/index"
)

// historyShown is how many verdicts of a system's history the text shows.
const historyShown = 8

// VRF verdicts in column order; others are counted under "other".
var vrfVerdicts = []string{"pass", "fail", "partial", "error"}

// AVIR verdicts in column order.
var avirVerdicts = []string{"VERIFIED", "PARTIAL", "FAILED", "INVALID"}

func systemsCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "systems",
		Usage: "AVIR systems with their latest verdicts and history, AVIR verifier keys, VRF verdicts per tier",
		Description: "For each AVIR system (name and version): its latest attestation (by the attestation's own\n" +
			"time) with verdict, level and benchmark pass rate, and its history of verdicts, oldest first.\n" +
			"Then each key that signed attestations with the verdicts it gave, and the VRF receipts'\n" +
			"verdict counts per tier.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print everything as one JSON object"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErrorf("systems takes no arguments")
			}
			l, snap, err := openQuery(c, e)
			if err != nil {
				return err
			}
			defer closeLedger(l)
			defer snap.Close()
			systems, err := index.Systems(snap)
			if err != nil {
				return exitf(exitInternal, "%w", err)
			}
			verifiers, err := index.VerifierAttestations(snap)
			if err != nil {
				return exitf(exitInternal, "%w", err)
			}
			tiers, err := index.TierVerdicts(snap)
			if err != nil {
				return exitf(exitInternal, "%w", err)
			}
			j := toSystemsJSON(systems, verifiers, tiers)
			if c.Bool("json") {
				return writeJSONLine(e.stdout, j)
			}
			printSystems(e.stdout, j)
			return nil
		},
	}
}

type attestationJSON struct {
	Seq      int64   `json:"seq"`
	ID       string  `json:"id"`
	Time     string  `json:"time"`
	Verdict  string  `json:"verdict"`
	Level    string  `json:"level"`
	Passed   int64   `json:"passed"`
	Total    int64   `json:"total"`
	PassRate float64 `json:"pass_rate"`
	Signer   string  `json:"signer,omitempty"`
}

type systemJSON struct {
	System       string            `json:"system"`
	Attestations int               `json:"attestations"`
	Latest       attestationJSON   `json:"latest"`
	Verdicts     map[string]int    `json:"verdicts"`
	History      []attestationJSON `json:"history"` // by attestation time, oldest first
}

type verifierJSON struct {
	Signer       string         `json:"signer"`
	Attestations int            `json:"attestations"`
	Verdicts     map[string]int `json:"verdicts"`
	Systems      []string       `json:"systems"`
}

type tierJSON struct {
	Tier     int              `json:"tier"`
	Receipts int64            `json:"receipts"`
	Verdicts map[string]int64 `json:"verdicts"`
}

type systemsJSON struct {
	Systems   []systemJSON   `json:"systems"`
	Verifiers []verifierJSON `json:"verifiers"`
	VRFTiers  []tierJSON     `json:"vrf_tiers"`
}

func toAttestationJSON(a index.Attestation) attestationJSON {
	j := attestationJSON{Seq: a.Seq, ID: a.ID, Time: formatTime(a.Time), Verdict: a.Verdict, Level: a.Level,
		Passed: a.Passed, Total: a.Total, Signer: a.Signer}
	if a.Total > 0 {
		j.PassRate = round4(float64(a.Passed) / float64(a.Total))
	}
	return j
}

func toSystemsJSON(systems []index.System, verifiers map[string][][2]string, tiers map[int]map[string]int64) systemsJSON {
	out := systemsJSON{Systems: []systemJSON{}, Verifiers: []verifierJSON{}, VRFTiers: []tierJSON{}}
	for _, s := range systems {
		hist := slices.Clone(s.History)
		sort.SliceStable(hist, func(i, j int) bool { return hist[i].Time.Before(hist[j].Time) })
		sj := systemJSON{System: s.Key, Attestations: len(hist), Latest: toAttestationJSON(s.Latest()), Verdicts: map[string]int{}}
		for _, a := range hist {
			sj.History = append(sj.History, toAttestationJSON(a))
			sj.Verdicts[a.Verdict]++
		}
		out.Systems = append(out.Systems, sj)
	}
	signers := make([]string, 0, len(verifiers))
	for s := range verifiers {
		signers = append(signers, s)
	}
	sort.Strings(signers)
	for _, s := range signers {
		vj := verifierJSON{Signer: s, Attestations: len(verifiers[s]), Verdicts: map[string]int{}}
		seen := map[string]bool{}
		for _, sv := range verifiers[s] {
			vj.Verdicts[sv[1]]++
			if !seen[sv[0]] {
				seen[sv[0]] = true
				vj.Systems = append(vj.Systems, sv[0])
			}
		}
		sort.Strings(vj.Systems)
		out.Verifiers = append(out.Verifiers, vj)
	}
	tierNums := make([]int, 0, len(tiers))
	for t := range tiers {
		tierNums = append(tierNums, t)
	}
	sort.Ints(tierNums)
	for _, t := range tierNums {
		tj := tierJSON{Tier: t, Verdicts: tiers[t]}
		for _, n := range tiers[t] {
			tj.Receipts += n
		}
		out.VRFTiers = append(out.VRFTiers, tj)
	}
	return out
}

func printSystems(w io.Writer, j systemsJSON) {
	_, _ = fmt.Fprintf(w, "AVIR systems (%d)\n", len(j.Systems))
	if len(j.Systems) == 0 {
		_, _ = fmt.Fprintln(w, "  none attested")
	} else {
		header := []string{"system", "attestations", "latest", "level", "pass rate", "latest at", "history (oldest first)"}
		var rows [][]string
		for _, s := range j.Systems {
			var hist []string
			start := max(0, len(s.History)-historyShown)
			if start > 0 {
				hist = append(hist, fmt.Sprintf("(%d earlier)", start))
			}
			for _, a := range s.History[start:] {
				hist = append(hist, a.Verdict)
			}
			l := s.Latest
			rows = append(rows, []string{s.System, thousands(int64(s.Attestations)), l.Verdict, l.Level,
				fmt.Sprintf("%d/%d (%.0f%%)", l.Passed, l.Total, 100*l.PassRate), l.Time, strings.Join(hist, " ")})
		}
		printTable(w, "  ", header, rows, []bool{false, true, false, false, true, false, false})
	}

	_, _ = fmt.Fprintf(w, "\nAVIR verifier keys (%d)\n", len(j.Verifiers))
	if len(j.Verifiers) == 0 {
		_, _ = fmt.Fprintln(w, "  none")
	} else {
		header := append([]string{"signer", "attestations"}, avirVerdicts...)
		header = append(header, "other", "systems")
		var rows [][]string
		for _, v := range j.Verifiers {
			row := []string{v.Signer, thousands(int64(v.Attestations))}
			other := v.Attestations
			for _, name := range avirVerdicts {
				row = append(row, thousands(int64(v.Verdicts[name])))
				other -= v.Verdicts[name]
			}
			row = append(row, thousands(int64(other)), strings.Join(v.Systems, ", "))
			rows = append(rows, row)
		}
		printTable(w, "  ", header, rows, []bool{false, true, true, true, true, true, true, false})
	}

	_, _ = fmt.Fprintln(w, "\nVRF receipts per tier")
	if len(j.VRFTiers) == 0 {
		_, _ = fmt.Fprintln(w, "  none")
		return
	}
	header := append([]string{"tier", "receipts"}, vrfVerdicts...)
	header = append(header, "other")
	var rows [][]string
	for _, t := range j.VRFTiers {
		row := []string{fmt.Sprint(t.Tier), thousands(t.Receipts)}
		other := t.Receipts
		for _, name := range vrfVerdicts {
			row = append(row, thousands(t.Verdicts[name]))
			other -= t.Verdicts[name]
		}
		rows = append(rows, append(row, thousands(other)))
	}
	printTable(w, "  ", header, rows, []bool{true, true, true, true, true, true, true})
}
