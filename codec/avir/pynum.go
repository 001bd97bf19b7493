package avir

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/proofledger/ledger/codec/canonjson"
)

// pyNum is a number as the reference's Python arithmetic sees it: an int
// or a float. The attestation's JSON keeps the distinction (435 versus
// 435.0), so the builder computes with it. Ints are limited to |i| <= 2^53
// so that every operation below is exact in int64 and every int converts
// to float64 exactly, as Python's would.
type pyNum struct {
	isInt bool
	i     int64
	f     float64
}

const maxExactInt = 1 << 53

func pyInt(i int64) pyNum     { return pyNum{isInt: true, i: i} }
func pyFloat(f float64) pyNum { return pyNum{f: f} }

// numOf reads a JSON number. Floats must be finite, ints within ±2^53.
func numOf(v canonjson.Value) (pyNum, error) {
	if v.Type() != canonjson.Number {
		return pyNum{}, fmt.Errorf("want number, got %s", typeName(v))
	}
	if v.IsInt() {
		i, ok := v.Int64()
		if !ok || i > maxExactInt || i < -maxExactInt {
			return pyNum{}, fmt.Errorf("integer %.40s is beyond ±2^53", v.Literal())
		}
		return pyInt(i), nil
	}
	f, ok := v.Float64()
	if !ok || math.IsInf(f, 0) || math.IsNaN(f) {
		return pyNum{}, fmt.Errorf("number %.40s is not a finite float64", v.Literal())
	}
	return pyFloat(f), nil
}

func (n pyNum) float() float64 {
	if n.isInt {
		return float64(n.i)
	}
	return n.f
}

func (n pyNum) rat() *big.Rat {
	if n.isInt {
		return new(big.Rat).SetInt64(n.i)
	}
	return new(big.Rat).SetFloat64(n.f)
}

func (n pyNum) value() canonjson.Value {
	if n.isInt {
		return canonjson.MakeInt(n.i)
	}
	return canonjson.MakeFloat(n.f)
}

// str is Python's str(n).
func (n pyNum) str() string {
	if n.isInt {
		return strconv.FormatInt(n.i, 10)
	}
	return canonjson.FormatFloat(n.f)
}

// pySub is a - b: exact for two ints, a float otherwise.
func pySub(a, b pyNum) pyNum {
	if a.isInt && b.isInt {
		return pyInt(a.i - b.i)
	}
	return pyFloat(a.float() - b.float())
}

// pyAdd is a + b.
func pyAdd(a, b pyNum) pyNum {
	if a.isInt && b.isInt {
		return pyInt(a.i + b.i)
	}
	return pyFloat(a.float() + b.float())
}

// pyMul is a * b. Callers keep int products within range (the factors
// here are 1 ± tolerance, so an int factor is 0, 1 or 2).
func pyMul(a, b pyNum) pyNum {
	if a.isInt && b.isInt {
		return pyInt(a.i * b.i)
	}
	return pyFloat(a.float() * b.float())
}

// pyCmp compares exactly, as Python compares int and float.
func pyCmp(a, b pyNum) int { return a.rat().Cmp(b.rat()) }

// pyRound is Python's round(n, digits): ints are unchanged; floats are
// rounded half-to-even on their exact binary value, which is what
// strconv's fixed-precision formatting does.
func pyRound(n pyNum, digits int) pyNum {
	if n.isInt {
		return n
	}
	f, err := strconv.ParseFloat(strconv.FormatFloat(n.f, 'f', digits, 64), 64)
	if err != nil {
		return n
	}
	return pyFloat(f)
}

// stats is the reference's Benchmark.calculate_statistics result before
// rounding.
type stats struct {
	mean, stdDev, min, max, median, p95, p99 pyNum
	count, outliers                          int
}

var errNoValues = errors.New("no run values")

// calcStats computes statistics as the reference does: IQR filtering for
// policy "iqr" when there are at least 4 values (q1 = s[n//4], q3 =
// s[3n//4] of the sorted values, fences 1.5 IQR), then statistics.mean
// (exact, an int when all values are ints and the mean is integral),
// statistics.stdev (correctly rounded sample standard deviation; the int 0
// for one value), statistics.median, p95 = s[int(n*0.95)] and p99 =
// s[int(n*0.99)].
func calcStats(values []pyNum, policy string) (stats, error) {
	n := len(values)
	if n == 0 {
		return stats{}, errNoValues
	}
	filtered := values
	switch policy {
	case "iqr":
		if n >= 4 {
			s := sortedNums(values)
			q1, q3 := s[n/4], s[3*n/4]
			iqr := pySub(q3, q1)
			spread := pyMul(pyFloat(1.5), iqr)
			lower, upper := pySub(q1, spread), pyAdd(q3, spread)
			kept := make([]pyNum, 0, n)
			for _, v := range values {
				if pyCmp(lower, v) <= 0 && pyCmp(v, upper) <= 0 {
					kept = append(kept, v)
				}
			}
			if len(kept) > 0 {
				filtered = kept
			}
		}
	case "none":
	default:
		return stats{}, fmt.Errorf("outlier_policy %q: the reference's statistics are known only for iqr and none", policy)
	}
	m := len(filtered)
	st := stats{count: m, outliers: n - m}
	st.mean = pyMean(filtered)
	if m > 1 {
		st.stdDev = pyStdev(filtered)
	} else {
		st.stdDev = pyInt(0)
	}
	s := sortedNums(filtered)
	// Python's min and max return the first extreme value in data order.
	st.min, st.max = filtered[0], filtered[0]
	for _, v := range filtered[1:] {
		if pyCmp(v, st.min) < 0 {
			st.min = v
		}
		if pyCmp(v, st.max) > 0 {
			st.max = v
		}
	}
	if m%2 == 1 {
		st.median = s[m/2]
	} else {
		a, b := s[m/2-1], s[m/2]
		if a.isInt && b.isInt {
			// (a + b) / 2: int true division, correctly rounded.
			f, _ := new(big.Rat).SetFrac64(a.i+b.i, 2).Float64()
			st.median = pyFloat(f)
		} else {
			st.median = pyFloat((a.float() + b.float()) / 2)
		}
	}
	st.p95, st.p99 = s[0], s[0]
	if m > 1 {
		st.p95 = s[int(float64(m)*0.95)]
		st.p99 = s[int(float64(m)*0.99)]
	}
	return st, nil
}

