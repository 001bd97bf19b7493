package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// The read sweep (issue 10, item 1): every read command with every flag
// combination on a ledger of 50,012 events, in process. Nothing any of
// them is given may make one print a Go stack trace; usage errors exit 2;
// every failure is one "ledger:" line; --json prints JSON lines; and no
// read changes the ledger.

// sweepWriters are the commands that write the ledger, each with the flag
// that makes it write ("" when it always does; flags that apply only to
// writing follow it). A command with such a flag is also a read command
// without it (sweepReaders): the sweep runs it without those flags.
func sweepWriters() map[string]string {
	return map[string]string{
		"init":            "",
		"append":          "",
		"import":          "",
		"rebuild":         "",
		"key add-hmac":    "",
		"policy add":      "",
		"trust add":       "",
		"trust remove":    "",
		"run vrf":         "",
		"run avir":        "",
		"refusals":        "keep",
		"witness build":   "append allow-unsigned",
		"freshness set":   "",
		"freshness clear": "",
	}
}

// sweepReaders are the commands (and command groups) that never write the
// ledger, or do not without their sweepWriters flag. Every command is in
// this list or in sweepWriters (TestReadSweep fails otherwise), so that
// a new read command is swept as soon as it exists.
func sweepReaders() []string {
	return []string{
		"inspect", "get", "log", "chain", "refusals", "checkpoint", "prove", "verify-proof",
		"key", "trust", "trust list", "export", "scorecard", "trend", "reputation", "systems",
		"policy", "policy list", "audit", "run", "witness", "witness build", "version", "completion",
		"replay", "freshness", "freshness show",
	}
}

// A sweep value is a flag value or an argument list, written with
// placeholders that name the ledger's references ({seq}, {receipt}, …,
// see sweepLedger.expand). A leading "!" marks a value that is a usage
// error wherever it is given: every invocation with it must exit 2.

// sweepRequired in a flag's values says that leaving the flag out is a
// usage error.
const sweepRequired = "!<absent>"

