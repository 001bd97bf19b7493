package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// setupTimeout bounds the building of one sandbox.
const setupTimeout = 30 * time.Second

// drainGrace is how long a run waits for its output pipes to end once its
// sandbox is gone (they end at once unless something outside holds them).
const drainGrace = 2 * time.Second

// stopGrace is how long init gets to kill and reap a command the host
// stops before the host kills init itself.
const stopGrace = 2 * time.Second

// nobody is the default host id of the sandbox user for a root Runner.
const nobody = 65534

// Runner runs commands in sandboxes. It is safe for concurrent use.
type Runner struct {
	cfg      Config
	log      *slog.Logger
	ro       []string // Config.ReadOnly, validated
	rootMap  bool     // running as root: map sandboxUID to uid/gid
	uid, gid int
	feat     features
	desc     string
	pool     *pool // nil without Config.Pool
}

// New returns a Runner. In ModeNamespaces it starts one sandbox to check
// that the kernel allows it and which optional layers work; when the kernel
// refuses, the error wraps ErrUnavailable and says why.
func New(cfg Config) (*Runner, error) {
	r := &Runner{cfg: cfg, log: cfg.Logger, uid: cfg.UID, gid: cfg.GID}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.uid == 0 {
		r.uid = nobody
	}
	if r.gid == 0 {
		r.gid = nobody
	}
	switch {
	case cfg.Mode != ModeNamespaces && cfg.Mode != ModeNone:
		return nil, fmt.Errorf("%w: Config.Mode %d", ErrInvalid, cfg.Mode)
	case cfg.Pool < 0:
		return nil, fmt.Errorf("%w: Config.Pool %d is negative", ErrInvalid, cfg.Pool)
	case r.uid < 0 || r.gid < 0:
		return nil, fmt.Errorf("%w: Config.UID/GID negative", ErrInvalid)
	}
	hidden := make([]string, 0, len(cfg.Hidden))
	for i, h := range cfg.Hidden {
		if !filepath.IsAbs(h) {
			return nil, fmt.Errorf("%w: Config.Hidden[%d] %q is not absolute", ErrInvalid, i, h)
		}
		h = filepath.Clean(h)
		if real, err := filepath.EvalSymlinks(h); err == nil {
			h = real
		}
		hidden = append(hidden, h)
	}
	r.cfg.Hidden = hidden
	for i, d := range cfg.ReadOnly {
		real, err := checkReadOnly(fmt.Sprintf("Config.ReadOnly[%d]", i), d, hidden)
		if err != nil {
			return nil, err
		}
		r.ro = append(r.ro, real)
	}
	r.rootMap = os.Geteuid() == 0
	if cfg.Mode == ModeNone {
		r.desc = "none"
		return r, nil
	}
	disk := cfg.Limits.orDefault(DefaultLimits()).Disk
	inst, err := r.start(context.Background(), r.ro, disk)
	if err != nil {
		return nil, fmt.Errorf("%w: %w%s", ErrUnavailable, err, kernelHint())
	}
	r.feat = inst.feat
	inst.discard()
	r.desc = describe(r.feat)
	if cfg.Pool > 0 {
		r.pool = newPool(r, cfg.Pool, disk)
	}
	return r, nil
}

// Available reports whether sandboxes can run here: nil, or an error
// wrapping ErrUnavailable that says why not.
func Available() error {
	r, err := New(Config{})
	if err != nil {
		return err
	}
	return r.Close()
}

