package tree

import (
	"math"
	"slices"
	"sync"
)

// MissingCode is the bin code of a missing (NaN) value.
const MissingCode = 255

// MaxBins is the largest number of non-missing bins per feature.
const MaxBins = 255

// Binned holds every feature pre-binned once per forest (ARCHITECTURE.md, Performance techniques): each
// value is replaced by the index of its quantile bin, so a node's split
// search accumulates a histogram instead of sorting.
//
// Bins are chosen from the sorted distinct values: a feature with at most
// maxBins distinct values gets one bin per value (the binned search is then
// exact), otherwise the cut points are placed so that each bin holds about
// n/maxBins rows, never splitting a run of equal values. Upper[j][b] is the
// threshold between bin b and b+1: a float32 t with max(bin b) ≤ t <
// min(bin b+1), the midpoint where float32 allows it. So "code ≤ b" and
// "x ≤ Upper[j][b]" select the same rows, and a binned split is stored as
// an ordinary threshold.
type Binned struct {
	Codes [][]uint8
	Upper [][]float32
	// rows holds the same codes row-major (row i's p codes at i·p), set by
	// NewBinned: a node's histograms of all its candidate features are
	// built in one pass that reads each row's codes from one or two cache
	// lines (Builder.buildHists) instead of one scattered line per
	// feature. nil (a Binned built by hand) falls back to one pass per
	// feature over Codes.
	rows []uint8
}

// DropRows releases the row-major copy of the codes once no more trees
// grow on b: the out-of-bag passes read the columns, and at a million rows
// × 50 features the copy is 50 MB of the end of training's peak. Trees
// grown after it search one feature at a time.
func (b *Binned) DropRows() { b.rows = nil }

// NBins returns the number of non-missing bins of feature j.
func (b *Binned) NBins(j int) int { return len(b.Upper[j]) + 1 }

// binOf is the bin whose upper edge is thr (a threshold a codes-only
// builder chose): rows of feature j with code ≤ binOf go left.
func (b *Binned) binOf(j int, thr float32) uint8 {
	up := b.Upper[j]
	lo, hi := 0, len(up)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if up[m] < thr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return uint8(lo)
}

// Value is a float32 that feature j's rows of code c can stand for
// against every threshold a codes-only builder chooses (a bin edge):
// the bin's upper edge, +Inf for the top bin, NaN for missing. A tree
// grown on codes routes it as it routes the raw values.
func (b *Binned) Value(j int, c uint8) float32 {
	if c == MissingCode {
		return float32(math.NaN())
	}
	if int(c) < len(b.Upper[j]) {
		return b.Upper[j][c]
	}
	return float32(math.Inf(1))
}

// NewBinned bins every column of cols with at most maxBins bins (2..255),
// using up to threads goroutines. The result does not depend on threads.
func NewBinned(cols [][]float32, maxBins, threads int) *Binned {
	if maxBins < 2 || maxBins > MaxBins {
		maxBins = MaxBins
	}
	if threads < 1 {
		threads = 1
	}
	b := &Binned{Codes: make([][]uint8, len(cols)), Upper: make([][]float32, len(cols))}
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var scratch []float32
			var keys []uint32
			for j := range next {
				scratch = binColumn(cols[j], maxBins, scratch, &keys, b, j)
			}
		}()
	}
	for j := range cols {
		next <- j
	}
	close(next)
	wg.Wait()
	b.rows = rowMajor(b.Codes)
	return b
}

// rowMajor transposes column-major codes into one row-major array, a
// block of rows at a time so that both sides stay in cache.
func rowMajor(codes [][]uint8) []uint8 {
	p := len(codes)
	if p == 0 {
		return nil
	}
	n := len(codes[0])
	out := make([]uint8, n*p)
	const block = 4096
	for r0 := 0; r0 < n; r0 += block {
		rowsInto(codes, r0, min(r0+block, n), out[r0*p:])
	}
	return out
}

// RowMajor writes the codes of rows r0..r1 row-major into x, p codes a
// row (the out-of-bag pass's blocks of a forest grown on the codes).
func (b *Binned) RowMajor(r0, r1 int, x []uint8) { rowsInto(b.Codes, r0, r1, x) }

// rowsInto writes rows r0..r1 of codes row-major into x.
func rowsInto(codes [][]uint8, r0, r1 int, x []uint8) {
	p := len(codes)
	for j, col := range codes {
		for i, c := range col[r0:r1] {
			x[i*p+j] = c
		}
	}
}

