package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Sentinel errors callers branch on.
var (
	// ErrUnavailable means the kernel or the platform refuses the namespaces
	// the sandbox needs. New returns it (wrapped, with the reason) in
	// ModeNamespaces; a caller may then fall back to ModeNone only when the
	// operator asked for that explicitly.
	ErrUnavailable = errors.New("sandbox: linux namespaces unavailable")
	// ErrInvalid means a Cmd or Config field is unusable; the message names
	// the field.
	ErrInvalid = errors.New("sandbox: invalid argument")
	// ErrNotVisible means a path the command needs (its program, or a
	// read-only directory it asked for) would not be, or must not be, visible
	// inside the sandbox.
	ErrNotVisible = errors.New("sandbox: path not visible in the sandbox")
	// ErrStart means the sandbox could not start the command (program not
	// found, not executable, or a sandbox layer failed to apply).
	ErrStart = errors.New("sandbox: cannot start command")
)

// Mode selects how a Runner runs commands.
type Mode int

const (
	// ModeNamespaces runs every command in a fresh set of Linux namespaces
	// with a minimal read-only root. It is the default.
	ModeNamespaces Mode = iota
	// ModeNone runs commands as plain child processes in a temporary
	// directory with rlimits and the wall-clock timeout only: no isolation
	// of the file system, the network or the caller's keys. It exists for
	// hosts without user namespaces and must be chosen explicitly.
	ModeNone
)

// String returns "namespaces" or "none".
func (m Mode) String() string {
	switch m {
	case ModeNamespaces:
		return "namespaces"
	case ModeNone:
		return "none"
	default:
		return fmt.Sprintf("Mode(%d)", int(m))
	}
}

// ParseMode parses "namespaces" or "none" (the CLI's --sandbox values).
func ParseMode(s string) (Mode, error) {
	switch s {
	case "namespaces", "":
		return ModeNamespaces, nil
	case "none":
		return ModeNone, nil
	}
	return 0, fmt.Errorf("%w: sandbox mode %q: want namespaces or none", ErrInvalid, s)
}

// Limits bounds one run. A zero field takes the Runner's default, and a zero
// default takes DefaultLimits' value.
type Limits struct {
	// CPUTime is the CPU time (user+system) the run may use: each process
	// gets it as RLIMIT_CPU, and the supervisor kills the whole sandbox when
	// the sum over all its processes exceeds it.
	CPUTime time.Duration
	// Wall is the wall-clock time after which the whole sandbox is killed.
	Wall time.Duration
	// Memory is the memory the run may use: each process gets it as
	// RLIMIT_DATA, and the supervisor kills the sandbox when the processes'
	// resident memory together exceeds it.
	Memory int64
	// FileSize is the largest file a process may write (RLIMIT_FSIZE).
	FileSize int64
	// Output caps each of the captured stdout, stderr and report streams;
	// the rest is read and discarded and Result.Truncated is set.
	Output int64
	// Disk is the size of each of the sandbox's tmpfs mounts (/box, /tmp).
	Disk int64
	// Procs is the number of processes and threads the sandboxed user may
	// have at once (RLIMIT_NPROC, counted in the sandbox's user namespace).
	Procs int
	// OpenFiles is the number of open file descriptors per process
	// (RLIMIT_NOFILE).
	OpenFiles int
}

// DefaultLimits returns the limits used where neither the Cmd nor the
// Config sets one: 10 s of CPU, 30 s of wall time, 512 MiB of memory,
// 64 MiB per file, 1 MiB per output stream, 128 MiB per tmpfs, 64
// processes and 256 open files.
func DefaultLimits() Limits {
	return Limits{
		CPUTime:   10 * time.Second,
		Wall:      30 * time.Second,
		Memory:    512 << 20,
		FileSize:  64 << 20,
		Output:    1 << 20,
		Disk:      128 << 20,
		Procs:     64,
		OpenFiles: 256,
	}
}

