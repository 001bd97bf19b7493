package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// newRootAt is where init mounts the tmpfs that becomes the sandbox's root.
// The mount lives in the sandbox's private mount namespace: the host's /tmp
// is neither read nor changed.
const newRootAt = "/tmp"

// rootMarker is an empty file at the top of every sandbox root; the exec
// stage refuses to run a command where it does not see it.
const rootMarker = "/.ledger-sandbox"

// superviseEvery is how often init sums the sandbox's CPU time and memory.
const superviseEvery = 50 * time.Millisecond

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on every
// Linux architecture Go supports).
const clockTicks = 100

// execStage is the started, still waiting exec stage.
type execStage struct {
	proc *os.Process
	spec *os.File // write end of the spec pipe
	errs *os.File // read end of the exec-error pipe
}

// initMain is PID 1 of a sandbox. It builds the sandbox, runs one command
// and supervises it, kills whatever is left and reports on the status pipe.
func initMain() int {
	unix.Umask(0o022)
	closeInherited(initFdReport)
	status := os.NewFile(initFdStatus, "status")
	enc := json.NewEncoder(status)
	fail := func(err error) int {
		_ = enc.Encode(statusMsg{Error: err.Error()})
		killAll()
		return 1
	}
	// Nothing in the sandbox may ptrace init or read its memory.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err))
	}
	// The host asks for an early end with SIGTERM. As PID 1 of its
	// namespace, init gets no signal it does not handle (SIGKILL from the
	// host aside), so handling it here is what lets it through.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, unix.SIGTERM)
	dec := json.NewDecoder(os.NewFile(initFdControl, "control"))
	var setup setupMsg
	if err := dec.Decode(&setup); err != nil {
		return fail(fmt.Errorf("read setup: %w", err))
	}
	report := os.NewFile(initFdReport, "report")
	feat, stage, err := buildSandbox(setup, report)
	if err != nil {
		return fail(err)
	}
	if err := enc.Encode(statusMsg{Ready: true, Features: &feat}); err != nil {
		return fail(err)
	}
	var cmd commandMsg
	if err := dec.Decode(&cmd); err != nil {
		// The host closed the control pipe: a probe, or a pooled sandbox
		// being discarded.
		killAll()
		if errors.Is(err, io.EOF) {
			return 0
		}
		return fail(fmt.Errorf("read command: %w", err))
	}
	// init keeps no copy of the command's standard input, output and
	// report pipe, so that the host sees them end when the command's
	// processes do. (Closed through their os.File, never by number: a
	// finalizer could otherwise close a reused descriptor later.)
	for _, f := range []*os.File{os.Stdin, os.Stdout, report} {
		_ = f.Close()
	}
	owner := 0
	if setup.RootMap {
		owner = sandboxUID
	}
	if err := writeFiles(workDir, cmd.Files, owner, owner); err != nil {
		return fail(err)
	}
	spec := cmd.Exec
	spec.Dir = workDir
	spec.Namespace = true
	spec.SetUID = setup.RootMap
	spec.UID, spec.GID = sandboxUID, sandboxGID
	spec.Seccomp = feat.Seccomp
	spec.Landlock = feat.Landlock
	st := supervise(stage, spec, cmd, feat.Proc, stop)
	if st.Error != "" {
		return fail(errors.New(st.Error))
	}
	if err := enc.Encode(st); err != nil {
		return 1
	}
	return 0
}

// closeInherited closes the descriptors above last that this process
// inherited without being given them: those its parent's parent left open
// across execve (os/exec passes them on). The Go runtime's own
// descriptors are close-on-exec and stay.
func closeInherited(last int) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= last {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			_ = unix.Close(fd)
		}
	}
}

// killAll kills every process of the PID namespace but init itself.
func killAll() {
	_ = unix.Kill(-1, unix.SIGKILL)
}

