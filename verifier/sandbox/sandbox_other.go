//go:build !linux

package sandbox

import (
	"context"
	"fmt"
)

// Runner runs commands in sandboxes; on this platform it cannot be made.
type Runner struct{}

// New fails on this platform: the sandbox needs Linux namespaces, and
// ModeNone needs the Linux exec stage for its rlimits.
func New(cfg Config) (*Runner, error) {
	return nil, fmt.Errorf("%w: only Linux is supported", ErrUnavailable)
}

// Available reports why sandboxes cannot run here.
func Available() error {
	_, err := New(Config{})
	return err
}

// Sandbox returns "none".
func (r *Runner) Sandbox() string { return "none" }

// Mode returns ModeNone.
func (r *Runner) Mode() Mode { return ModeNone }

// Close does nothing.
func (r *Runner) Close() error { return nil }

// Run fails on this platform.
func (r *Runner) Run(ctx context.Context, c Cmd) (Result, error) {
	return Result{}, fmt.Errorf("%w: only Linux is supported", ErrUnavailable)
}
