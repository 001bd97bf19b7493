package main

import (
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/scorecard"
)

// exitEmptyWindow is scorecard's exit code when the window holds no
// witness bundles: nothing was judged, which a CI gate must not read as
// either a pass or a failed criterion.
const exitEmptyWindow = 9

// thresholdFlag names the flag that overrides a criterion's threshold.
var thresholdFlag = map[string]string{
	scorecard.MetricSolveRate:           "min-solve-rate",
	scorecard.MetricPolicyViolations:    "max-violations",
	scorecard.MetricEvidenceCoverage:    "min-evidence-coverage",
	scorecard.MetricRollbackCorrectness: "min-rollback-correctness",
}

// thresholdFlags are scorecard's flags overriding ADR-035's thresholds.
func thresholdFlags() []cli.Flag {
	d := scorecard.DefaultCriteria()
	return []cli.Flag{
		&cli.StringFlag{Name: thresholdFlag[scorecard.MetricSolveRate], Value: d.MinSolveRate.String(),
			Usage: "acceptance threshold: solve_rate >= `R` (a decimal from 0 to 1)"},
		&cli.StringFlag{Name: thresholdFlag[scorecard.MetricPolicyViolations], Value: strconv.FormatInt(d.MaxPolicyViolations, 10),
			Usage: "acceptance threshold: policy_violations <= `N` (a bundle under an unknown policy still fails it)"},
		&cli.StringFlag{Name: thresholdFlag[scorecard.MetricEvidenceCoverage], Value: d.MinEvidenceCoverage.String(),
			Usage: "acceptance threshold: evidence_coverage >= `R` (a decimal from 0 to 1)"},
		&cli.StringFlag{Name: thresholdFlag[scorecard.MetricRollbackCorrectness], Value: d.MinRollbackCorrectness.String(),
			Usage: "acceptance threshold: rollback_correctness >= `R` (a decimal from 0 to 1)"},
	}
}

// readCriteria reads the threshold flags; a flag not given keeps ADR-035's
// threshold.
func readCriteria(c *cli.Context) (scorecard.Criteria, error) {
	cr := scorecard.DefaultCriteria()
	for _, r := range []struct {
		metric string
		dst    *scorecard.Ratio
	}{
		{scorecard.MetricSolveRate, &cr.MinSolveRate},
		{scorecard.MetricEvidenceCoverage, &cr.MinEvidenceCoverage},
		{scorecard.MetricRollbackCorrectness, &cr.MinRollbackCorrectness},
	} {
		name := thresholdFlag[r.metric]
		if !c.IsSet(name) {
			continue
		}
		v, err := scorecard.ParseRatio(c.String(name))
		if err != nil {
			return cr, usageErrorf("--%s: %v", name, err)
		}
		*r.dst = v
	}
	if name := thresholdFlag[scorecard.MetricPolicyViolations]; c.IsSet(name) {
		s := c.String(name)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || s != strconv.FormatInt(n, 10) {
			return cr, usageErrorf("--%s %.40q: want a whole number, 0 or more", name, s)
		}
		cr.MaxPolicyViolations = n
	}
	return cr, nil
}