// buildSandbox mounts the sandbox's root, moves into it with pivot_root
// and starts the exec stage there.
func buildSandbox(s setupMsg, report *os.File) (features, *execStage, error) {
	var f features
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return f, nil, fmt.Errorf("make mounts private: %w", err)
	}
	nr := newRootAt
	if err := unix.Mount("tmpfs", nr, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=16m,nr_inodes=4096,mode=0755"); err != nil {
		return f, nil, fmt.Errorf("mount root tmpfs on %s: %w", nr, err)
	}
	for _, d := range alwaysVisible() {
		fi, err := os.Lstat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return f, nil, err
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return f, nil, err
			}
			if err := os.Symlink(target, nr+d); err != nil {
				return f, nil, err
			}
		case fi.IsDir():
			if err := os.Mkdir(nr+d, 0o755); err != nil {
				return f, nil, err
			}
			if err := bindReadOnly(d, nr+d); err != nil {
				return f, nil, err
			}
		}
	}
	for _, d := range s.ReadOnly {
		if err := bindExtra(d, nr); err != nil {
			return f, nil, err
		}
	}
	if err := makeEtc(nr); err != nil {
		return f, nil, err
	}
	if err := makeDev(nr); err != nil {
		return f, nil, err
	}
	if err := os.Mkdir(nr+"/proc", 0o555); err != nil {
		return f, nil, err
	}
	// A fresh proc of the sandbox's PID namespace. Kernels that refuse it
	// (a host /proc with masked entries, e.g. inside a container) leave the
	// sandbox without /proc and without the supervisor.
	mountErr := errors.New("skipped (tests)")
	if !s.NoProc {
		mountErr = unix.Mount("proc", nr+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	}
	if mountErr == nil {
		f.Proc = true
		if err := bindReadOnly(nr+"/proc/sys", nr+"/proc/sys"); err != nil {
			return f, nil, err
		}
	}
	owner := 0
	if s.RootMap {
		owner = sandboxUID
	}
	for _, m := range []struct {
		dir, opts string
	}{
		{"/tmp", fmt.Sprintf("size=%d,nr_inodes=16384,mode=1777", s.Disk)},
		{workDir, fmt.Sprintf("size=%d,nr_inodes=16384,mode=0755,uid=%d,gid=%d", s.Disk, owner, owner)},
	} {
		if err := os.Mkdir(nr+m.dir, 0o755); err != nil {
			return f, nil, err
		}
		if err := unix.Mount("tmpfs", nr+m.dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, m.opts); err != nil {
			return f, nil, fmt.Errorf("mount tmpfs on %s: %w", m.dir, err)
		}
	}
	if err := os.WriteFile(nr+rootMarker, nil, 0o444); err != nil {
		return f, nil, err
	}
	if err := unix.Sethostname([]byte("sandbox")); err != nil {
		return f, nil, fmt.Errorf("sethostname: %w", err)
	}
	f.Loopback = loopbackUp() == nil
	f.Seccomp = seccompAvailable()
	f.Landlock = landlockABI()
	if !f.Proc && !s.RootMap {
		// The nested user namespace's id maps are written through /proc.
		return f, nil, errors.New("no /proc for the sandbox's PID namespace: cannot map the sandbox user")
	}
	if !f.Proc {
		// Start the exec stage through the host's /proc while it is still
		// there; pivot_root moves it into the new root with init.
		stage, err := startExecStage(s.RootMap, report)
		if err != nil {
			return f, nil, err
		}
		if err := enterRoot(nr); err != nil {
			_ = stage.proc.Kill()
			return f, nil, err
		}
		return f, stage, nil
	}
	// The exec stage starts inside the new root, from the sandbox's own
	// /proc (whose PIDs are the ones init sees).
	if err := enterRoot(nr); err != nil {
		return f, nil, err
	}
	stage, err := startExecStage(s.RootMap, report)
	return f, stage, err
}

// enterRoot makes nr the root of the mount namespace (which moves the root
// of every process of the namespace), detaches the host's file system and
// makes the new root read-only.
func enterRoot(nr string) error {
	old := nr + "/.old"
	if err := os.Mkdir(old, 0o700); err != nil {
		return err
	}
	if err := unix.PivotRoot(nr, old); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Unmount("/.old", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	if err := os.Remove("/.old"); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("remount root read-only: %w", err)
	}
	return nil
}

// bindReadOnly bind-mounts src (with its submounts) on dst, read-only,
// nosuid and nodev.
func bindReadOnly(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	err := unix.MountSetattr(unix.AT_FDCWD, dst, unix.AT_RECURSIVE, &attr)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("make %s read-only: %w", dst, err)
	}
	// Before Linux 5.12: drop the submounts, which a single remount could
	// not make read-only, and remount the top one keeping its locked flags.
	if err := unix.Unmount(dst, unix.MNT_DETACH); err != nil {
		return err
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(src, &st); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV)
	for _, fl := range [][2]int64{
		{unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NOATIME, unix.MS_NOATIME},
		{unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if st.Flags&fl[0] != 0 {
			flags |= uintptr(fl[1])
		}
	}
	if err := unix.Mount("", dst, "", flags, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", dst, err)
	}
	return nil
}

