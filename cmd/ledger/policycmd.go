package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/ledger/registry"
	"github.com/proofledger/ledger/scorecard"
)

func policyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "policy",
		Usage: "register and list the governance policies witness bundles are checked against",
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "register a custom governance policy (JSON or YAML policy file) under its hash",
				ArgsUsage: "FILE|-",
				Description: "Reads a policy file (name, mode, allow, deny, max_cost_microdollars, max_tool_calls; - reads\n" +
					"standard input), registers it under its ADR-035 policy hash and prints the hash. Bundles appended\n" +
					"from then on that name this hash are evaluated against it. Bundles appended before stay \"policy\n" +
					"unknown\": their evaluation is part of the log and is not redone. Registering it again says so\n" +
					"and exits 0; a default policy is always known and is not registered.\n\n" +
					"Exit code 3 when the file cannot be read or is not a valid policy.",
				Flags: []cli.Flag{
					dirFlag(),
					&cli.BoolFlag{Name: "json", Usage: "print the policy (policy list's shape), the file and whether it was added as one JSON object"},
				},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageErrorf("policy add takes one FILE (- for standard input)")
					}
					path := c.Args().First()
					data, err := loadBounded(path, e.stdin, maxPolicyFile)
					if err != nil {
						return exitf(exitMalformed, "%s: %v", path, err)
					}
					p, err := registry.ParsePolicyFile(data)
					if err != nil {
						return exitf(exitMalformed, "%s: not a valid policy: %v", path, err)
					}
					asJSON := c.Bool("json")
					if d, ok := governance.DefaultByHash(p.Hash()); ok {
						if asJSON {
							return writeJSONLine(e.stdout, policyAddJSON{File: path, policyJSON: toPolicyJSON(d, "default")})
						}
						_, _ = fmt.Fprintf(e.stdout, "%s is the default policy %q (%s), always known: nothing to register\n", path, d.Name, d.HashString())
						return nil
					}
					l, err := openLedger(c, e, false)
					if err != nil {
						return err
					}
					defer closeLedger(l)
					added, err := l.Registry().AddPolicy(p)
					if err != nil {
						return exitf(exitInternal, "register policy: %w", err)
					}
					if asJSON {
						return writeJSONLine(e.stdout, policyAddJSON{File: path, policyJSON: toPolicyJSON(p, "registered"), Added: added})
					}
					if !added {
						_, _ = fmt.Fprintf(e.stdout, "policy %s %s (%s) is already registered\n", policyName(p), p.HashString(), policyTerms(p))
						return nil
					}
					_, _ = fmt.Fprintf(e.stdout, "registered policy %s %s (%s)\n", policyName(p), p.HashString(), policyTerms(p))
					return nil
				},
			},
			{
				Name:  "list",
				Usage: "list the default policies and the registered ones",
				Flags: []cli.Flag{
					dirFlag(),
					&cli.BoolFlag{Name: "json", Usage: "print one JSON object per policy per line"},
				},
				Action: func(c *cli.Context) error {
					if c.NArg() != 0 {
						return usageErrorf("policy list takes no arguments")
					}
					l, err := openLedger(c, e, true)
					if err != nil {
						return err
					}
					defer closeLedger(l)
					all, err := l.Registry().All()
					if err != nil {
						return exitf(exitInternal, "%w", err)
					}
					if c.Bool("json") {
						for _, en := range all {
							if err := writeJSONLine(e.stdout, toPolicyJSON(en.Policy, string(en.Source))); err != nil {
								return err
							}
						}
						return nil
					}
					header := []string{"name", "hash", "mode", "max cost", "max calls", "allow", "deny", "source"}
					var rows [][]string
					for _, en := range all {
						p := en.Policy
						rows = append(rows, []string{policyName(p), p.HashString(), p.Mode.String(), scorecard.Dollars(int64(p.MaxCostMicrodollars)),
							fmt.Sprint(p.MaxToolCalls), toolList(p.Allow), toolList(p.Deny), string(en.Source)})
					}
					printTable(e.stdout, "", header, rows, []bool{false, false, false, true, true, false, false, false})
					return nil
				},
			},
		},
	}
}

// policyJSON is the --json shape of a policy in policy list.
type policyJSON struct {
	Name                string   `json:"name"`
	Hash                string   `json:"hash"`
	Mode                string   `json:"mode"`
	Allow               []string `json:"allow"`
	Deny                []string `json:"deny"`
	MaxCostMicrodollars uint32   `json:"max_cost_microdollars"`
	MaxToolCalls        uint16   `json:"max_tool_calls"`
	Source              string   `json:"source"` // default or registered
}

func toPolicyJSON(p governance.Policy, source string) policyJSON {
	return policyJSON{Name: p.Name, Hash: p.HashString(), Mode: p.Mode.String(), Allow: orEmpty(p.Allow), Deny: orEmpty(p.Deny),
		MaxCostMicrodollars: p.MaxCostMicrodollars, MaxToolCalls: p.MaxToolCalls, Source: source}
}

// maxPolicyFile bounds a policy file: a policy is a few hundred bytes.
const maxPolicyFile = 1 << 20

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func policyName(p governance.Policy) string {
	if p.Name == "" {
		return "(unnamed)"
	}
	return fmt.Sprintf("%q", p.Name)
}

func toolList(tools []string) string {
	if len(tools) == 0 {
		return "-"
	}
	return strings.Join(tools, " ")
}

// policyTerms summarises a policy: mode, lists and budgets.
func policyTerms(p governance.Policy) string {
	parts := []string{p.Mode.String()}
	if len(p.Allow) > 0 {
		parts = append(parts, "allow "+strings.Join(p.Allow, " "))
	}
	if len(p.Deny) > 0 {
		parts = append(parts, "deny "+strings.Join(p.Deny, " "))
	}
	parts = append(parts, "max "+scorecard.Dollars(int64(p.MaxCostMicrodollars)), fmt.Sprintf("max %d calls", p.MaxToolCalls))
	return strings.Join(parts, ", ")
}
