package tree

import "slices"

// radixMin is the length from which sortKeys uses radix sort.
const radixMin = 192

// sortKeys sorts packed keys (see packKey) whose low halves — the row
// positions — are already increasing. A stable LSD radix sort on the high
// 32 bits (three passes of 11, 11 and 10 bits) then yields exactly the
// order of a full uint64 sort (value, then position) in O(n); short slices
// use the standard sort. tmp is scratch of at least len(keys); the sorted
// keys are returned (in keys or tmp).
func sortKeys(keys, tmp []uint64) []uint64 {
	n := len(keys)
	if n < radixMin {
		slices.Sort(keys)
		return keys
	}
	tmp = tmp[:n]
	var count [3][2048]int32
	for _, k := range keys {
		h := uint32(k >> 32)
		count[0][h&2047]++
		count[1][(h>>11)&2047]++
		count[2][h>>22]++
	}
	src, dst := keys, tmp
	for pass := 0; pass < 3; pass++ {
		c := &count[pass]
		shift := uint(32 + 11*pass)
		// skip a pass whose digit is the same for every key
		if c[(src[0]>>shift)&2047] == int32(n) {
			continue
		}
		var sum int32
		for i := range c {
			x := c[i]
			c[i] = sum
			sum += x
		}
		for _, k := range src {
			d := (k >> shift) & 2047
			dst[c[d]] = k
			c[d]++
		}
		src, dst = dst, src
	}
	return src
}
