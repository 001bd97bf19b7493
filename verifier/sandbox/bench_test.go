package sandbox

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkStartup measures what starting a sandbox costs: for each
// program it times b.N bare runs (os/exec) and b.N sandboxed runs, fresh
// and from a pool, and reports the three means and the overheads in ms.
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
			fresh, err := New(Config{})
			if err != nil {
				b.Fatal(err)
			}
			pooled, err := New(Config{Pool: 2})
			if err != nil {
				b.Fatal(err)
			}
			defer pooled.Close()
			ctx := context.Background()
			cmd := Cmd{Path: bc.path, Args: bc.args}
			var bare, sb, pool time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if err := exec.Command(bc.path, bc.args...).Run(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if res, err := fresh.Run(ctx, cmd); err != nil || res.ExitCode != 0 {
					b.Fatal(res, err)
				}
				t2 := time.Now()
				if res, err := pooled.Run(ctx, cmd); err != nil || res.ExitCode != 0 {
					b.Fatal(res, err)
				}
				t3 := time.Now()
				bare += t1.Sub(t0)
				sb += t2.Sub(t1)
				pool += t3.Sub(t2)
				// Let the pool refill, as it would between tests.
				time.Sleep(20 * time.Millisecond)
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(ms(bare), "bare-ms")
			b.ReportMetric(ms(sb), "sandbox-ms")
			b.ReportMetric(ms(sb-bare), "overhead-ms")
			b.ReportMetric(ms(pool), "pooled-ms")
			b.ReportMetric(ms(pool-bare), "pooled-overhead-ms")
		})
	}
}