// sortedNums is Python's sorted(): stable, by exact value.
func sortedNums(values []pyNum) []pyNum {
	s := slices.Clone(values)
	slices.SortStableFunc(s, pyCmp)
	return s
}

// pyMean is statistics.mean: the exact mean, converted to int when every
// value is an int and the mean is integral, else to the nearest float.
func pyMean(values []pyNum) pyNum {
	sum := new(big.Rat)
	allInt := true
	for _, v := range values {
		sum.Add(sum, v.rat())
		allInt = allInt && v.isInt
	}
	mean := sum.Quo(sum, new(big.Rat).SetInt64(int64(len(values))))
	if allInt && mean.IsInt() {
		return pyInt(mean.Num().Int64())
	}
	f, _ := mean.Float64()
	return pyFloat(f)
}

// pyStdev is statistics.stdev (Python 3.11+): the exact sum of squared
// deviations over n-1, square-rooted with correct rounding by
// _float_sqrt_of_frac.
func pyStdev(values []pyNum) pyNum {
	n := int64(len(values))
	sx, sxx := new(big.Rat), new(big.Rat)
	for _, v := range values {
		r := v.rat()
		sx.Add(sx, r)
		sxx.Add(sxx, new(big.Rat).Mul(r, r))
	}
	// ss = (n*sxx - sx*sx) / n; mss = ss / (n-1)
	ss := new(big.Rat).Mul(new(big.Rat).SetInt64(n), sxx)
	ss.Sub(ss, new(big.Rat).Mul(sx, sx))
	ss.Quo(ss, new(big.Rat).SetInt64(n))
	mss := ss.Quo(ss, new(big.Rat).SetInt64(n-1))
	return pyFloat(floatSqrtOfFrac(mss.Num(), mss.Denom()))
}

// sqrtBitWidth is statistics._sqrt_bit_width: 2 * 53 + 3.
const sqrtBitWidth = 2*53 + 3

// floatSqrtOfFrac is statistics._float_sqrt_of_frac: sqrt(n/m) correctly
// rounded, through a round-to-odd integer square root.
func floatSqrtOfFrac(n, m *big.Int) float64 {
	q := floorDiv2(n.BitLen() - m.BitLen() - sqrtBitWidth)
	var num, den *big.Int
	if q >= 0 {
		num = intSqrtOfFracRTO(n, new(big.Int).Lsh(m, uint(2*q)))
		num.Lsh(num, uint(q))
		den = big.NewInt(1)
	} else {
		num = intSqrtOfFracRTO(new(big.Int).Lsh(n, uint(-2*q)), m)
		den = new(big.Int).Lsh(big.NewInt(1), uint(-q))
	}
	f, _ := new(big.Rat).SetFrac(num, den).Float64()
	return f
}

// floorDiv2 is Python's x // 2.
func floorDiv2(x int) int {
	if x < 0 && x%2 != 0 {
		return x/2 - 1
	}
	return x / 2
}

// intSqrtOfFracRTO is statistics._integer_sqrt_of_frac_rto: isqrt(n // m)
// with its lowest bit set when inexact (round to odd).
func intSqrtOfFracRTO(n, m *big.Int) *big.Int {
	a := new(big.Int).Sqrt(new(big.Int).Quo(n, m))
	chk := new(big.Int).Mul(a, a)
	chk.Mul(chk, m)
	if chk.Cmp(n) != 0 {
		a.SetBit(a, 0, 1)
	}
	return a
}

// pyFormatFixed is Python's format(x, ".Nf") for an int or float.
func pyFormatFixed(n pyNum, digits int) string {
	return strconv.FormatFloat(n.float(), 'f', digits, 64)
}

// pyFormatPercent is Python's format(x, ".0%"): x*100 in float, then
// fixed with no decimals, then "%".
func pyFormatPercent(n pyNum) string {
	return strconv.FormatFloat(n.float()*100, 'f', 0, 64) + "%"
}