// orDefault returns l with every zero field taken from d.
func (l Limits) orDefault(d Limits) Limits {
	if l.CPUTime <= 0 {
		l.CPUTime = d.CPUTime
	}
	if l.Wall <= 0 {
		l.Wall = d.Wall
	}
	if l.Memory <= 0 {
		l.Memory = d.Memory
	}
	if l.FileSize <= 0 {
		l.FileSize = d.FileSize
	}
	if l.Output <= 0 {
		l.Output = d.Output
	}
	if l.Disk <= 0 {
		l.Disk = d.Disk
	}
	if l.Procs <= 0 {
		l.Procs = d.Procs
	}
	if l.OpenFiles <= 0 {
		l.OpenFiles = d.OpenFiles
	}
	return l
}

// Cmd is one command to run in a sandbox.
type Cmd struct {
	// Path is the program: an absolute path, or a bare name looked up with
	// LookPath (system directories only, never $PATH). Symbolic links are
	// resolved on the host; the real file must be visible in the sandbox.
	Path string
	// Args are the arguments after the program name (argv[1:]); argv[0] is
	// Path as given.
	Args []string
	// Env is the complete environment. Nil means PATH, HOME=/box,
	// TMPDIR=/tmp and LANG=C.UTF-8.
	Env []string
	// Stdin is fed to the program's standard input, then closed.
	Stdin []byte
	// Files are written into the working directory (/box) before the run,
	// keyed by relative slash-separated path. A file whose content starts
	// with "#!" is made executable.
	Files map[string][]byte
	// ReadOnly lists extra host directories made visible read-only at the
	// same path, e.g. an interpreter's prefix (see InterpreterPrefix). Home
	// directories themselves, /tmp, /etc, /proc, /sys, /dev, /run and the
	// Config's Hidden paths can never be listed, nor their ancestors.
	ReadOnly []string
	// Limits bounds the run; zero fields take the Runner's defaults.
	Limits Limits
	// Report gives the program an extra pipe on file descriptor 3 whose
	// contents come back as Result.Report. Harnesses write their verdicts
	// there, so that whatever the submitted code prints cannot spoil them.
	Report bool
}

// Result is what a run did. ExitCode is -1 when the process was killed by a
// signal, which Signal then names (e.g. "SIGKILL").
type Result struct {
	ExitCode int
	Signal   string
	// Stdout, Stderr and Report hold at most Limits.Output bytes each.
	Stdout, Stderr, Report []byte
	// Truncated is set when any of the three streams was cut.
	Truncated bool
	// TimedOut: the wall-clock limit ended the run (no other limit had
	// ended it first).
	TimedOut bool
	// CPULimit: the program died of SIGXCPU or of the RLIMIT_CPU hard
	// limit, or the supervisor saw the sandbox's total CPU time pass
	// Limits.CPUTime and killed it.
	CPULimit bool
	// MemoryLimit: the supervisor saw the sandbox's resident memory pass
	// Limits.Memory and killed it. An allocation refused by RLIMIT_DATA is
	// not reported here: the kernel tells only the process (Python raises
	// MemoryError), and its exit is reported as it is.
	MemoryLimit bool
	// FileSizeLimit: the program died of SIGXFSZ. A program that ignores
	// SIGXFSZ (CPython does) sees EFBIG instead and exits as it chooses.
	FileSizeLimit bool
	// Wall is the time from handing the command to the sandbox to its end;
	// CPU is the user+system time of everything that ran in the sandbox.
	Wall, CPU time.Duration
	// Sandbox describes the layers that ran, as Runner.Sandbox does.
	Sandbox string
}

