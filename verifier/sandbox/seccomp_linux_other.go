//go:build linux && !amd64 && !arm64

package sandbox

import "errors"

// No filter is written for this architecture: the sandbox runs without
// seccomp, and Runner.Sandbox says so.

func seccompAvailable() bool { return false }

func installSeccomp() error { return errors.New("no seccomp filter for this architecture") }