// kernelHint names the kernel settings that commonly refuse user
// namespaces.
func kernelHint() string {
	var hints []string
	for _, k := range []struct{ file, bad, say string }{
		{"/proc/sys/kernel/unprivileged_userns_clone", "0", "kernel.unprivileged_userns_clone=0"},
		{"/proc/sys/user/max_user_namespaces", "0", "user.max_user_namespaces=0"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1", "kernel.apparmor_restrict_unprivileged_userns=1"},
	} {
		if b, err := os.ReadFile(k.file); err == nil && strings.TrimSpace(string(b)) == k.bad {
			hints = append(hints, k.say)
		}
	}
	if len(hints) == 0 {
		return ""
	}
	return " (" + strings.Join(hints, ", ") + ")"
}

// describe names the layers a sandbox has, for receipts.
func describe(f features) string {
	s := "linux-namespaces(user,pid,net,mount,ipc,uts,cgroup)+pivot_root+rlimits+no_new_privs"
	if f.Proc {
		s += "+supervisor"
	}
	if f.Seccomp {
		s += "+seccomp"
	}
	if f.Landlock > 0 {
		s += fmt.Sprintf("+landlock(abi%d)", f.Landlock)
	}
	return s
}

// Sandbox describes the sandbox this Runner runs commands in, e.g.
// "linux-namespaces(user,pid,net,mount,ipc,uts,cgroup)+pivot_root+rlimits+
// no_new_privs+supervisor+seccomp+landlock(abi7)", or "none".
func (r *Runner) Sandbox() string { return r.desc }

// Mode returns the Runner's mode.
func (r *Runner) Mode() Mode { return r.cfg.Mode }

// Close stops the pooled sandboxes, if any. A closed Runner still runs
// commands, without a pool.
func (r *Runner) Close() error {
	if r.pool != nil {
		r.pool.close()
	}
	return nil
}

// Run runs c in a new sandbox and returns what it did. A run that hits a
// limit is not an error: the Result says which limit ended it. Errors are
// for commands that could not start (ErrInvalid, ErrNotVisible, ErrStart),
// sandboxes that could not be built, and ctx ending, which kills the
// sandbox (the partial Result is returned with the error).
func (r *Runner) Run(ctx context.Context, c Cmd) (Result, error) {
	p, err := prepare(c, r.cfg, r.ro)
	if err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("sandbox: not started: %w", err)
	}
	if r.cfg.Mode == ModeNone {
		return r.runNone(ctx, c, p)
	}
	var inst *instance
	if r.pool != nil && slices.Equal(p.readOnly, r.ro) && p.limits.Disk == r.pool.disk {
		inst = r.pool.get()
	}
	if inst == nil {
		if inst, err = r.start(ctx, p.readOnly, p.limits.Disk); err != nil {
			return Result{}, err
		}
	}
	return r.runIn(ctx, inst, c, p)
}

// instance is one started sandbox: init is running and, once ready, waits
// for a command.
type instance struct {
	cmd            *exec.Cmd
	ctrl           *os.File // control pipe, write end
	stdin          *os.File // write end
	stdout, stderr *os.File // read ends
	report         *os.File // read end
	status         chan statusMsg
	exited         chan struct{}
	feat           features
}

// kill kills init, and with it the whole PID namespace.
func (in *instance) kill() {
	_ = in.cmd.Process.Kill()
}

// stop asks init to kill the command and everything it started, and waits
// for init to end; after stopGrace it kills init.
func (in *instance) stop() {
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.exited:
	case <-time.After(stopGrace):
		in.kill()
		<-in.exited
	}
}

// discard ends an unused sandbox and waits for it.
func (in *instance) discard() {
	_ = in.ctrl.Close()
	select {
	case <-in.exited:
	case <-time.After(setupTimeout):
		in.kill()
		<-in.exited
	}
	in.closeFiles()
}

func (in *instance) closeFiles() {
	for _, f := range []*os.File{in.ctrl, in.stdin, in.stdout, in.stderr, in.report} {
		_ = f.Close()
	}
}