// sweepValues are a few representative values of every valued flag of
// the read commands, by "command --flag" or, for every command that has
// it, by "--flag": a valid value, edge values (0, an empty string, a
// far-future date such as 9999-12-31 or 2262-04-12, just past the end of
// the log) and an invalid one. A valued flag without values here fails
// the test.
func sweepValues() map[string][]string {
	times := []string{"{mid}", "1d", "2262-04-11", "1677-09-22", "!2262-04-12", "!9999-12-31", "!0001-01-01", "!soon"}
	return map[string][]string{
		"--wait":                            {"0", "1s", "!-1s", "!forever"},
		"--since":                           times,
		"--until":                           times,
		"log --kind":                        {"vrf", "rollback", "!nope"},
		"log --limit":                       {"3", "0", "!-1", "!many"},
		"log --agent":                       {"{agent}", "", "no-such-agent"},
		"log --subject":                     {"{subject}", "", "no such subject"},
		"log --task":                        {"{task}", "00000000-0000-0000-0000-000000000000", "not-a-uuid"},
		"chain --agent":                     {"{agent}", "!", "no-such-agent"},
		"refusals --agent":                  {"{agent}", "", "no-such-agent"},
		"refusals --reason":                 {"replay", "link", "!boredom"},
		"refusals --limit":                  {"2", "0", "!-1", "!x"},
		"prove --size":                      {"{size}", "0", "1", "!{size+1}", "!-1", "!x"},
		"prove --out":                       {"{tmp}/p.proof", "-", "/nonexistent/dir/p.proof"},
		"verify-proof --key":                {"{pub}", "!not-a-key", "!/nonexistent/log.pub"},
		"verify-proof --doc":                {"{doc}", "-", "{garbage}", "/nonexistent/doc.json"},
		"scorecard --policy":                {"restricted", "read-grep-small", "ffffffffffffffff", "!not a policy"},
		"scorecard --mode":                  {"autonomous", "255", "!256", "!sideways"},
		"scorecard --min-solve-rate":        {"0.5", "1", "0", "!1.5", "!x"},
		"scorecard --max-violations":        {"3", "0", "!-1", "!x"},
		"scorecard --min-evidence-coverage": {"0.9", "0", "!-0.1", "!x"},
		"scorecard --min-rollback-correctness": {
			"0.9", "1", "!2", "!x"},
		"trend --by":         {"day", "month", "!fortnight"},
		"trend --policy":     {"approved", "ffffffffffffffff", "!not a policy"},
		"trend --mode":       {"restricted", "0", "!256"},
		"trend --plot":       {"{tmp}/t.png", "{tmp}/t.svg", "-", "!{tmp}/t.gif", "/nonexistent/dir/t.png"},
		"reputation --at":    times,
		"reputation --limit": {"3", "0", "!-1", "!x"},
		"audit --from":       {"{size-5}", "0", "{size}", "{size+1}", "!-1", "!x"},
		"audit --against":    {"{ckpt}", "-", "{garbage}", "/nonexistent/checkpoint"},
		"audit --max-problems": {
			"5", "0", "!-1", "!lots"},
		"audit --scratch":               {"{tmp}", "/nonexistent/dir"},
		"inspect --hmac-key-file":       {"{hmac}", "{garbage}", "-", "!/nonexistent/key"},
		"inspect --spec":                {"{spec}", "{garbage}", "-", "!/nonexistent/spec.json"},
		"inspect --policy":              {"{policyfile}", "{garbage}", "-", "!/nonexistent/policy.json"},
		"witness build --trace":         {"{trace}", "{garbage}", "-", "/nonexistent/trace.jsonl"},
		"witness build --spec":          {"{text}", "-", "/nonexistent/spec"},
		"witness build --plan":          {"{text}", "/nonexistent/plan"},
		"witness build --diff":          {"{text}", "-"},
		"witness build --test-log":      {"{text}", "/nonexistent/log"},
		"witness build --postmortem":    {"{text}", "-"},
		"witness build --outcome":       {"solved", "errored", "!sideways", sweepRequired},
		"witness build --policy":        {"restricted", "read-grep-small", "{policyfile}", "nope", sweepRequired},
		"witness build --task-id":       {"{task}", "", "!not-a-uuid"},
		"witness build --created":       {"2026-01-01", "2262-04-11", "!9999-12-31", "!2262-04-12", "!whenever"},
		"witness build --retry":         {"1", "0", "65535", "!65536", "!-1"},
		"witness build --hmac-key-file": {"{hmac}", "!{empty}", "-", "!/nonexistent/key"},
		"witness build --dir":           {"{big}", "{small}", "{missing}"}, // the ledger is read only for a registered policy
		"witness build --o":             {"{tmp}/b.rvww", "-", "/nonexistent/dir/b.rvww", sweepRequired},
		"--dir":                         {"{big}", "{small}", "!{missing}"},
		"replay --hmac-key-file":        {"{hmac}", "{garbage}", "/nonexistent/key"},
	}
}

// sweepArgs are the argument lists of each read command: none, valid
// references (a seq, an id, an id prefix, a task UUID), references out
// of range, garbage. "!" marks a list that is a usage error.
func sweepArgs() map[string][][]string {
	none := []string{}
	noArgs := [][]string{none, {"!x"}}
	return map[string][][]string{
		"inspect":        {{"!"}, {"{doc}"}, {"{bundlefile}", "{attestation}"}, {"{garbage}"}, {"/nonexistent/doc.json"}, {"-"}, {"{tmpdir}"}},
		"get":            {{"!"}, {"{seq}"}, {"0"}, {"{receipt}"}, {"{prefix}"}, {"{task}"}, {"{bundle}"}, {"!{size}"}, {"!9223372036854775807"}, {"!-1"}, {"!garbage!"}, {"!1", "2"}},
		"log":            noArgs,
		"chain":          {{}, {"{receipt}"}, {"{task}"}, {"{bundle}"}, {"{prefix}"}, {"garbage"}, {"!a", "b"}},
		"refusals":       noArgs,
		"checkpoint":     noArgs,
		"prove":          {{"!"}, {"{seq}"}, {"{receipt}"}, {"{prefix}"}, {"{task}"}, {"!{size}"}, {"!-1"}, {"!garbage"}, {"1", "{size}"}, {"0", "{size}"}, {"!{size}", "1"}, {"1", "!{size+1}"}},
		"verify-proof":   {{"!"}, {"{proof}"}, {"{cproof}"}, {"{garbage}"}, {"-"}, {"/nonexistent/p.proof"}, {"!a", "b"}},
		"key":            {{"!"}, {"!nosuch"}},
		"trust":          {{"!"}, {"!nosuch"}},
		"trust list":     noArgs,
		"export":         {{"!"}, {"{tmp}/a.jsonl.zst"}, {"-"}, {"/nonexistent/dir/a.zst"}, {"!a", "b"}},
		"scorecard":      noArgs,
		"trend":          noArgs,
		"reputation":     {none, {"{agent}"}, {"no-such-agent"}, {""}, {"!a", "b"}},
		"systems":        noArgs,
		"policy":         {{"!"}, {"!nosuch"}},
		"policy list":    noArgs,
		"audit":          noArgs,
		"run":            {{"!"}, {"!nosuch"}},
		"witness":        {{"!"}, {"!nosuch"}},
		"witness build":  noArgs,
		"version":        noArgs,
		"replay":         {{"!"}, {"{seq}"}, {"0"}, {"{receipt}"}, {"{prefix}"}, {"{task}"}, {"{bundle}"}, {"{doc}"}, {"{bundlefile}"}, {"{attestation}"}, {"-"}, {"{garbage}"}, {"!{size}"}, {"!garbage!"}, {"!a", "b"}},
		"freshness":      {{"!"}, {"!nosuch"}},
		"freshness show": noArgs,
		"completion":     {{"!"}, {"bash"}, {"zsh"}, {"fish"}, {"!tcsh"}, {"!bash", "zsh"}},
	}
}

