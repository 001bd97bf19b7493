package avirrun

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/proofledger/ledger/verifier/sandbox"
)

func TestParseCPUList(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		fail bool
	}{
		{"0\n", 1, false},
		{"0-1\n", 2, false},
		{"0-3,5,7-8\n", 7, false},
		{"", 0, true},
		{"0-", 0, true},
		{"3-1", 0, true},
		{"a", 0, true},
		{"0,,1", 0, true},
		{"0-4294967295", 0, true},
	}
	for _, c := range cases {
		n, err := parseCPUList(c.in)
		if (err != nil) != c.fail || n != c.n {
			t.Errorf("parseCPUList(%q) = %d, %v; want %d, fail %v", c.in, n, err, c.n, c.fail)
		}
	}
}

func TestParseMemTotal(t *testing.T) {
	cases := []struct {
		in   string
		kb   uint64
		fail string
	}{
		{"MemTotal:       24684084 kB\nMemFree: 1 kB\n", 24684084, ""},
		{"MemFree: 1 kB\nMemTotal: 16 kB", 16, ""},
		{"MemFree: 1 kB\n", 0, "no MemTotal line"},
		{"MemTotal: 12 MB\n", 0, `want "<number> kB"`},
		{"MemTotal: x kB\n", 0, "is not a size"},
	}
	for _, c := range cases {
		kb, err := parseMemTotal([]byte(c.in))
		if kb != c.kb || (c.fail == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.fail)) {
			t.Errorf("parseMemTotal(%q) = %d, %v; want %d, %q", c.in, kb, err, c.kb, c.fail)
		}
	}
}

// TestMemoryGB: GiB rounded to one decimal as Python's round does it.
// 24684084 kB is 23.5405... GiB; 131805184 kB (a machine reported as
// 125.7) is 125.699...; 1572864 kB is exactly 1.5 GiB.
func TestMemoryGB(t *testing.T) {
	for kb, want := range map[uint64]float64{24684084: 23.5, 131805184: 125.7, 1572864: 1.5, 16777216: 16.0, 0: 0} {
		if got := memoryGB(kb); got != want {
			t.Errorf("memoryGB(%d) = %v, want %v", kb, got, want)
		}
	}
}

func TestDetectHost(t *testing.T) {
	mem := &fstest.MapFile{Data: []byte("MemTotal:       24684084 kB\n")}
	cases := []struct {
		name      string
		fs        fstest.MapFS
		env       map[string]string
		container string
		cores     int
	}{
		{"docker", fstest.MapFS{".dockerenv": {}, "proc/meminfo": mem, "sys/devices/system/cpu/online": {Data: []byte("0-3\n")}}, nil, "docker", 4},
		{"podman", fstest.MapFS{"run/.containerenv": {}, "proc/meminfo": mem}, nil, "podman", runtime.NumCPU()},
		{"nspawn", fstest.MapFS{"proc/meminfo": mem}, map[string]string{"container": "systemd-nspawn"}, "systemd-nspawn", runtime.NumCPU()},
		{"kubernetes", fstest.MapFS{"proc/meminfo": mem, "proc/1/cgroup": {Data: []byte("0::/kubepods/besteffort/pod1\n")}}, nil, "kubernetes", runtime.NumCPU()},
		{"bare metal", fstest.MapFS{"proc/meminfo": mem, "proc/1/cgroup": {Data: []byte("0::/init.scope\n")}, "sys/devices/system/cpu/online": {Data: []byte("0\n")}}, nil, "", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, err := detectHost(c.fs, func(k string) string { return c.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if env.Container != c.container || env.CPUCores != c.cores || env.MemoryGB != 23.5 || env.OS != runtime.GOOS || env.Arch != machineName(runtime.GOARCH) {
				t.Errorf("got %+v", env)
			}
		})
	}
	if _, err := detectHost(fstest.MapFS{}, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "memory size") {
		t.Errorf("no meminfo: %v", err)
	}
	bad := fstest.MapFS{"proc/meminfo": mem, "sys/devices/system/cpu/online": {Data: []byte("zero")}}
	if _, err := detectHost(bad, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "cpu/online") {
		t.Errorf("bad CPU list: %v", err)
	}
}

// TestProbePython: the python version comes from the sandbox's python3,
// none is null, anything odd is an error.
func TestProbePython(t *testing.T) {
	for _, c := range []struct {
		report string
		res    sandbox.Result
		want   string
		fail   bool
	}{
		{"3.11.2", sandbox.Result{}, "3.11.2", false},
		{"", sandbox.Result{}, "", false},
		{"3.11 beta\n", sandbox.Result{}, "", true},
		{"", sandbox.Result{ExitCode: 1, Stderr: []byte("Fatal Python error\n")}, "", true},
	} {
		r := &probeRunner{res: c.res}
		r.res.Report = []byte(c.report)
		got, err := probePython(context.Background(), r)
		if got != c.want || (err != nil) != c.fail {
			t.Errorf("report %q: %q, %v", c.report, got, err)
		}
	}
}

type probeRunner struct{ res sandbox.Result }

func (p *probeRunner) Run(context.Context, sandbox.Cmd) (sandbox.Result, error) { return p.res, nil }
func (p *probeRunner) Sandbox() string                                          { return "probe" }

// TestMachineName pins the architectures whose uname machine name differs
// from Go's: the env_hash of one machine must be the reference's.
func TestMachineName(t *testing.T) {
	for goarch, want := range map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686", "riscv64": "riscv64", "s390x": "s390x"} {
		if got := machineName(goarch); got != want {
			t.Errorf("machineName(%q) = %q, want %q", goarch, got, want)
		}
	}
}
