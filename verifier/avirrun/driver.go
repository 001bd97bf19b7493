package avirrun

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/verifier/sandbox"
)

// driverScript runs one benchmark's steps inside one sandbox, so that
// setup, warm-up runs, measured runs and teardown share the sandbox's
// working directory (/box). Each step is `/bin/sh -c <command>` under
// coreutils' timeout, with standard input from /dev/null, standard output
// and error to files in a private directory under /tmp, and file
// descriptor 3 (the report pipe) closed. The driver writes one line to
// the report pipe before a step (B kind index) and one after it
// (E kind index status elapsed_ns stdout_size stdout_tail_hex
// stderr_tail_hex, "-" for an empty tail; the stderr tail only for a
// non-zero status), and D when it is done. A failed setup step skips the
// runs; a failed warm-up or measured run skips the runs after it;
// teardown steps always run.
//
// Arguments: timeout (decimal seconds), warm-up runs, measured runs,
// number of setup steps, number of teardown steps, the setup commands,
// the benchmark command, the teardown commands.
const driverScript = `set -u
T=$1 W=$2 R=$3 NS=$4 NT=$5
shift 5
i=0
while [ "$i" -lt "$NS" ]; do eval "S$i=\$1"; shift; i=$((i + 1)); done
C=$1
shift
i=0
while [ "$i" -lt "$NT" ]; do eval "D$i=\$1"; shift; i=$((i + 1)); done
d=$(mktemp -d /tmp/avirrun.XXXXXXXX) || exit 70
hex() { od -An -v -tx1 | tr -d ' \n'; }
step() {
	printf 'B %s %s\n' "$1" "$2" >&3
	t0=$(date +%s%N)
	timeout -k 2 "$T" /bin/sh -c "$3" </dev/null >"$d/out" 2>"$d/err" 3>&-
	st=$?
	t1=$(date +%s%N)
	size=$(wc -c <"$d/out")
	out=$(tail -c ` + tailBytesText + ` "$d/out" | hex)
	err=
	if [ "$st" -ne 0 ]; then err=$(tail -c ` + stderrBytesText + ` "$d/err" | hex); fi
	printf 'E %s %s %s %s %s %s %s\n' "$1" "$2" "$st" "$((t1 - t0))" "$((size + 0))" "${out:--}" "${err:--}" >&3
	return "$st"
}
fail=0
i=0
while [ "$fail" -eq 0 ] && [ "$i" -lt "$NS" ]; do eval "c=\$S$i"; step setup "$i" "$c" || fail=1; i=$((i + 1)); done
i=0
while [ "$fail" -eq 0 ] && [ "$i" -lt "$W" ]; do step warmup "$i" "$C" || fail=1; i=$((i + 1)); done
i=0
while [ "$fail" -eq 0 ] && [ "$i" -lt "$R" ]; do step run "$i" "$C" || fail=1; i=$((i + 1)); done
i=0
while [ "$i" -lt "$NT" ]; do eval "c=\$D$i"; step teardown "$i" "$c"; i=$((i + 1)); done
rm -rf "$d"
printf 'D\n' >&3
`

// The driver reports the last tailBytes of each step's standard output
// (enough for any number: a longer last line is refused) and, for a
// failed step, the last stderrBytes of its standard error.
const (
	tailBytes       = 128
	tailBytesText   = "128"
	stderrBytes     = 512
	stderrBytesText = "512"
)

// killGrace is how long coreutils' timeout waits after SIGTERM before it
// sends SIGKILL (the driver's -k 2).
const killGrace = 2 * time.Second

// StepKind names the phase a step belongs to.
type StepKind string

// The phases of a benchmark, in the order they run.
const (
	StepSetup    StepKind = "setup"
	StepWarmup   StepKind = "warmup"
	StepRun      StepKind = "run"
	StepTeardown StepKind = "teardown"
)

// plan is what the driver is asked to run for one benchmark.
type plan struct {
	timeout  time.Duration
	setup    []string
	command  string
	warmup   int
	runs     int
	teardown []string
}

func (p plan) steps() int { return len(p.setup) + p.warmup + p.runs + len(p.teardown) }

// expected lists the steps in the order the driver runs them.
func (p plan) expected() []stepKey {
	keys := make([]stepKey, 0, p.steps())
	add := func(k StepKind, n int) {
		for i := 0; i < n; i++ {
			keys = append(keys, stepKey{k, i})
		}
	}
	add(StepSetup, len(p.setup))
	add(StepWarmup, p.warmup)
	add(StepRun, p.runs)
	add(StepTeardown, len(p.teardown))
	return keys
}