// sweepDim is one dimension of a command's all-pairs covering: a valued
// flag (values[0] is "absent"), the arguments, or the ledger.
type sweepDim struct {
	flag   string // "" for the arguments
	values [][]string
}

// sweepCase is one invocation of the sweep, before its placeholders are
// expanded.
type sweepCase struct {
	path  string
	argv  []string // after the command path; placeholders unexpanded
	usage bool     // some value or argument is a usage error
	json  bool
	// garbageIn: standard input holds garbage (else it is empty), for
	// the flags and arguments that are "-".
	garbageIn bool
}

// sweepCases returns the invocations of one command: every combination
// of its boolean flags crossed with an all-pairs covering of its valued
// flags' values, its argument lists and the ledgers.
func sweepCases(t *testing.T, path string, cmd *cli.Command) []sweepCase {
	t.Helper()
	values, args := sweepValues(), sweepArgs()
	writer := strings.Fields(sweepWriters()[path])
	var bools []string
	var dims []sweepDim
	for _, f := range cmd.Flags {
		name := f.Names()[0]
		if slices.Contains(writer, name) {
			continue
		}
		d, ok := f.(cli.DocGenerationFlag)
		if !ok || !d.TakesValue() {
			bools = append(bools, name)
			continue
		}
		vs, ok := values[path+" --"+name]
		if !ok {
			vs, ok = values["--"+name]
		}
		if !ok || len(vs) == 0 {
			t.Errorf("ledger %s --%s: no representative values in sweepValues", path, name)
			continue
		}
		dim := sweepDim{flag: name}
		switch {
		case slices.Contains(vs, sweepRequired):
			dim.values = append(dim.values, []string{sweepRequired}) // absent: a usage error
		case name != "dir":
			dim.values = append(dim.values, nil) // absent
		}
		for _, v := range vs {
			if v != sweepRequired {
				dim.values = append(dim.values, []string{v})
			}
		}
		dims = append(dims, dim)
	}
	al, ok := args[path]
	if !ok {
		t.Errorf("ledger %s: no argument lists in sweepArgs", path)
		al = [][]string{{}}
	}
	dims = append(dims, sweepDim{values: al})
	// The covering is over the values that are no usage error (else
	// nearly every row would hold one and test nothing else); each usage
	// error is then tried once per combination of the booleans, in a row
	// of the covering.
	valid := make([][]int, len(dims)) // dimension → indexes of its valid values
	sizes := make([]int, len(dims))
	for i, d := range dims {
		for j, v := range d.values {
			if len(v) == 0 || !strings.HasPrefix(v[0], "!") {
				valid[i] = append(valid[i], j)
			}
		}
		if len(valid[i]) == 0 { // every value a usage error: the first stands in the covering
			valid[i] = []int{0}
		}
		sizes[i] = len(valid[i])
	}
	// The first row is the happy path: each dimension's first value that
	// is no usage error (a valid reference, an existing file), then the
	// covering.
	happy := make([]int, len(dims))
	for i, d := range dims {
		for _, j := range valid[i] {
			if len(d.values[j]) > 0 {
				happy[i] = j
				break
			}
		}
	}
	rows := [][]int{happy}
	for _, r := range allPairs(sizes, uint64(len(path))) {
		row := make([]int, len(r))
		for i, k := range r {
			row[i] = valid[i][k]
		}
		rows = append(rows, row)
	}
	base := len(rows) - 1
	for i, d := range dims {
		for j, v := range d.values {
			if len(v) > 0 && strings.HasPrefix(v[0], "!") && valid[i][0] != j {
				row := slices.Clone(rows[1+len(rows)%base])
				row[i] = j
				rows = append(rows, row)
			}
		}
	}
	var out []sweepCase
	for mask := 0; mask < 1<<len(bools); mask++ {
		for _, row := range rows {
			c := sweepCase{path: path, garbageIn: len(out)%2 == 1}
			for i, b := range bools {
				if mask&(1<<i) != 0 {
					c.argv = append(c.argv, "--"+b)
					c.json = c.json || b == "json"
				}
			}
			for i, d := range dims {
				for _, v := range d.values[row[i]] {
					usage := strings.HasPrefix(v, "!")
					c.usage = c.usage || usage
					v = strings.TrimPrefix(v, "!")
					if v == strings.TrimPrefix(sweepRequired, "!") {
						continue
					}
					if d.flag == "" {
						c.argv = append(c.argv, v)
					} else {
						c.argv = append(c.argv, "--"+d.flag, v)
					}
				}
				if d.flag == "" && len(d.values[row[i]]) == 1 && d.values[row[i]][0] == "!" {
					c.argv = c.argv[:len(c.argv)-1] // "!" alone: no argument, a usage error
				}
			}
			out = append(out, c)
		}
	}
	return out
}