// bindExtra makes the host path d visible read-only at the same place under
// nr, unless a system tree already shows it.
func bindExtra(d, nr string) error {
	if visible(d, nil) {
		return nil
	}
	fi, err := os.Stat(d)
	if err != nil {
		return err
	}
	dst := nr + d
	if fi.IsDir() {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, nil, 0o444); err != nil {
			return err
		}
	}
	return bindReadOnly(d, dst)
}

// makeEtc writes the few /etc files programs look for: synthetic user,
// group and host tables, and the host's dynamic loader cache, time zone
// and alternatives links.
func makeEtc(nr string) error {
	etc := nr + "/etc"
	if err := os.Mkdir(etc, 0o755); err != nil {
		return err
	}
	files := map[string]string{
		"passwd": "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n" +
			"sandbox:x:1000:1000:sandbox:/box:/bin/sh\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":         "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n",
		"hosts":         "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"hostname":      "sandbox\n",
		"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\n",
		"resolv.conf":   "",
	}
	for name, content := range files {
		if err := os.WriteFile(etc+"/"+name, []byte(content), 0o644); err != nil {
			return err
		}
	}
	if data, err := os.ReadFile("/etc/ld.so.cache"); err == nil {
		if err := os.WriteFile(etc+"/ld.so.cache", data, 0o644); err != nil {
			return err
		}
	}
	if target, err := os.Readlink("/etc/localtime"); err == nil {
		if err := os.Symlink(target, etc+"/localtime"); err != nil {
			return err
		}
	}
	if fi, err := os.Stat("/etc/alternatives"); err == nil && fi.IsDir() {
		if err := os.Mkdir(etc+"/alternatives", 0o755); err != nil {
			return err
		}
		return bindReadOnly("/etc/alternatives", etc+"/alternatives")
	}
	return nil
}

// makeDev binds the harmless host devices and links the usual names.
func makeDev(nr string) error {
	dev := nr + "/dev"
	if err := os.Mkdir(dev, 0o755); err != nil {
		return err
	}
	for _, n := range []string{"null", "zero", "full", "random", "urandom"} {
		if err := os.WriteFile(dev+"/"+n, nil, 0o444); err != nil {
			return err
		}
		if err := unix.Mount("/dev/"+n, dev+"/"+n, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", n, err)
		}
	}
	for name, target := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
		"stderr": "/proc/self/fd/2", "shm": "/tmp",
	} {
		if err := os.Symlink(target, dev+"/"+name); err != nil {
			return err
		}
	}
	return nil
}

// loopbackUp brings up the namespace's own loopback interface, which
// reaches nothing outside the sandbox.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// startExecStage starts the exec stage, which waits for its spec. With
// rootMap it starts as namespace root and changes to the sandbox user
// itself; otherwise it gets a nested user namespace in which it is the
// sandbox user from the start.
func startExecStage(rootMap bool, report *os.File) (*execStage, error) {
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	sys := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if !rootMap {
		sys.Cloneflags = syscall.CLONE_NEWUSER
		sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: sandboxUID, HostID: 0, Size: 1}}
		sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: sandboxGID, HostID: 0, Size: 1}}
	}
	p, err := os.StartProcess("/proc/self/exe", []string{stageExec}, &os.ProcAttr{
		Dir:   "/",
		Env:   stageEnviron(stageExec),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, specR, errW, report},
		Sys:   sys,
	})
	_ = specR.Close()
	_ = errW.Close()
	if err != nil {
		_ = specW.Close()
		_ = errR.Close()
		return nil, fmt.Errorf("start exec stage: %w", err)
	}
	return &execStage{proc: p, spec: specW, errs: errR}, nil
}

