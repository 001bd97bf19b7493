package vrfrun

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/proofledger/ledger/codec/inspect"
	"github.com/proofledger/ledger/codec/vrf"
	"github.com/proofledger/ledger/verifier/sandbox"
)

var update = flag.Bool("update", false,
	"regenerate testdata/golden by running the reference verifier (testdata/regen-golden.sh; needs VRF_REFERENCE or /work/ref/clawbizarre/prototype)")

// golden is what the reference answered for one request
// (testdata/reference_golden.py writes it).
type golden struct {
	Status   int    `json:"status"`
	Error    string `json:"error"`
	Tier     int    `json:"tier"`
	Verdict  string `json:"verdict"`
	Total    int64  `json:"total"`
	Passed   int64  `json:"passed"`
	Failed   int64  `json:"failed"`
	Errors   int64  `json:"errors"`
	Details  []goldenDetail
	Hashes   map[string]*string `json:"hashes"`
	Metadata map[string]any     `json:"metadata"`
	TaskID   string             `json:"task_id"`
	TaskType string             `json:"task_type"`
}

type goldenDetail struct {
	Name   string  `json:"name"`
	Status string  `json:"status"`
	Error  *string `json:"error"`
	Output *string `json:"output"`
}

type goldenEnv struct {
	PythonVersion string `json:"python_version"`
	Environment   string `json:"environment"`
	Runtime       string `json:"runtime"`
}

// intended lists the requests on which vrfrun differs from the reference
// by design, with the statuses vrfrun gives. All but the last are the
// report channel: the reference decides by what the process printed (the
// whole stdout for python tests and expression tests, the stderr text
// "timeout" for programs), so code that prints, or prints on purpose,
// changes its verdict; vrfrun reads verdicts from the sandbox's report
// pipe and the sandbox's own timeout flag. The last is a constraint that
// raises SystemExit, which makes the reference fail the request (and stop
// its server); vrfrun reports that constraint as an error.
var intended = map[string][]string{
	"verify/differ_print_at_import":                {"pass"},
	"verify/differ_print_fail_at_import":           {"pass"},
	"verify/differ_print_in_eval":                  {"pass"},
	"verify/differ_forged_pass":                    {"error"},
	"verify/differ_stderr_says_timeout":            {"pass"},
	"verify/differ_js_expression_console_override": {"pass"},
	"verify/differ_js_expression_prints":           {"pass"},
	"schema/differ_constraint_exit":                {"pass", "error"},
}

// tmpDir is where the reference's temporary directories appear in error
// texts (reference_golden.py writes them so):
// vrfrun's files are in /box. The reference cuts some texts at 500
// characters; with its longer paths the cut comes earlier, so a text that
// had a temporary directory matches when vrfrun's starts with it.
var tmpDir = regexp.MustCompile(`/tmp/tmpXXXXXXXX/`)

type goldenCase struct {
	name     string // endpoint/name
	endpoint string
	body     []byte
	want     golden
}