// allPairs returns rows, each a value index per dimension (sizes[i]
// values in dimension i), such that every pair of values of any two
// dimensions is in some row: a greedy covering (AETG), deterministic for
// a seed.
func allPairs(sizes []int, seed uint64) [][]int {
	type pair struct{ d1, v1, d2, v2 int }
	uncovered := map[pair]bool{}
	var order []pair
	for d1 := range sizes {
		for d2 := d1 + 1; d2 < len(sizes); d2++ {
			for v1 := range sizes[d1] {
				for v2 := range sizes[d2] {
					p := pair{d1, v1, d2, v2}
					uncovered[p] = true
					order = append(order, p)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(seed, 0x70616972))
	gain := func(row []int, set []bool) int {
		n := 0
		for d1 := range row {
			for d2 := d1 + 1; d2 < len(row); d2++ {
				if set[d1] && set[d2] && uncovered[pair{d1, row[d1], d2, row[d2]}] {
					n++
				}
			}
		}
		return n
	}
	var rows [][]int
	if len(sizes) < 2 {
		n := 1
		if len(sizes) == 1 {
			n = sizes[0]
		}
		for v := range n {
			rows = append(rows, []int{v}[:len(sizes)])
		}
		return rows
	}
	for len(uncovered) > 0 {
		var first pair
		for _, p := range order {
			if uncovered[p] {
				first = p
				break
			}
		}
		var best []int
		bestGain := -1
		for range 20 {
			row := make([]int, len(sizes))
			set := make([]bool, len(sizes))
			row[first.d1], row[first.d2] = first.v1, first.v2
			set[first.d1], set[first.d2] = true, true
			for _, d := range r.Perm(len(sizes)) {
				if set[d] {
					continue
				}
				set[d] = true
				bv, bg := 0, -1
				for _, v := range r.Perm(sizes[d]) {
					row[d] = v
					if g := gain(row, set); g > bg {
						bv, bg = v, g
					}
				}
				row[d] = bv
			}
			all := make([]bool, len(sizes))
			for i := range all {
				all[i] = true
			}
			if g := gain(row, all); g > bestGain {
				best, bestGain = row, g
			}
		}
		for d1 := range best {
			for d2 := d1 + 1; d2 < len(best); d2++ {
				delete(uncovered, pair{d1, best[d1], d2, best[d2]})
			}
		}
		rows = append(rows, best)
	}
	return rows
}

// TestAllPairs checks the covering on a few shapes: every pair of values
// of two dimensions is in a row, and rows stay few.
func TestAllPairs(t *testing.T) {
	for _, sizes := range [][]int{{}, {3}, {2, 2}, {3, 4, 5}, {7, 5, 4, 4, 4, 3, 6}} {
		rows := allPairs(sizes, 1)
		for d1 := range sizes {
			for d2 := d1 + 1; d2 < len(sizes); d2++ {
				for v1 := range sizes[d1] {
					for v2 := range sizes[d2] {
						found := slices.ContainsFunc(rows, func(r []int) bool { return r[d1] == v1 && r[d2] == v2 })
						if !found {
							t.Errorf("%v: pair (%d=%d, %d=%d) not covered", sizes, d1, v1, d2, v2)
						}
					}
				}
			}
		}
		limit := 1
		for _, s := range sizes {
			limit *= s
		}
		if len(sizes) >= 2 {
			s := slices.Sorted(slices.Values(sizes))
			limit = min(limit, 2*s[len(s)-1]*s[len(s)-2])
		}
		if len(rows) > limit {
			t.Errorf("%v: %d rows, more than %d", sizes, len(rows), limit)
		}
	}
}

// sweepFixture is what the sweep's placeholders expand to.
type sweepFixture struct {
	big, small *sweepLedger
	missing    string
	files      map[string]string // {garbage}, {hmac}, … → path

	mu    sync.Mutex
	codes map[string]map[int]int // exit codes seen, by command
}

// expand replaces the placeholders of s for an invocation on the ledger
// sl, whose files go to tmp.
func (f *sweepFixture) expand(s string, sl *sweepLedger, tmp string) string {
	if !strings.Contains(s, "{") {
		return s
	}
	mid := time.Now().UTC().Add(-15 * 24 * time.Hour).Format("2006-01-02")
	pairs := []string{
		"{big}", f.big.dir, "{small}", f.small.dir, "{missing}", f.missing,
		"{seq}", strconv.Itoa(sl.seq), "{size}", strconv.Itoa(sl.size),
		"{size+1}", strconv.Itoa(sl.size + 1), "{size-5}", strconv.Itoa(max(sl.size-5, 0)),
		"{receipt}", sl.receipt, "{prefix}", sl.receiptPrefix, "{task}", sl.task, "{bundle}", sl.bundle,
		"{agent}", sl.agent, "{subject}", sl.subject, "{pub}", sl.pub, "{proof}", sl.proof,
		"{cproof}", sl.consProof, "{doc}", sl.doc, "{ckpt}", sl.ckptFile, "{mid}", mid,
		"{tmpdir}", tmp, "{tmp}", tmp,
	}
	for k, v := range f.files {
		pairs = append(pairs, "{"+k+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// TestReadSweep runs every read command (sweepReaders; a command in
// neither sweepReaders nor sweepWriters fails the test) with every
// combination of its boolean flags crossed with an all-pairs covering of
// its valued flags' values (sweepValues), its argument lists (sweepArgs)
// and three ledgers: one of 50,012 events with trusted signers, a
// registered HMAC key and policy, and refusals in its journal
// (buildBigLedger); one of four events without any setting; a directory
// that is no ledger. The covering is over the values that are no usage
// error; each usage error (a value marked "!") is tried once per boolean
// combination, in a row of the covering; a first row takes every
// dimension's first valid value (the happy path). Standard input is empty or
// garbage, in turn. Each invocation runs in process, in parallel (reads do
// not write), and must: print no Go stack trace ("panic", "goroutine ",
// "runtime error" on stderr); exit with a documented code (exitCodes), 2
// when it was given a usage error; on failure say so in one "ledger:"
// line on stderr (or, for inspect's and verify-proof's verdicts, in the
// report on stdout); with --json print JSON objects, one a line.
// Afterwards neither ledger has changed: the same checkpoint size and
// root, no new, removed or changed file but read copies (copies/).
//
// The issue's `log --limit` and `--until` cases (Pebble's "element has
// outstanding references" panic at Close) are run on the big ledger
// besides.
//
// Cost, measured on the 2-core development machine: building the big
// ledger takes 20 to 40 seconds (generating the 50,012 documents and
// admitting them, an Ed25519 verification per receipt and attestation
// included); the sweep is 1,375 invocations (t.Logf prints the count by
// command and the exit codes seen) and takes 20 to 30 seconds. -short
// skips it.
func TestReadSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a ledger of 50k events")
	}
	// The commands, from the app's own definitions.
	readers, writers := sweepReaders(), sweepWriters()
	var cases []sweepCase
	seen := map[string]bool{}
	for _, dc := range allCommands(newApp(&env{})) {
		seen[dc.path] = true
		_, writes := writers[dc.path]
		reads := slices.Contains(readers, dc.path)
		switch {
		case !reads && !writes:
			t.Errorf("ledger %s is neither in sweepReaders nor in sweepWriters: say whether it writes the ledger", dc.path)
		case reads && writes && writers[dc.path] == "":
			t.Errorf("ledger %s is in sweepReaders and always writes (sweepWriters)", dc.path)
		case reads:
			cases = append(cases, sweepCases(t, dc.path, dc.cmd)...)
		}
	}
	for _, p := range readers {
		if !seen[p] {
			t.Errorf("sweepReaders names %q, which is no command", p)
		}
	}
	for p := range writers {
		if !seen[p] {
			t.Errorf("sweepWriters names %q, which is no command", p)
		}
	}
	// The cases.
	for _, a := range [][]string{{"--limit", "1"}, {"--limit", "3", "--json"}, {"--since", "1d", "--limit", "3"},
		{"--until", "{mid}"}, {"--until", "{mid}", "--limit", "2", "--json"}} {
		cases = append(cases, sweepCase{path: "log", argv: append(a, "--dir", "{big}"), json: slices.Contains(a, "--json")})
	}
	if t.Failed() {
		return
	}
	start := time.Now()
	work := t.TempDir()
	fx := &sweepFixture{missing: filepath.Join(work, "missing"), files: map[string]string{}, codes: map[string]map[int]int{}}
	fx.big = buildBigLedger(t, filepath.Join(work, "big"), filepath.Join(work, "bigfiles"))
	fx.small = buildSmallLedger(t, filepath.Join(work, "small"), work)
	t.Logf("ledgers built in %v: %d and %d events", time.Since(start).Round(time.Millisecond), fx.big.size, fx.small.size)
	for name, data := range map[string][]byte{
		"garbage": []byte("\x00\xffnot a document, a key, a proof or a checkpoint\n"),
		"empty":   {},
		"text":    []byte("some text\n"),
	} {
		p := filepath.Join(work, name)
		writeFileT(t, p, data)
		fx.files[name] = p
	}
	for name, p := range map[string]string{
		"hmac":        "testdata/vectors/rvww/hmac_key.txt",
		"spec":        "testdata/vectors/avir/01_verified_L2.spec.json",
		"attestation": "testdata/vectors/avir/01_verified_L2.attestation.json",
		"bundlefile":  "testdata/vectors/rvww/01_solved_autonomous_signed.rvww",
		"policyfile":  "testdata/rvww/policies/custom_read_grep.json",
		"trace":       "verifier/witness/testdata/traces/failed_restricted.jsonl",
	} {
		fx.files[name] = repoPath(p)
	}
	before := map[string]ledgerState{}
	for _, sl := range []*sweepLedger{fx.big, fx.small} {
		before[sl.name] = stateOf(t, sl.dir)
	}

	perCommand := map[string]int{}
	for _, c := range cases {
		perCommand[c.path]++
	}
	t.Logf("%d invocations: %v", len(cases), perCommand)

	sweepStart := time.Now()
	t.Run("invocations", func(t *testing.T) {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s#%d", strings.ReplaceAll(c.path, " ", "_"), i), func(t *testing.T) {
				t.Parallel()
				runSweepCase(t, fx, c)
			})
		}
	})
	t.Logf("sweep: %d invocations in %v; exit codes by command: %v", len(cases), time.Since(sweepStart).Round(time.Millisecond), fx.codes)

	for _, sl := range []*sweepLedger{fx.big, fx.small} {
		if diff := before[sl.name].diff(stateOf(t, sl.dir)); diff != "" {
			t.Errorf("the %s ledger changed during the read sweep: %s", sl.name, diff)
		}
	}
}

// runSweepCase runs one invocation and checks it.
func runSweepCase(t *testing.T, fx *sweepFixture, c sweepCase) {
	sl := fx.big
	for i, a := range c.argv {
		if i > 0 && c.argv[i-1] == "--dir" && a == "{small}" {
			sl = fx.small
		}
	}
	tmp := t.TempDir()
	args := strings.Fields(c.path)
	for _, a := range c.argv {
		args = append(args, fx.expand(a, sl, tmp))
	}
	var stdin []byte
	if c.garbageIn {
		stdin = []byte("\x00\x01garbage on standard input\n{\"not\": [\"closed\"\n")
	}
	stdout, stderr, code := runInProcess(stdin, args...)
	fx.mu.Lock()
	if fx.codes[c.path] == nil {
		fx.codes[c.path] = map[int]int{}
	}
	fx.codes[c.path][code]++
	fx.mu.Unlock()
	what := fmt.Sprintf("ledger %s", quoteArgs(args))
	for _, bad := range []string{"panic", "goroutine ", "runtime error"} {
		if strings.Contains(stderr, bad) {
			t.Fatalf("%s: %q on stderr (exit %d):\n%s", what, bad, code, stderr)
		}
	}
	if !slices.ContainsFunc(exitCodes, func(e exitCode) bool { return e.code == code }) {
		t.Errorf("%s: exit %d is no documented exit code\n%s", what, code, stderr)
	}
	if c.usage && code != exitUsage {
		t.Errorf("%s: exit %d, want %d (a usage error)\nstderr: %s", what, code, exitUsage, stderr)
	}
	if code != exitOK {
		// A failure is one "ledger:" line on stderr, unless the command's
		// report on standard output says it (inspect: an input that is
		// malformed or invalid).
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		reported := stderr == "" && stdout != "" && code != exitUsage
		if !reported && (len(lines) != 1 || !strings.HasPrefix(lines[0], "ledger: ")) {
			t.Errorf("%s: exit %d; stderr is not one \"ledger:\" line: %q", what, code, clipText(stderr, 2000))
		}
	} else {
		// Success may say things on stderr (witness build's notes, policy
		// violations, its summary when the bundle goes to stdout), never
		// a log line (log/slog's text: time=… level=…).
		for _, l := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
			if strings.HasPrefix(l, "time=") || strings.Contains(l, " level=") {
				t.Errorf("%s: exit 0 with stderr %q", what, clipText(stderr, 2000))
				break
			}
		}
	}
	if c.json && stdout != "" {
		sc := bufio.NewScanner(strings.NewReader(stdout))
		sc.Buffer(nil, 64<<20)
		n := 0
		for sc.Scan() {
			n++
			var v map[string]any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Errorf("%s: --json line %d is not a JSON object: %v: %q", what, n, err, clipText(sc.Text(), 300))
				break
			}
		}
		if err := sc.Err(); err != nil {
			t.Errorf("%s: reading stdout: %v", what, err)
		}
	}
}