// start starts a sandbox and waits until it is ready for a command.
func (r *Runner) start(ctx context.Context, ro []string, disk int64) (*instance, error) {
	var parent, child []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			_ = f.Close()
		}
	}
	var pipeErr error
	pipe := func() (*os.File, *os.File) {
		rd, wr, err := os.Pipe()
		if err != nil {
			pipeErr = err
			return nil, nil
		}
		return rd, wr
	}
	ctrlR, ctrlW := pipe()
	statR, statW := pipe()
	inR, inW := pipe()
	outR, outW := pipe()
	errR, errW := pipe()
	repR, repW := pipe()
	parent = []*os.File{ctrlW, statR, inW, outR, errR, repR}
	child = []*os.File{ctrlR, statW, inR, outW, errW, repW}
	if pipeErr != nil {
		for _, f := range append(parent, child...) {
			if f != nil {
				_ = f.Close()
			}
		}
		return nil, fmt.Errorf("sandbox: pipes: %w", pipeErr)
	}
	sys := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET |
			syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP,
		Pdeathsig: syscall.SIGKILL,
	}
	if r.rootMap {
		// Namespace root is host root for init's set-up only; the command
		// runs as sandboxUID, which is an unprivileged host id.
		sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: sandboxUID, HostID: r.uid, Size: 1}}
		sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: sandboxGID, HostID: r.gid, Size: 1}}
		sys.GidMappingsEnableSetgroups = true
	} else {
		sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{stageInit},
		Env:         stageEnviron(stageInit),
		Dir:         "/",
		Stdin:       inR,
		Stdout:      outW,
		Stderr:      errW,
		ExtraFiles:  []*os.File{ctrlR, statW, repW},
		SysProcAttr: sys,
	}
	err := cmd.Start()
	closeAll(child)
	if err != nil {
		closeAll(parent)
		return nil, fmt.Errorf("sandbox: start init: %w", err)
	}
	in := &instance{
		cmd: cmd, ctrl: ctrlW, stdin: inW, stdout: outR, stderr: errR, report: repR,
		status: make(chan statusMsg, 4), exited: make(chan struct{}),
	}
	go func() {
		defer close(in.status)
		defer func() { _ = statR.Close() }()
		dec := json.NewDecoder(statR)
		for {
			var m statusMsg
			if err := dec.Decode(&m); err != nil {
				return
			}
			in.status <- m
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(in.exited)
	}()
	fail := func(err error) (*instance, error) {
		in.kill()
		<-in.exited
		in.closeFiles()
		return nil, err
	}
	if err := json.NewEncoder(ctrlW).Encode(setupMsg{RootMap: r.rootMap, ReadOnly: ro, Disk: disk, NoProc: r.cfg.noProc}); err != nil {
		return fail(fmt.Errorf("sandbox: send setup: %w", err))
	}
	timer := time.NewTimer(setupTimeout)
	defer timer.Stop()
	select {
	case m, ok := <-in.status:
		switch {
		case !ok:
			<-in.exited
			return fail(fmt.Errorf("sandbox: init exited during setup (%v)", cmd.ProcessState))
		case m.Error != "":
			return fail(fmt.Errorf("sandbox: setup: %s", m.Error))
		case !m.Ready || m.Features == nil:
			return fail(errors.New("sandbox: setup: unexpected status"))
		}
		in.feat = *m.Features
		return in, nil
	case <-timer.C:
		return fail(errors.New("sandbox: setup timed out"))
	case <-ctx.Done():
		return fail(fmt.Errorf("sandbox: setup: %w", ctx.Err()))
	}
}

