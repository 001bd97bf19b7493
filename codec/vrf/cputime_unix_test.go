//go:build unix

package vrf

import (
	"syscall"
	"testing"
	"time"
)

// processCPU returns the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds a "cpu-ns/op" metric: process CPU time per operation,
// garbage collection included. Unlike ns/op it does not count time the
// process spent waiting for a CPU, so it stays comparable on a busy machine.
func reportCPU(b *testing.B, start time.Duration) {
	if b.N > 0 {
		b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
	}
}