// Config configures a Runner.
type Config struct {
	// Mode is ModeNamespaces (the default) or ModeNone.
	Mode Mode
	// Limits are the defaults for Cmd.Limits' zero fields.
	Limits Limits
	// ReadOnly lists host directories made visible read-only in every
	// sandbox, under the same rules as Cmd.ReadOnly.
	ReadOnly []string
	// Hidden lists host paths that must never become visible, e.g. the
	// ledger's directory and key files; a ReadOnly entry equal to, inside
	// or containing one of them is refused.
	Hidden []string
	// UID and GID are the host ids the sandboxed user maps to when the
	// Runner runs as root (zero means 65534, nobody). An unprivileged
	// Runner can only map its own ids.
	UID, GID int
	// Pool is the number of sandboxes kept started and waiting for a
	// command, to hide their start-up cost (ModeNamespaces only).
	Pool int
	// Logger receives debug logs; nil means slog.Default().
	Logger *slog.Logger

	// noProc makes sandboxes as on a kernel that refuses a fresh /proc
	// (tests only).
	noProc bool
}

// workDir is the sandbox's private working directory, a tmpfs of its
// own (named after IOI isolate's /box, and distinct from any host path).
const workDir = "/box"

// systemPath is the PATH inside the sandbox and the only place LookPath
// searches.
const systemPath = "/usr/local/bin:/usr/bin:/bin"

// defaultEnv is the environment of a Cmd whose Env is nil.
func defaultEnv() []string {
	return []string{"PATH=" + systemPath, "HOME=" + workDir, "TMPDIR=/tmp", "LANG=C.UTF-8"}
}

// LookPath finds a program by name in the system directories
// (/usr/local/bin, /usr/bin, /bin) and returns its real path with symbolic
// links resolved. It ignores $PATH on purpose: there, `python3` may be a
// shim under a home directory that the sandbox does not show.
func LookPath(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty program name", ErrInvalid)
	}
	if strings.Contains(name, "/") {
		return realExecutable(name)
	}
	for _, dir := range filepath.SplitList(systemPath) {
		p, err := realExecutable(filepath.Join(dir, name))
		if err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %q not found in %s", ErrStart, name, systemPath)
}

// realExecutable resolves p's symbolic links and checks it is an executable
// regular file.
func realExecutable(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%w: program path %q is not absolute", ErrInvalid, p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrStart, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrStart, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%w: %s is not an executable file", ErrStart, real)
	}
	return real, nil
}

// InterpreterPrefix returns the installation prefix of an interpreter
// binary: the parent of its bin directory, after resolving symbolic links
// (/root/.pyenv/versions/3.12.4/bin/python3.12 gives
// /root/.pyenv/versions/3.12.4). Listing that prefix in Cmd.ReadOnly is the
// way to run an interpreter that lives outside /usr.
func InterpreterPrefix(path string) (string, error) {
	real, err := realExecutable(path)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(real)
	if filepath.Base(dir) != "bin" {
		return "", fmt.Errorf("%w: %s is not in a bin directory", ErrInvalid, real)
	}
	return filepath.Dir(dir), nil
}

// alwaysVisible returns the host trees every sandbox shows read-only.
func alwaysVisible() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"}
}

// neverVisible returns the host trees no ReadOnly entry may equal or
// contain.
func neverVisible() []string {
	return []string{"/root", "/home", "/tmp", "/var/tmp", "/etc", "/proc", "/sys", "/dev", "/run", "/boot", "/var/lib", "/var/run"}
}

// within reports whether p is dir or lies below it (both clean and absolute).
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// checkReadOnly validates one ReadOnly entry and returns it cleaned.
func checkReadOnly(field, p string, hidden []string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%w: %s: %q is not absolute", ErrInvalid, field, p)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrInvalid, field, err)
	}
	if real == "/" {
		return "", fmt.Errorf("%w: %s: %q is the root directory", ErrNotVisible, field, p)
	}
	for _, n := range neverVisible() {
		if within(n, real) {
			return "", fmt.Errorf("%w: %s: %q contains %s", ErrNotVisible, field, p, n)
		}
	}
	for _, n := range []string{"/tmp", "/var/tmp", "/etc", "/proc", "/sys", "/dev", "/run", "/var/run"} {
		if within(real, n) {
			return "", fmt.Errorf("%w: %s: %q is inside %s", ErrNotVisible, field, p, n)
		}
	}
	for _, h := range hidden {
		if within(real, h) || within(h, real) {
			return "", fmt.Errorf("%w: %s: %q overlaps hidden path %s", ErrNotVisible, field, p, h)
		}
	}
	return real, nil
}

