// Package sandbox runs untrusted commands (submitted Python tests, shell or
// Node.js programs, benchmark commands) in a Linux sandbox, as a library.
//
// A sandboxed run gets new user, PID, network, mount, IPC, UTS and cgroup
// namespaces; a minimal read-only root (pivot_root into a tmpfs holding /usr,
// the /bin and /lib links, a few /etc files, a handful of /dev nodes, a /proc
// of its own PID namespace, a private /tmp and the working directory /box);
// rlimits and a supervisor that bound CPU time, memory, processes, file size
// and open files; a wall-clock timeout; an unprivileged user with no
// capabilities and no_new_privs; and, where the kernel has them, a seccomp
// filter and a Landlock ruleset. docs/SANDBOX.md says what each layer stops
// and what it does not.
//
// The sandbox works by re-executing the current binary (/proc/self/exe) with
// a marker: the package's init function recognises the marker and runs the
// sandbox's init (PID 1 of the new namespaces) or its exec stage instead of
// the program's main. Any binary that imports this package, including its
// `go test` binaries, can therefore start sandboxes without further set-up.
// The re-executed stages get a clean environment and only the file
// descriptors the sandbox passes; they carry none of the parent's state.
//
// Closing a pipe end or a descriptor is never checked (`_ = f.Close()`): a
// pipe's data is in the kernel once Write returns, so Close has nothing
// left to fail on but a descriptor already closed.
//
// The package owns: the sandbox processes it starts, their namespaces and
// their private tmpfs mounts. It must not touch: the host's file system
// (nothing is written outside the sandbox's own tmpfs mounts, except for the
// temporary working directory of ModeNone), the ledger's keys or data, other
// processes, or the host's cgroup hierarchy.
package sandbox
