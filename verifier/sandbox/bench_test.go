package sandbox

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkStartup measures what starting a sandbox costs. For each
// program it runs, b.N times in turn, the bare program (os/exec), the
// program in a fresh sandbox and the program in a pooled sandbox (started
// beforehand, waiting for a command), and reports the mean and the
// fastest run of each in ms, and the mean overheads. On a shared machine
// the fastest runs are the better estimate of the sandbox's own cost.
func BenchmarkStartup(b *testing.B) {
	skipUnlessAvailable(b)
	for _, bc := range []struct {
		name string
		path string
		args []string
	}{
		{"sh", "/bin/sh", []string{"-c", "true"}},
		{"python", "/usr/bin/python3", []string{"-c", "pass"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			fresh := newRunner(b, Config{})
			pooled := newRunner(b, Config{Pool: 1})
			waitForPool := func() {
				for len(pooled.pool.ready) < cap(pooled.pool.ready) {
					time.Sleep(time.Millisecond)
				}
			}
			waitForPool()
			ctx := context.Background()
			cmd := Cmd{Path: bc.path, Args: bc.args}
			var sum, fastest [3]time.Duration
			for i := 0; i < b.N; i++ {
				for k, runOnce := range []func() error{
					func() error { return exec.Command(bc.path, bc.args...).Run() },
					func() error { _, err := fresh.Run(ctx, cmd); return err },
					func() error { _, err := pooled.Run(ctx, cmd); return err },
				} {
					t0 := time.Now()
					if err := runOnce(); err != nil {
						b.Fatal(err)
					}
					d := time.Since(t0)
					sum[k] += d
					if i == 0 || d < fastest[k] {
						fastest[k] = d
					}
				}
				// Let the pool refill, as it would between tests, so that
				// its refilling does not compete with the next runs.
				waitForPool()
			}
			mean := func(k int) float64 { return float64(sum[k]) / float64(b.N) / 1e6 }
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(mean(0), "bare-ms")
			b.ReportMetric(mean(1), "sandbox-ms")
			b.ReportMetric(mean(2), "pooled-ms")
			b.ReportMetric(mean(1)-mean(0), "overhead-ms")
			b.ReportMetric(mean(2)-mean(0), "pooled-overhead-ms")
			b.ReportMetric(ms(fastest[0]), "bare-min-ms")
			b.ReportMetric(ms(fastest[1]), "sandbox-min-ms")
			b.ReportMetric(ms(fastest[2]), "pooled-min-ms")
		})
	}
}