// seconds writes d as decimal seconds for coreutils' timeout.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// args are the driver's positional arguments (after $0).
func (p plan) args() []string {
	a := []string{
		seconds(p.timeout),
		strconv.Itoa(p.warmup),
		strconv.Itoa(p.runs),
		strconv.Itoa(len(p.setup)),
		strconv.Itoa(len(p.teardown)),
	}
	a = append(a, p.setup...)
	a = append(a, p.command)
	return append(a, p.teardown...)
}

// satAdd and satMul are duration arithmetic that saturates instead of
// wrapping around.
func satAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(d time.Duration, n int64) time.Duration {
	if n <= 0 || d <= 0 {
		return 0
	}
	if d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return d * time.Duration(n)
}

// cmd is the sandbox command that runs p. The sandbox's wall clock allows
// every step its timeout plus the kill grace and a second of overhead;
// CPU time is that wall time on every CPU, so that only the per-step
// timeouts decide; the report stream has room for every step's line.
func (p plan) cmd(base sandbox.Limits, cpus int) sandbox.Cmd {
	n := int64(p.steps())
	perStep := satAdd(satAdd(p.timeout, killGrace), time.Second)
	wall := satAdd(satMul(perStep, n), 10*time.Second)
	l := base
	l.Wall = wall
	l.CPUTime = satMul(wall, int64(max(cpus, 1)))
	need := int64(64<<10) + n*1024
	l.Output = max(l.Output, need, sandbox.DefaultLimits().Output)
	return sandbox.Cmd{
		Path:   "/bin/sh",
		Args:   append([]string{"-c", driverScript, "avirrun"}, p.args()...),
		Report: true,
		Limits: l,
	}
}

// stepKey names one step.
type stepKey struct {
	kind  StepKind
	index int
}

func (k stepKey) String() string { return fmt.Sprintf("%s %d", k.kind, k.index) }

// stepEnd is one E line of the driver's report.
type stepEnd struct {
	key     stepKey
	status  int
	elapsed time.Duration
	size    int64
	stdout  []byte // the last tailBytes of standard output
	stderr  []byte // the last stderrBytes of standard error, failed steps only
}

// report is the driver's report, read.
type report struct {
	ended []stepEnd
	open  *stepKey // a step that began and did not end
	done  bool     // the D line was seen
}

// errReport is a driver report that does not follow the protocol.
var errReport = errors.New("malformed driver report")

// parseReport reads the driver's report for plan p. Lines must come in
// the order the driver writes them, for the steps p names: every step in
// turn, except that after a step with a non-zero status the driver skips
// to the teardown steps, which all run. A report cut short (the sandbox
// ended the driver) is fine and shows in open and done.
func parseReport(data []byte, p plan) (report, error) {
	var r report
	want := p.expected()
	next := 0
	failed := false // a step ended with a non-zero status
	bad := func(line int, format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", errReport, line, fmt.Sprintf(format, args...))
	}
	lines := bytes.Split(data, []byte{'\n'})
	if last := lines[len(lines)-1]; len(last) != 0 {
		return r, bad(len(lines), "incomplete line (%d bytes without a newline)", len(last))
	}
	lines = lines[:len(lines)-1]
	for i, ln := range lines {
		no := i + 1
		if r.done {
			return r, bad(no, "line after the final D line")
		}
		f := strings.Split(string(ln), " ")
		switch f[0] {
		case "B":
			if len(f) != 3 {
				return r, bad(no, "B line has %d fields, want 3", len(f))
			}
			if r.open != nil {
				return r, bad(no, "step %s begins before step %s ended", strings.Join(f[1:], " "), *r.open)
			}
			k, err := readKey(f[1], f[2])
			if err != nil {
				return r, bad(no, "%v", err)
			}
			if next < len(want) && k != want[next] && failed && k.kind == StepTeardown {
				// After a failed step the driver skips to the teardown.
				for next < len(want) && want[next].kind != StepTeardown {
					next++
				}
			}
			if next >= len(want) || k != want[next] {
				return r, bad(no, "step %s out of order", k)
			}
			r.open = &want[next]
			next++
		case "E":
			if len(f) != 8 {
				return r, bad(no, "E line has %d fields, want 8", len(f))
			}
			k, err := readKey(f[1], f[2])
			if err != nil {
				return r, bad(no, "%v", err)
			}
			if r.open == nil || *r.open != k {
				return r, bad(no, "step %s ends without having begun", k)
			}
			e := stepEnd{key: k}
			st, err1 := strconv.Atoi(f[3])
			ns, err2 := strconv.ParseInt(f[4], 10, 64)
			size, err3 := strconv.ParseInt(f[5], 10, 64)
			if err := errors.Join(err1, err2, err3); err != nil || st < 0 || st > 255 || ns < 0 || size < 0 {
				return r, bad(no, "status %q, elapsed %q or size %q is not a count", f[3], f[4], f[5])
			}
			e.status, e.elapsed, e.size = st, time.Duration(ns), size
			if e.stdout, err = readHex(f[6], tailBytes); err != nil {
				return r, bad(no, "stdout tail: %v", err)
			}
			if e.stderr, err = readHex(f[7], stderrBytes); err != nil {
				return r, bad(no, "stderr tail: %v", err)
			}
			r.ended = append(r.ended, e)
			r.open = nil
			failed = failed || st != 0
		case "D":
			if len(f) != 1 {
				return r, bad(no, "D line has %d fields, want 1", len(f))
			}
			if r.open != nil {
				return r, bad(no, "done while step %s is running", *r.open)
			}
			for _, k := range want[next:] {
				if !failed || k.kind == StepTeardown {
					return r, bad(no, "done before step %s", k)
				}
			}
			r.done = true
		default:
			return r, bad(no, "unknown line kind %q", truncate(f[0], 16))
		}
	}
	return r, nil
}

