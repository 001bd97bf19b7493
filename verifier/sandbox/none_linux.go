package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// runNone runs the command without isolation (ModeNone): a plain child in
// its own process group, in a fresh temporary directory, with the rlimits,
// no_new_privs and the wall-clock timeout; as root, under Config.UID/GID.
func (r *Runner) runNone(ctx context.Context, c Cmd, p prepared) (Result, error) {
	res := Result{Sandbox: r.desc, ExitCode: -1}
	dir, err := os.MkdirTemp("", "ledger-sandbox-none-")
	if err != nil {
		return res, fmt.Errorf("sandbox: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }() // best effort, like any temporary directory
	owner, group := os.Getuid(), os.Getgid()
	if r.rootMap {
		owner, group = r.uid, r.gid
	}
	if err := writeFiles(dir, c.Files, owner, group); err != nil {
		return res, fmt.Errorf("sandbox: %w", err)
	}
	env := p.env
	if c.Env == nil {
		env = []string{"PATH=" + systemPath, "HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8"}
	}
	var files []*os.File
	var pipeErr error
	pipe := func() (*os.File, *os.File) {
		rd, wr, err := os.Pipe()
		if err != nil {
			pipeErr = err
			return nil, nil
		}
		files = append(files, rd, wr)
		return rd, wr
	}
	specR, specW := pipe()
	errR, errW := pipe()
	repR, repW := pipe()
	inR, inW := pipe()
	outR, outW := pipe()
	stderrR, stderrW := pipe()
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	if pipeErr != nil {
		return res, fmt.Errorf("sandbox: pipes: %w", pipeErr)
	}
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{stageExec},
		Env:         stageEnviron(stageExec),
		Dir:         dir,
		Stdin:       inR,
		Stdout:      outW,
		Stderr:      stderrW,
		ExtraFiles:  []*os.File{specR, errW, repW},
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("sandbox: start: %w", err)
	}
	for _, f := range []*os.File{specR, errW, repW, inR, outW, stderrW} {
		_ = f.Close()
	}
	killGroup := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	spec := execSpec{
		Path: p.path, Argv: p.argv, Env: env, Dir: dir, Limits: p.limits, Report: c.Report,
		SetUID: r.rootMap, UID: r.uid, GID: r.gid,
	}
	start := time.Now()
	err = json.NewEncoder(specW).Encode(spec)
	_ = specW.Close()
	msg, _ := io.ReadAll(io.LimitReader(errR, 4096))
	if err != nil || len(msg) > 0 {
		killGroup()
		_ = cmd.Wait()
		if len(msg) == 0 {
			msg = []byte(err.Error())
		}
		return res, fmt.Errorf("%w %s: %s", ErrStart, p.path, msg)
	}
	go func() {
		_, _ = inW.Write(c.Stdin)
		_ = inW.Close()
	}()
	out := capture(p.limits.Output, outR, stderrR, repR)
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	timer := time.NewTimer(p.limits.Wall)
	defer timer.Stop()
	var timedOut, canceled bool
	select {
	case <-exited:
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		canceled = true
	}
	killGroup()
	<-exited
	res.Wall = time.Since(start)
	out.wait()
	out.fill(&res)
	res.CPU = rusageCPU(cmd.ProcessState)
	switch {
	case canceled:
		res.Signal = "SIGKILL"
		return res, fmt.Errorf("sandbox: run ended early: %w", ctx.Err())
	case timedOut:
		res.Signal = "SIGKILL"
		res.TimedOut = true
		return res, nil
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ws.Exited():
		res.ExitCode = ws.ExitStatus()
	case ws.Signaled():
		res.Signal = unix.SignalName(ws.Signal())
		res.CPULimit = ws.Signal() == syscall.SIGXCPU || (ws.Signal() == syscall.SIGKILL && res.CPU >= p.limits.CPUTime)
		res.FileSizeLimit = ws.Signal() == syscall.SIGXFSZ
	}
	return res, nil
}