// writeFiles writes the command's files under dir, owned by uid and gid.
func writeFiles(dir string, files map[string][]byte, uid, gid int) error {
	for name, data := range files {
		if err := checkFileName(name); err != nil {
			return fmt.Errorf("file %q: %w", name, err)
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("file %q: %w", name, err)
		}
		mode := fs.FileMode(0o644)
		if bytes.HasPrefix(data, []byte("#!")) {
			mode = 0o755
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			return fmt.Errorf("file %q: %w", name, err)
		}
	}
	// Hand the whole tree to the sandbox user.
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// supervise hands the spec to the exec stage, waits for the command and
// enforces the sandbox-wide CPU and memory totals; a signal on stop kills
// the command. It returns the Done status, or one with Error set.
func supervise(stage *execStage, spec execSpec, cmd commandMsg, proc bool, stop <-chan os.Signal) statusMsg {
	targetDone := make(chan unix.WaitStatus, 1)
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, 0, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return // ECHILD: nothing left
			}
			if pid == stage.proc.Pid {
				targetDone <- ws
			}
		}
	}()
	finish := func(st statusMsg) statusMsg {
		killAll()
		<-reaped
		return st
	}
	err := json.NewEncoder(stage.spec).Encode(spec)
	_ = stage.spec.Close()
	if err != nil {
		return finish(statusMsg{Error: fmt.Sprintf("send spec: %v", err)})
	}
	// The exec-error pipe is close-on-exec: EOF without a message means
	// execve succeeded.
	msg, _ := io.ReadAll(io.LimitReader(stage.errs, 4096))
	_ = stage.errs.Close()
	if len(msg) > 0 {
		return finish(statusMsg{Error: "exec stage: " + string(msg)})
	}
	var st statusMsg
	tick := time.NewTicker(superviseEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			// The host's wall clock or context ended the run: kill
			// everything and reap it, so that its CPU time is counted.
			killAll()
		case ws := <-targetDone:
			st.Done = true
			switch {
			case ws.Exited():
				st.Exited, st.ExitCode = true, ws.ExitStatus()
			case ws.Signaled():
				st.ExitCode, st.Signal = -1, int(ws.Signal())
			}
			return finish(st)
		case <-tick.C:
			if !proc || st.CPULimit || st.MemoryLimit {
				continue
			}
			cpu, mem := usage(cmd.Memory)
			if cpu > time.Duration(cmd.CPUTime) {
				st.CPULimit = true
				killAll()
			} else if mem > cmd.Memory {
				st.MemoryLimit = true
				killAll()
			}
		}
	}
}

// usage sums the CPU time of everything that ran in the sandbox (live
// processes and the children init reaped) and the memory of its live
// processes. Resident sizes count shared pages once per process; only when
// their sum passes memLimit are the proportional sizes (Pss) read, which
// share pages out fairly but cost a walk of each process's page tables.
func usage(memLimit int64) (time.Duration, int64) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0
	}
	var ticks, rss int64
	var pids []string
	for _, e := range ents {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		f, ok := procStat(name)
		if !ok {
			continue
		}
		if name == "1" {
			ticks += f.cutime + f.cstime
			continue
		}
		ticks += f.utime + f.stime + f.cutime + f.cstime
		rss += f.rss
		pids = append(pids, name)
	}
	cpu := time.Duration(ticks) * time.Second / clockTicks
	mem := rss * int64(os.Getpagesize())
	if mem > memLimit {
		mem = 0
		for _, pid := range pids {
			mem += pss(pid)
		}
	}
	return cpu, mem
}

// pss returns the proportional set size of a process in bytes, 0 when it
// is gone.
func pss(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "Pss:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

// statFields are the fields of /proc/<pid>/stat the supervisor uses.
type statFields struct {
	utime, stime, cutime, cstime, rss int64
}

// procStat reads /proc/<pid>/stat.
func procStat(pid string) (statFields, bool) {
	var f statFields
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return f, false
	}
	return parseStat(string(b))
}

// parseStat parses the text of /proc/<pid>/stat.
func parseStat(s string) (statFields, bool) {
	var f statFields
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return f, false
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); utime is field 14, rss field 24.
	if len(fields) < 22 {
		return f, false
	}
	vals := make([]int64, 0, 5)
	for _, idx := range []int{11, 12, 13, 14, 21} {
		v, err := strconv.ParseInt(fields[idx], 10, 64)
		if err != nil || v < 0 {
			return f, false
		}
		vals = append(vals, v)
	}
	f.utime, f.stime, f.cutime, f.cstime, f.rss = vals[0], vals[1], vals[2], vals[3], vals[4]
	return f, true
}