// quoteArgs joins args for a message, quoting the empty and spaced ones.
func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// ledgerState is what a read must not change: the checkpoint, and every
// file of the ledger directory but its read copies (copies/), with its
// size and modification time.
type ledgerState struct {
	size  int
	root  string
	files map[string]string
}

func stateOf(t *testing.T, dir string) ledgerState {
	t.Helper()
	st := ledgerState{files: map[string]string{}}
	st.size, st.root = checkpointOf(t, dir)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel == "copies" {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st.files[rel] = fmt.Sprintf("%d bytes, %v", info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// diff says how b differs from s ("" when it does not).
func (s ledgerState) diff(b ledgerState) string {
	var out []string
	if s.size != b.size || s.root != b.root {
		out = append(out, fmt.Sprintf("checkpoint %d %s → %d %s", s.size, s.root, b.size, b.root))
	}
	var names []string
	for n := range b.files {
		names = append(names, n)
	}
	for n := range s.files {
		if _, ok := b.files[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		was, ok1 := s.files[n]
		now, ok2 := b.files[n]
		switch {
		case !ok1:
			out = append(out, "new file "+n)
		case !ok2:
			out = append(out, "removed "+n)
		case was != now:
			out = append(out, fmt.Sprintf("%s: %s → %s", n, was, now))
		}
	}
	return strings.Join(out, "; ")
}
