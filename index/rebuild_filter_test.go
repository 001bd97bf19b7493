package index

import (
	"fmt"
	"testing"
)

// TestKeyFilter checks the rebuild's key filter: never a false negative,
// and about 1% false positives at its expected load.
func TestKeyFilter(t *testing.T) {
	for _, n := range []int64{10, 5000, 100_000} {
		f := newKeyFilter(n)
		key := func(i int64) []byte { return fmt.Appendf(nil, "x/k/%d", i) }
		for i := range n {
			f.add(key(i))
		}
		for i := range n {
			if !f.mayContain(key(i)) {
				t.Fatalf("n=%d: added key %d reported absent", n, i)
			}
		}
		fp := 0
		for i := n; i < n+100_000; i++ {
			if f.mayContain(key(i)) {
				fp++
			}
		}
		if rate := float64(fp) / 100_000; rate > 0.03 {
			t.Errorf("n=%d: false-positive rate %.3f, want about 0.01", n, rate)
		}
	}
}

// TestKeyFilterCapped checks that a filter for a huge ledger stays within
// its cap and still never reports an added key absent.
func TestKeyFilterCapped(t *testing.T) {
	f := newKeyFilter(1 << 40)
	if got := uint64(len(f.bits)) * 64; got > maxKeyFilterBits || f.m > maxKeyFilterBits {
		t.Fatalf("filter of %d bits, cap %d", got, maxKeyFilterBits)
	}
	for i := range 1000 {
		k := fmt.Appendf(nil, "x/%d", i)
		f.add(k)
		if !f.mayContain(k) {
			t.Fatalf("key %d reported absent", i)
		}
	}
}