// capped keeps the first max bytes written to it and counts the rest.
type capped struct {
	max       int64
	buf       []byte
	truncated bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - int64(len(c.buf))
	if int64(len(p)) <= room {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	c.truncated = true
	if room > 0 {
		c.buf = append(c.buf, p[:room]...)
	}
	return len(p), nil
}

// outputs captures the three output streams of a run.
type outputs struct {
	wg                     sync.WaitGroup
	files                  []*os.File
	stdout, stderr, report capped
}

// capture starts reading stdout, stderr and report, keeping max bytes of
// each.
func capture(max int64, stdout, stderr, report *os.File) *outputs {
	o := &outputs{files: []*os.File{stdout, stderr, report}}
	for i, c := range []*capped{&o.stdout, &o.stderr, &o.report} {
		c.max = max
		o.wg.Add(1)
		go func(f *os.File, c *capped) {
			defer o.wg.Done()
			_, _ = io.Copy(c, f)
		}(o.files[i], c)
	}
	return o
}

// wait waits for the streams to end, giving up after drainGrace.
func (o *outputs) wait() {
	done := make(chan struct{})
	go func() {
		o.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(drainGrace):
		for _, f := range o.files {
			_ = f.SetReadDeadline(time.Now())
		}
		<-done
	}
}

// fill copies the captured streams into res.
func (o *outputs) fill(res *Result) {
	res.Stdout, res.Stderr, res.Report = o.stdout.buf, o.stderr.buf, o.report.buf
	res.Truncated = o.stdout.truncated || o.stderr.truncated || o.report.truncated
}

// rusageCPU returns the user+system time of a waited-for process and its
// waited-for descendants.
func rusageCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runIn runs the command in a started sandbox.
func (r *Runner) runIn(ctx context.Context, in *instance, c Cmd, p prepared) (Result, error) {
	defer in.closeFiles()
	res := Result{Sandbox: r.desc, ExitCode: -1}
	msg := commandMsg{
		Files:   c.Files,
		CPUTime: int64(p.limits.CPUTime),
		Memory:  p.limits.Memory,
		Exec:    execSpec{Path: p.path, Argv: p.argv, Env: p.env, Limits: p.limits, Report: c.Report},
	}
	start := time.Now()
	go func() {
		_ = json.NewEncoder(in.ctrl).Encode(msg)
		_ = in.ctrl.Close()
	}()
	go func() {
		_, _ = in.stdin.Write(c.Stdin)
		_ = in.stdin.Close()
	}()
	out := capture(p.limits.Output, in.stdout, in.stderr, in.report)
	timer := time.NewTimer(p.limits.Wall)
	defer timer.Stop()
	var timedOut, canceled bool
	select {
	case <-in.exited:
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		canceled = true
	}
	if timedOut || canceled {
		in.stop()
	}
	res.Wall = time.Since(start)
	out.wait()
	out.fill(&res)
	res.CPU = rusageCPU(in.cmd.ProcessState)
	var done *statusMsg
	var failure string
	for m := range in.status {
		switch {
		case m.Done:
			done = &m
		case m.Error != "":
			failure = m.Error
		}
	}
	var sig syscall.Signal
	if done != nil {
		res.ExitCode = done.ExitCode
		if !done.Exited {
			sig = syscall.Signal(done.Signal)
			res.Signal = unix.SignalName(sig)
		}
		res.MemoryLimit = done.MemoryLimit
		res.CPULimit = done.CPULimit || sig == syscall.SIGXCPU ||
			(sig == syscall.SIGKILL && !timedOut && !canceled && !done.MemoryLimit && res.CPU >= p.limits.CPUTime)
		res.FileSizeLimit = sig == syscall.SIGXFSZ
	}
	switch {
	case canceled:
		if done == nil {
			res.Signal = "SIGKILL"
		}
		return res, fmt.Errorf("sandbox: run ended early: %w", ctx.Err())
	case timedOut:
		if done == nil {
			res.Signal = "SIGKILL"
		}
		// The command may have ended, or the supervisor killed it for a
		// limit, just before the wall clock ran out: then that ended the
		// run.
		res.TimedOut = (done == nil || sig == syscall.SIGKILL) && !res.CPULimit && !res.MemoryLimit
		return res, nil
	case done != nil:
		return res, nil
	case failure != "":
		return res, fmt.Errorf("%w %s: %s", ErrStart, p.path, failure)
	default:
		return res, fmt.Errorf("sandbox: init ended without a status (%v)", in.cmd.ProcessState)
	}
}
