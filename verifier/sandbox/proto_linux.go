package sandbox

import (
	"os"
)

// The sandbox is three processes deep:
//
//	host (Runner.Run) --exec /proc/self/exe--> init (PID 1 of the new namespaces)
//	init --exec /proc/self/exe--> exec stage --execve--> the command
//
// The host talks to init over two pipes (control: JSON setupMsg then
// commandMsg; status: JSON statusMsg lines), and init to the exec stage over
// two more (spec: JSON execSpec; exec error: text, empty when execve
// succeeded). The re-executed stages are recognised by an environment marker
// and argv[0] together.
const (
	stageEnv  = "_LEDGER_SANDBOX_STAGE"
	stageInit = "ledger-sandbox-init"
	stageExec = "ledger-sandbox-exec"
)

// File descriptors of the init stage.
const (
	initFdControl = 3 // read: setupMsg, then commandMsg
	initFdStatus  = 4 // write: statusMsg lines
	initFdReport  = 5 // write end of the report pipe, handed to the command
)

// File descriptors of the exec stage.
const (
	execFdSpec   = 3 // read: execSpec
	execFdErr    = 4 // write: why execve failed (close-on-exec)
	execFdReport = 5 // the report pipe; moved to fd 3 when Cmd.Report
)

// The sandboxed user inside the user namespace.
const (
	sandboxUID = 1000
	sandboxGID = 1000
)

// setupMsg tells init how to build the sandbox.
type setupMsg struct {
	// RootMap: the host runs as root and mapped sandboxUID to a host id, so
	// the exec stage starts as namespace root and changes to sandboxUID
	// itself. Otherwise only one id is mapped and the exec stage runs in a
	// nested user namespace as sandboxUID.
	RootMap  bool
	ReadOnly []string
	Disk     int64
	// NoProc builds the sandbox as on a kernel that refuses a fresh /proc
	// (tests only).
	NoProc bool
}

// commandMsg is the command init runs once the sandbox is built.
type commandMsg struct {
	Files map[string][]byte
	// CPUTime (ns) and Memory (bytes) are the supervisor's totals.
	CPUTime int64
	Memory  int64
	Exec    execSpec
}

// execSpec is what the exec stage applies before execve.
type execSpec struct {
	Path      string
	Argv      []string
	Env       []string
	Dir       string
	Limits    Limits
	Report    bool
	SetUID    bool // change to UID and GID before execve
	UID, GID  int
	Namespace bool // inside the sandbox: check the root, no_new_privs, seccomp, landlock
	Seccomp   bool
	Landlock  int // Landlock ABI to use, 0 for none
}

// features are the optional layers init found working.
type features struct {
	Proc     bool
	Loopback bool
	Seccomp  bool
	Landlock int
}

// statusMsg is one line init writes on the status pipe.
type statusMsg struct {
	Ready    bool      `json:",omitempty"`
	Done     bool      `json:",omitempty"`
	Error    string    `json:",omitempty"`
	Features *features `json:",omitempty"`
	// Done fields.
	Exited      bool
	ExitCode    int
	Signal      int
	CPULimit    bool
	MemoryLimit bool
}

// stageEnviron is the whole environment of a re-executed stage: the
// marker, and a GODEBUG that keeps the Go runtime from opening the host's
// cgroup files to size GOMAXPROCS (it would hold them open for its whole
// life, inside the sandbox).
func stageEnviron(stage string) []string {
	return []string{stageEnv + "=" + stage, "GODEBUG=containermaxprocs=0,updatemaxprocs=0"}
}

// isStage reports whether this process is the re-executed stage name.
func isStage(name string) bool {
	return len(os.Args) > 0 && os.Args[0] == name && os.Getenv(stageEnv) == name
}

func init() {
	// The sandbox's own stages never return to the program's main.
	switch {
	case isStage(stageInit):
		os.Exit(initMain())
	case isStage(stageExec):
		os.Exit(execMain())
	}
}
