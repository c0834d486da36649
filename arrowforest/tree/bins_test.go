package tree

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMidpoint(t *testing.T) {
	cases := [][2]float32{{0, 1}, {1, math.Nextafter32(1, 2)}, {-3, -2.5}, {-math.MaxFloat32, math.MaxFloat32}, {1e30, math.MaxFloat32}}
	for _, c := range cases {
		m := Midpoint(c[0], c[1])
		if !(c[0] <= m && m < c[1]) {
			t.Errorf("Midpoint(%v, %v) = %v, not in [lo, hi)", c[0], c[1], m)
		}
	}
}

// checkBins verifies the invariant the split search relies on: code ≤ b
// exactly when x ≤ Upper[b], and missing values get MissingCode.
func checkBins(t *testing.T, col []float32, b *Binned) {
	t.Helper()
	up := b.Upper[0]
	if !slices.IsSorted(up) {
		t.Fatalf("thresholds not sorted: %v", up)
	}
	for i, v := range col {
		c := b.Codes[0][i]
		if v != v {
			if c != MissingCode {
				t.Fatalf("NaN got code %d", c)
			}
			continue
		}
		if int(c) >= b.NBins(0) {
			t.Fatalf("code %d outside %d bins", c, b.NBins(0))
		}
		for q, u := range up {
			if (int(c) <= q) != (v <= u) {
				t.Fatalf("value %v code %d disagrees with threshold %d = %v", v, c, q, u)
			}
		}
	}
}

func TestBinsExactWhenFewValues(t *testing.T) {
	col := []float32{3, 1, 2, 2, float32(math.NaN()), 1, 3, 5}
	b := NewBinned([][]float32{col}, 255, 1)
	if got := b.NBins(0); got != 4 {
		t.Fatalf("4 distinct values gave %d bins", got)
	}
	checkBins(t, col, b)
}

func TestBinsQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 100000
	col := make([]float32, n)
	for i := range col {
		col[i] = float32(rng.ExpFloat64())
		if i%97 == 0 {
			col[i] = 0 // a heavy tie
		}
	}
	b := NewBinned([][]float32{col}, 64, 2)
	if nb := b.NBins(0); nb < 60 || nb > 64 {
		t.Fatalf("%d bins, want close to 64", nb)
	}
	checkBins(t, col, b)
	counts := make([]int, b.NBins(0))
	for _, c := range b.Codes[0] {
		counts[c]++
	}
	for q, c := range counts {
		if c > 3*n/64 {
			t.Fatalf("bin %d holds %d rows, far above n/64", q, c)
		}
	}
}

func FuzzCutPoints(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4}, uint8(3))
	f.Add([]byte{0, 0, 0, 255, 255, 7}, uint8(2))
	f.Fuzz(func(t *testing.T, raw []byte, maxBins uint8) {
		col := make([]float32, 0, len(raw)/2)
		for i := 0; i+1 < len(raw); i += 2 {
			v := float32(int16(uint16(raw[i])<<8|uint16(raw[i+1]))) / 7
			if raw[i] == 0xff {
				v = float32(math.NaN())
			}
			col = append(col, v)
		}
		b := NewBinned([][]float32{col}, int(maxBins), 1)
		if b.NBins(0) > MaxBins {
			t.Fatalf("%d bins", b.NBins(0))
		}
		checkBins(t, col, b)
	})
}

// TestSortKeys: the radix path orders exactly as a full uint64 sort,
// negative values, zeros and ties included.
func TestSortKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	for _, n := range []int{5, 191, 192, 1000, 5000} {
		keys := make([]uint64, n)
		for i := range keys {
			v := float32(rng.IntN(200)-100) / 8
			if i%17 == 0 {
				v = float32(math.Copysign(0, -1))
			}
			keys[i] = packKey(v, int32(i))
		}
		want := slices.Clone(keys)
		slices.Sort(want)
		got := sortKeys(keys, make([]uint64, n))
		if !slices.Equal(got, want) {
			t.Fatalf("n=%d: radix order differs", n)
		}
		for i := 1; i < n; i++ {
			if keyValue(got[i]) < keyValue(got[i-1]) {
				t.Fatalf("n=%d: values out of order at %d", n, i)
			}
		}
	}
}

// Every code must be the first bin whose upper edge is at least the value
// (len(Upper) above them all), as a plain search finds it: values of
// either sign, ±0 (−0 values at a cut of +0), ±Inf, subnormals, heavy ties,
// more and fewer distinct values than bins.
func TestBinCodesFirstUpper(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	negZero := float32(math.Copysign(0, -1))
	tiny := math.Float32frombits(1)
	cols := [][]float32{
		{negZero, tiny, 0, negZero, tiny, 1},
		{float32(math.Inf(-1)), float32(math.Inf(1)), 0, 2, float32(math.NaN()), 2, -3},
	}
	for _, distinct := range []int{5, 300, 1 << 20} {
		c := make([]float32, 20000)
		for i := range c {
			c[i] = float32(rng.IntN(distinct)-distinct/2) * 0.013
			if i%97 == 0 {
				c[i] = negZero
			}
		}
		cols = append(cols, c)
	}
	bins := NewBinned(cols, 255, 2)
	if bins.Upper[0][0] != 0 {
		t.Fatalf("column 0's first cut is %v, want 0 (−0 values at a cut of 0: the case the test is for)", bins.Upper[0][0])
	}
	for j, col := range cols {
		up := bins.Upper[j]
		for i, v := range col {
			want := uint8(MissingCode)
			if v == v {
				want = uint8(len(up))
				for b, u := range up {
					if v <= u {
						want = uint8(b)
						break
					}
				}
			}
			if got := bins.Codes[j][i]; got != want {
				t.Fatalf("column %d row %d value %v: code %d, want %d (cuts %v...)", j, i, v, got, want, up[:min(len(up), 4)])
			}
		}
	}
}

// TestSortFloatsAsSort: the radix sort of binColumn gives the array
// slices.Sort gives, bit for bit, on values of both signs, repeats, ±Inf,
// subnormals and wide exponents; a column with −0 takes the comparison sort.
func TestSortFloatsAsSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var keys []uint32
	for _, n := range []int{0, 100, 4096, 50000} {
		for _, negZero := range []bool{false, true} {
			vals := make([]float32, n)
			for i := range vals {
				switch rng.IntN(8) {
				case 0:
					vals[i] = float32(rng.IntN(5)) - 2
				case 1:
					vals[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
				case 2:
					vals[i] = math.Float32frombits(rng.Uint32() & 0x807fffff) // subnormal
				default:
					vals[i] = math.Float32frombits(rng.Uint32()&^(0xff<<23) | uint32(rng.IntN(255))<<23)
				}
			}
			if negZero && n > 0 {
				vals[n/2] = float32(math.Copysign(0, -1))
			}
			want := slices.Clone(vals)
			slices.Sort(want)
			sortFloats(vals, &keys)
			for i := range want {
				if math.Float32bits(vals[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n %d −0 %v: value %d is %v, slices.Sort %v", n, negZero, i, vals[i], want[i])
				}
			}
		}
	}
}
