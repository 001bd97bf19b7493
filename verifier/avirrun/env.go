package avirrun

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/proofledger/ledger/codec/avir"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/verifier/sandbox"
)

// DetectEnvironment reads the environment the benchmarks run in, as the
// attestation's environment object records it and env_hash covers it:
//
//   - OS: runtime.GOOS ("linux"), as the reference's
//     platform.system().lower() writes it;
//   - Arch: the machine name Python's platform.machine() reports on Linux
//     ("x86_64", "aarch64"; see machineName), as the reference writes it,
//     so that one machine has one env_hash whichever verifier ran there
//     (the protocol's example writes Go's "amd64": the reference's
//     attestations, and so the replicators comparing them, do not);
//   - CPUCores: the online CPUs of /sys/devices/system/cpu/online, what
//     Python's os.cpu_count() reports on Linux; runtime.NumCPU() where
//     that file cannot be read;
//   - MemoryGB: MemTotal of /proc/meminfo in GiB rounded to one decimal
//     (Python's round(total / 1024**3, 1) of psutil's total);
//   - Container: "docker" when /.dockerenv exists, "podman" when
//     /run/.containerenv does, else the value of the environment variable
//     "container" (systemd-nspawn, lxc), else a kubepods, docker, lxc or
//     containerd path in /proc/1/cgroup; "" (written as null) when none;
//   - PythonVersion: platform.python_version() of the python3 the
//     benchmark commands see, asked through r (so inside the sandbox:
//     /usr's python3, not a pyenv shim of the host); "" (written as null)
//     when the sandbox has no python3.
func DetectEnvironment(ctx context.Context, r Runner) (avir.Environment, error) {
	env, err := detectHost(os.DirFS("/"), os.Getenv)
	if err != nil {
		return env, err
	}
	py, err := probePython(ctx, r)
	if err != nil {
		return env, err
	}
	env.PythonVersion = py
	return env, nil
}

// detectHost reads everything but the Python version from fsys, the
// host's root.
func detectHost(fsys fs.FS, getenv func(string) string) (avir.Environment, error) {
	env := avir.Environment{OS: runtime.GOOS, Arch: machineName(runtime.GOARCH), CPUCores: runtime.NumCPU()}
	if b, err := readSmall(fsys, "sys/devices/system/cpu/online"); err == nil {
		n, err := parseCPUList(string(b))
		if err != nil {
			return env, fmt.Errorf("avirrun: /sys/devices/system/cpu/online: %w", err)
		}
		env.CPUCores = n
	}
	b, err := readSmall(fsys, "proc/meminfo")
	if err != nil {
		return env, fmt.Errorf("avirrun: memory size: %w", err)
	}
	kb, err := parseMemTotal(b)
	if err != nil {
		return env, fmt.Errorf("avirrun: /proc/meminfo: %w", err)
	}
	env.MemoryGB = memoryGB(kb)
	env.Container = detectContainer(fsys, getenv)
	return env, nil
}

// readSmall reads a file of at most 1 MiB.
func readSmall(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only: nothing to lose
	b, err := io.ReadAll(io.LimitReader(f, 1<<20+1))
	if err != nil {
		return nil, err
	}
	if len(b) > 1<<20 {
		return nil, fmt.Errorf("%s is larger than 1 MiB", name)
	}
	return b, nil
}

// parseCPUList counts the CPUs of a kernel CPU list such as "0-3,5,7-8".
func parseCPUList(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty CPU list")
	}
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(lo, 10, 31)
		if err != nil {
			return 0, fmt.Errorf("CPU list %q: %q is not a CPU number", truncate(s, 64), truncate(lo, 16))
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 31); err != nil || b < a {
				return 0, fmt.Errorf("CPU list %q: %q is not a CPU range", truncate(s, 64), truncate(part, 32))
			}
		}
		if b-a >= 1<<20 || n > 1<<20 {
			return 0, fmt.Errorf("CPU list %q: more than 2^20 CPUs", truncate(s, 64))
		}
		n += int(b-a) + 1
	}
	return n, nil
}