func readKey(kind, index string) (stepKey, error) {
	k := StepKind(kind)
	switch k {
	case StepSetup, StepWarmup, StepRun, StepTeardown:
	default:
		return stepKey{}, fmt.Errorf("unknown step kind %q", truncate(kind, 16))
	}
	i, err := strconv.Atoi(index)
	if err != nil || i < 0 {
		return stepKey{}, fmt.Errorf("step index %q is not a count", truncate(index, 16))
	}
	return stepKey{k, i}, nil
}

// readHex decodes a tail written by the driver: "-" or lowercase hex of at
// most max bytes.
func readHex(s string, max int) ([]byte, error) {
	if s == "-" {
		return nil, nil
	}
	if len(s) > 2*max {
		return nil, fmt.Errorf("%d hex digits, at most %d allowed", len(s), 2*max)
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// truncate cuts s to n bytes for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// maxInt is the largest integer a measurement may be: the reference's
// arithmetic is exact only up to 2^53, and codec/avir refuses more.
const maxInt = 1 << 53

// lastLine returns the last line of a step's standard output from the
// tail the driver kept: trailing white space (blank lines included) is
// dropped, then the text after the last newline is taken and trimmed.
// size is the whole output's length; a last line that may have started
// before the tail is refused.
func lastLine(tail []byte, size int64) (string, error) {
	t := bytes.TrimRight(tail, " \t\r\n\v\f")
	if len(t) == 0 {
		if size > int64(len(tail)) {
			return "", fmt.Errorf("standard output ends with more than %d bytes of white space", tailBytes)
		}
		return "", errors.New("standard output is empty")
	}
	nl := bytes.LastIndexByte(t, '\n')
	if nl < 0 && size > int64(len(tail)) {
		return "", fmt.Errorf("the last line of standard output is longer than %d bytes", tailBytes)
	}
	return string(bytes.TrimLeft(t[nl+1:], " \t\r\v\f")), nil
}

// parseMeasurement reads a measured value: one JSON number (RFC 8259
// syntax, so no sign "+", no "NaN", no thousands separators, no unit),
// finite, and an integer within ±2^53 when written as one. Its literal
// decides int or float, as Python's json.loads would (42 is an int, 42.0
// a float), which the statistics keep.
func parseMeasurement(line string) (canonjson.Value, error) {
	v, ok := canonjson.MakeNumber(line)
	if !ok {
		return canonjson.Value{}, fmt.Errorf("last line %q is not a JSON number", truncate(line, 64))
	}
	if v.IsInt() {
		i, ok := v.Int64()
		if !ok || i > maxInt || i < -maxInt {
			return canonjson.Value{}, fmt.Errorf("integer %s is beyond ±2^53", truncate(line, 64))
		}
		return canonjson.MakeInt(i), nil
	}
	f, ok := v.Float64()
	if !ok || math.IsInf(f, 0) || math.IsNaN(f) {
		return canonjson.Value{}, fmt.Errorf("number %s overflows a float64", truncate(line, 64))
	}
	return v, nil
}