// visible reports whether the host path p is shown in a sandbox that also
// shows the extra read-only directories ro.
func visible(p string, ro []string) bool {
	for _, d := range alwaysVisible() {
		if within(p, d) {
			return true
		}
	}
	for _, d := range ro {
		if within(p, d) {
			return true
		}
	}
	return false
}

// checkFileName validates a Cmd.Files key: a relative, clean,
// slash-separated path of at most 255 bytes per element and 1024 in all,
// with no "..", no NUL and no leading "/".
func checkFileName(name string) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case len(name) > 1024:
		return fmt.Errorf("name longer than 1024 bytes (%d)", len(name))
	case strings.HasPrefix(name, "/"):
		return errors.New("absolute path")
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("NUL byte at offset %d", strings.IndexByte(name, 0))
	case strings.ContainsRune(name, '\\'):
		return fmt.Errorf("backslash at offset %d", strings.IndexByte(name, '\\'))
	}
	for _, el := range strings.Split(name, "/") {
		switch {
		case el == "", el == ".", el == "..":
			return fmt.Errorf("path element %q not allowed", el)
		case len(el) > 255:
			return fmt.Errorf("path element longer than 255 bytes (%d)", len(el))
		}
	}
	return nil
}

// prepared is a validated Cmd.
type prepared struct {
	path     string // resolved program path
	argv     []string
	env      []string
	readOnly []string
	limits   Limits
}

// prepare validates c against the runner's configuration.
func prepare(c Cmd, cfg Config, ro []string) (prepared, error) {
	var p prepared
	if c.Path == "" {
		return p, fmt.Errorf("%w: Cmd.Path is empty", ErrInvalid)
	}
	for name := range c.Files {
		if err := checkFileName(name); err != nil {
			return p, fmt.Errorf("%w: Cmd.Files[%q]: %v", ErrInvalid, name, err)
		}
	}
	for i, a := range c.Args {
		if strings.ContainsRune(a, 0) {
			return p, fmt.Errorf("%w: Cmd.Args[%d] contains a NUL byte", ErrInvalid, i)
		}
	}
	for i, e := range c.Env {
		if strings.ContainsRune(e, 0) || !strings.Contains(e, "=") {
			return p, fmt.Errorf("%w: Cmd.Env[%d] is not KEY=value", ErrInvalid, i)
		}
	}
	p.readOnly = append(p.readOnly, ro...)
	for i, d := range c.ReadOnly {
		real, err := checkReadOnly(fmt.Sprintf("Cmd.ReadOnly[%d]", i), d, cfg.Hidden)
		if err != nil {
			return p, err
		}
		p.readOnly = append(p.readOnly, real)
	}
	path, err := LookPath(c.Path)
	if err != nil {
		return p, fmt.Errorf("Cmd.Path: %w", err)
	}
	if cfg.Mode == ModeNamespaces && !visible(path, p.readOnly) {
		return p, fmt.Errorf("%w: Cmd.Path %s resolves to %s, outside /usr and the ReadOnly directories", ErrNotVisible, c.Path, path)
	}
	p.path = path
	p.argv = append([]string{c.Path}, c.Args...)
	p.env = c.Env
	if p.env == nil {
		p.env = defaultEnv()
	}
	p.limits = c.Limits.orDefault(cfg.Limits.orDefault(DefaultLimits()))
	return p, nil
}