func binColumn(col []float32, maxBins int, scratch []float32, keys *[]uint32, b *Binned, j int) []float32 {
	vals := scratch[:0]
	for _, v := range col {
		if v == v { // not NaN
			vals = append(vals, v)
		}
	}
	sortFloats(vals, keys)
	upper := cutPoints(vals, maxBins)
	codes := make([]uint8, len(col))
	// A value's code is the first b with v ≤ upper[b] (len(upper) when v
	// is above every cut), which for the ascending cuts is the number of
	// cuts below v: eight fixed steps over the cuts padded with the
	// largest key, comparing order-preserving integer keys by the sign of
	// their difference (a branchy binary search mispredicts about half its
	// steps).
	var cuts [MaxBins + 1]int64
	for i := range cuts {
		cuts[i] = math.MaxUint32
		if i < len(upper) {
			cuts[i] = orderKey(upper[i])
		}
	}
	for i, v := range col {
		if v != v {
			codes[i] = MissingCode
			continue
		}
		k := orderKey(v)
		lo := 0
		for step := 128; step > 0; step >>= 1 {
			// cuts[lo+step−1] < k: their difference is negative
			lo += step & int((cuts[(lo+step-1)&MaxBins]-k)>>63)
		}
		codes[i] = uint8(lo)
	}
	b.Codes[j] = codes
	b.Upper[j] = upper
	return vals
}

// sortFloats sorts the non-NaN vals ascending into the array slices.Sort
// gives. Unless a value is −0 (equal to +0 with other bits, so that the
// two sorts might order them differently) it sorts their order keys by
// an LSD radix sort, three passes of 11 bits, in keys (grown to 2n), a
// third of the comparison sort's time on 100,000 values.
func sortFloats(vals []float32, keys *[]uint32) {
	n := len(vals)
	if n < 4096 {
		slices.Sort(vals)
		return
	}
	if cap(*keys) < 2*n {
		*keys = make([]uint32, 2*n)
	}
	a, t := (*keys)[:n], (*keys)[n:2*n]
	for i, v := range vals {
		u := math.Float32bits(v)
		if u == 1<<31 {
			slices.Sort(vals)
			return
		}
		a[i] = u ^ (uint32(int32(u)>>31) | 1<<31)
	}
	for shift := 0; shift < 32; shift += 11 {
		var at [2048]int
		for _, k := range a {
			at[k>>shift&2047]++
		}
		sum := 0
		for d, c := range at {
			at[d], sum = sum, sum+c
		}
		for _, k := range a {
			d := k >> shift & 2047
			t[at[d]] = k
			at[d]++
		}
		a, t = t, a
	}
	for i, k := range a {
		u := ^k
		if k>>31 != 0 {
			u = k ^ 1<<31
		}
		vals[i] = math.Float32frombits(u)
	}
}

// orderKey maps a non-NaN float32 to an integer of the same order, −0 and
// +0 to the same one (they compare equal).
func orderKey(v float32) int64 {
	u := math.Float32bits(v)
	if u == 1<<31 {
		u = 0
	}
	if u>>31 != 0 {
		u = ^u
	} else {
		u |= 1 << 31
	}
	return int64(u)
}

// cutPoints returns the thresholds between consecutive bins of the sorted
// non-NaN values.
func cutPoints(sorted []float32, maxBins int) []float32 {
	n := len(sorted)
	if n == 0 {
		return nil
	}
	// distinct values and their counts
	distinct := 1
	for i := 1; i < n; i++ {
		if sorted[i] != sorted[i-1] {
			distinct++
		}
	}
	var upper []float32
	if distinct <= maxBins {
		upper = make([]float32, 0, distinct-1)
		for i := 1; i < n; i++ {
			if sorted[i] != sorted[i-1] {
				upper = append(upper, Midpoint(sorted[i-1], sorted[i]))
			}
		}
		return upper
	}
	// Quantile bins: close a bin once it holds at least target rows, at a
	// change of value; the target adapts to what is left so heavy ties
	// early do not starve the later bins.
	upper = make([]float32, 0, maxBins-1)
	start := 0
	binsLeft := maxBins
	for i := 1; i < n && binsLeft > 1; i++ {
		if sorted[i] == sorted[i-1] {
			continue
		}
		target := float64(n-start) / float64(binsLeft)
		if float64(i-start) >= target {
			upper = append(upper, Midpoint(sorted[i-1], sorted[i]))
			start = i
			binsLeft--
		}
	}
	return upper
}

// Midpoint returns a float32 threshold t with lo ≤ t < hi for lo < hi: the
// midpoint rounded to float32, or lo when rounding would reach hi.
func Midpoint(lo, hi float32) float32 {
	m := float32((float64(lo) + float64(hi)) / 2)
	if m >= hi || math.IsInf(float64(m), 0) {
		return lo
	}
	if m < lo {
		return lo
	}
	return m
}