func loadGolden(t *testing.T) ([]goldenCase, goldenEnv) {
	t.Helper()
	var env goldenEnv
	raw, err := os.ReadFile(filepath.Join("testdata", "golden", "ENV.json"))
	if err != nil {
		t.Fatalf("golden: %v (run go test -run TestReferenceGolden -update with the reference at hand)", err)
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	for _, ep := range []string{"verify", "schema"} {
		files, err := filepath.Glob(filepath.Join("testdata", "requests", ep, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			name := ep + "/" + strings.TrimSuffix(filepath.Base(f), ".json")
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			gb, err := os.ReadFile(filepath.Join("testdata", "golden", ep, filepath.Base(f)))
			if err != nil {
				t.Fatalf("%s: no golden answer: %v (regenerate with -update)", name, err)
			}
			var g golden
			if err := json.Unmarshal(gb, &g); err != nil {
				t.Fatalf("%s: golden: %v", name, err)
			}
			cases = append(cases, goldenCase{name: name, endpoint: ep, body: body, want: g})
		}
	}
	if len(cases) < 100 {
		t.Fatalf("only %d golden requests", len(cases))
	}
	return cases, env
}

// testRunner returns a namespaces sandbox shared by the package's tests,
// or skips the test when the kernel refuses one.
var (
	sharedRunnerOnce sync.Once
	sharedRunner     *sandbox.Runner
	sharedRunnerErr  error
)

func testRunner(t *testing.T) *sandbox.Runner {
	t.Helper()
	sharedRunnerOnce.Do(func() {
		sharedRunner, sharedRunnerErr = sandbox.New(sandbox.Config{Pool: 2})
	})
	if errors.Is(sharedRunnerErr, sandbox.ErrUnavailable) {
		t.Skipf("skipping: this kernel refuses the sandbox's namespaces (%v); the golden comparison runs only in namespaces mode", sharedRunnerErr)
	}
	if sharedRunnerErr != nil {
		t.Fatal(sharedRunnerErr)
	}
	if _, err := sandbox.LookPath("python3"); err != nil {
		t.Skipf("skipping: no python3 in the system directories (%v)", err)
	}
	return sharedRunner
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedRunner != nil {
		if err := sharedRunner.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close the shared sandbox runner:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// TestReferenceGolden runs every request under testdata/requests through
// vrfrun and compares verdict, counts, per-test names and statuses, the
// four hashes and (when this machine's Python is the one that produced the
// goldens) the error texts with what the reference verifier answered.
func TestReferenceGolden(t *testing.T) {
	if *update {
		ref := os.Getenv("VRF_REFERENCE")
		if ref == "" {
			ref = "/work/ref/clawbizarre/prototype"
		}
		if _, err := os.Stat(filepath.Join(ref, "verify_server.py")); err != nil {
			t.Fatalf("-update needs the reference verifier: %v (set VRF_REFERENCE)", err)
		}
		cmd := exec.Command("./regen-golden.sh")
		cmd.Dir = "testdata"
		cmd.Env = append(os.Environ(), "VRF_REFERENCE="+ref)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("regen-golden.sh: %v\n%s", err, out)
		}
	}
	cases, env := loadGolden(t)
	r := testRunner(t)
	v, err := New(r, Options{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	py, err := v.python(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	samePython := "python:"+py.version == env.Environment
	if !samePython {
		t.Logf("this machine's python (%q) is not the goldens' (%q): environment hashes, runtimes and error texts are not compared", py.version, env.PythonVersion)
	}
	_, nodeErr := sandbox.LookPath("node")
	ins, err := inspect.New()
	if err != nil {
		t.Fatal(err)
	}
	signed := 0

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := verifyBody(context.Background(), v, c.endpoint, c.body)
			if errors.Is(err, ErrLanguage) && nodeErr != nil && strings.Contains(err.Error(), "node") {
				t.Skipf("no node on this machine: %v", err)
			}
			w := c.want
			if statuses, ok := intended[c.name]; ok {
				if err != nil {
					t.Fatalf("intended difference: want statuses %v, got error %v", statuses, err)
				}
				if gs := statusesOf(got.Details); !slices.Equal(gs, statuses) {
					t.Fatalf("intended difference: want statuses %v, got %v (reference: %v)", statuses, gs, goldenStatuses(w))
				}
				return
			}
			if w.Status != 200 {
				if err == nil {
					t.Fatalf("reference answered %d (%s); vrfrun gave verdict %s", w.Status, w.Error, got.Verdict)
				}
				if !errors.Is(err, ErrRequest) && !errors.Is(err, ErrLanguage) {
					t.Fatalf("reference answered %d (%s); vrfrun's error %v wraps neither ErrRequest nor ErrLanguage", w.Status, w.Error, err)
				}
				switch {
				case strings.HasPrefix(w.Error, "Tier 0 requires"):
					if !errors.Is(err, ErrNoTests) {
						t.Errorf("want ErrNoTests, got %v", err)
					}
				case strings.HasPrefix(w.Error, "Tier "):
					if !errors.Is(err, ErrTier) {
						t.Errorf("want ErrTier, got %v", err)
					}
					if !strings.Contains(err.Error(), w.Error) {
						t.Errorf("error %q does not carry the reference's %q", err, w.Error)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("reference gave verdict %s; vrfrun: %v", w.Verdict, err)
			}
			if got.Tier != w.Tier || got.Verdict != w.Verdict {
				t.Errorf("tier/verdict %d/%s, reference %d/%s", got.Tier, got.Verdict, w.Tier, w.Verdict)
			}
			if gc := (vrf.Counts{Total: w.Total, Passed: w.Passed, Failed: w.Failed, Errors: w.Errors}); got.Counts != gc {
				t.Errorf("counts %v, reference %v", got.Counts, gc)
			}
			if len(got.Details) != len(w.Details) {
				t.Fatalf("%d details %v, reference %d %v", len(got.Details), statusesOf(got.Details), len(w.Details), goldenStatuses(w))
			}
			for i, wd := range w.Details {
				gd := got.Details[i]
				if gd.Name != wd.Name || gd.Status != wd.Status {
					t.Errorf("detail %d: %q %s, reference %q %s", i, gd.Name, gd.Status, wd.Name, wd.Status)
				}
				if !samePython {
					continue
				}
				want, shortened := "", false
				if wd.Error != nil {
					want = tmpDir.ReplaceAllString(*wd.Error, "/box/")
					shortened = want != *wd.Error
				}
				if gd.Error != want && !(shortened && strings.HasPrefix(gd.Error, want)) {
					t.Errorf("detail %d (%s) error text:\n got %q\nwant %q", i, wd.Name, gd.Error, want)
				}
				wantOut := ""
				if wd.Output != nil {
					wantOut = *wd.Output
				}
				if gd.Output != wantOut {
					t.Errorf("detail %d (%s) output %q, reference %q", i, wd.Name, gd.Output, wantOut)
				}
			}
			hashes := map[string]string{
				"input_hash": got.Hashes.Input, "output_hash": got.Hashes.Output,
				"suite_hash": got.Hashes.Suite, "environment_hash": got.Hashes.Environment,
			}
			for k, wh := range w.Hashes {
				want := ""
				if wh != nil {
					want = *wh
				}
				if k == "environment_hash" && want != "" && !samePython {
					if hashes[k] != vrf.ShortHash([]byte("python:"+py.version)) {
						t.Errorf("environment_hash %s is not the hash of this python's version", hashes[k])
					}
					continue
				}
				if hashes[k] != want {
					t.Errorf("%s %s, reference %s", k, hashes[k], want)
				}
			}
			if lang, _ := w.Metadata["language"].(string); got.Language != lang {
				t.Errorf("metadata.language %q, reference %q", got.Language, lang)
			}
			if rt, _ := w.Metadata["runtime"].(string); got.Runtime != rt && samePython {
				t.Errorf("metadata.runtime %q, reference %q", got.Runtime, rt)
			}
			if got.TaskID != w.TaskID || got.TaskType != w.TaskType {
				t.Errorf("task %q/%q, reference %q/%q", got.TaskID, got.TaskType, w.TaskID, w.TaskType)
			}

			// Every receipt vrfrun signs verifies, with codec/inspect and
			// with the reference's algorithm written out in the test.
			opts := ReceiptOptions{}
			if signed%2 == 1 {
				opts = ReceiptOptions{AgentID: "agent-" + c.name, Chain: &vrf.ChainLink{Position: int64(signed)}}
			}
			signed++
			data, err := got.Sign(testKey(), opts)
			if err != nil {
				t.Fatalf("sign: %v", err)
			}
			r := checkSigned(t, ins, data)
			if r.Verdict() != w.Verdict || r.Counts() != got.Counts {
				t.Errorf("signed receipt says %s %v", r.Verdict(), r.Counts())
			}
		})
	}
	if signed < 100 {
		t.Errorf("only %d receipts signed", signed)
	}
}

// verifyBody parses and verifies a body as the given endpoint would.
func verifyBody(ctx context.Context, v *Verifier, endpoint string, body []byte) (*Result, error) {
	req, err := ParseRequest(body, ParseOptions{Schema: endpoint == "schema"})
	if err != nil {
		return nil, err
	}
	return v.Verify(ctx, req)
}

func statusesOf(ds []vrf.Detail) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Status)
	}
	return out
}

func goldenStatuses(g golden) []string {
	var out []string
	for _, d := range g.Details {
		out = append(out, d.Status)
	}
	return out
}