// parseMemTotal returns MemTotal of /proc/meminfo in kB.
func parseMemTotal(b []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("MemTotal line %q: want \"<number> kB\"", truncate(sc.Text(), 64))
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || kb > 1<<43 {
			return 0, fmt.Errorf("MemTotal %q is not a size in kB below 2^43", truncate(f[0], 32))
		}
		return kb, nil
	}
	return 0, errors.New("no MemTotal line")
}

// memoryGB is Python's round(kb * 1024 / 1024**3, 1): the division by a
// power of two is exact, and strconv's fixed-precision formatting rounds
// the exact binary value half to even, as Python's round does.
func memoryGB(kb uint64) float64 {
	gb := float64(kb) / (1 << 20)
	f, _ := strconv.ParseFloat(strconv.FormatFloat(gb, 'f', 1, 64), 64)
	return f
}

// detectContainer names the container the ledger runs in, or "".
func detectContainer(fsys fs.FS, getenv func(string) string) string {
	if _, err := fs.Stat(fsys, ".dockerenv"); err == nil {
		return "docker"
	}
	if _, err := fs.Stat(fsys, "run/.containerenv"); err == nil {
		return "podman"
	}
	if c := strings.TrimSpace(getenv("container")); c != "" {
		return truncate(c, 64)
	}
	b, err := readSmall(fsys, "proc/1/cgroup")
	if err != nil {
		return ""
	}
	s := string(b)
	for _, c := range []struct{ marker, name string }{
		{"kubepods", "kubernetes"}, {"docker", "docker"}, {"lxc", "lxc"}, {"containerd", "containerd"},
	} {
		if strings.Contains(s, c.marker) {
			return c.name
		}
	}
	return ""
}

// pythonProbe prints platform.python_version() to the report pipe, or
// nothing when there is no python3.
const pythonProbe = `command -v python3 >/dev/null 2>&1 || exit 0
exec python3 -c 'import os, platform; os.write(3, platform.python_version().encode("ascii"))'`

// probePython asks, in the sandbox, for the version of the python3 that
// benchmark commands would run.
func probePython(ctx context.Context, r Runner) (string, error) {
	res, err := r.Run(ctx, sandbox.Cmd{Path: "/bin/sh", Args: []string{"-c", pythonProbe}, Report: true})
	if err != nil {
		return "", fmt.Errorf("avirrun: python version: %w", err)
	}
	if res.ExitCode != 0 || res.TimedOut || res.Truncated {
		return "", fmt.Errorf("avirrun: python version: python3 failed (exit %d%s): %s", res.ExitCode, signalText(res.Signal), lastText(res.Stderr))
	}
	v := string(res.Report)
	if len(v) > 32 || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return "", fmt.Errorf("avirrun: python version: python3 says %q", truncate(v, 40))
	}
	return v, nil
}

func signalText(sig string) string {
	if sig == "" {
		return ""
	}
	return ", " + sig
}

// lastText is the last non-blank line of a tool's output, for an error
// message.
func lastText(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return truncate(strings.TrimSpace(lines[len(lines)-1]), 200)
}

// envValue is the attestation's environment object in the reference's
// shape (Environment.to_dict), with an empty Container or PythonVersion
// written as null.
func envValue(e avir.Environment) canonjson.Value {
	m := func(k string, v canonjson.Value) canonjson.Member { return canonjson.Member{Key: k, Value: v} }
	orNull := func(s string) canonjson.Value {
		if s == "" {
			return canonjson.MakeNull()
		}
		return canonjson.MakeString(s)
	}
	return canonjson.MakeObject(
		m("container", orNull(e.Container)),
		m("os", canonjson.MakeString(e.OS)),
		m("arch", canonjson.MakeString(e.Arch)),
		m("python_version", orNull(e.PythonVersion)),
		m("resources", canonjson.MakeObject(
			m("cpu_cores", canonjson.MakeInt(int64(e.CPUCores))),
			m("memory_gb", canonjson.MakeFloat(e.MemoryGB)),
		)),
	)
}

// machineName returns the uname machine name (what Python's
// platform.machine() reports on Linux) of a Go architecture; an
// architecture without a known name keeps Go's.
func machineName(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	case "386":
		return "i686"
	case "arm":
		return "armv7l"
	case "ppc64":
		return "ppc64"
	case "mips64le":
		return "mips64"
	}
	return goarch // ppc64le, s390x, riscv64, loong64 are the same in both
}
