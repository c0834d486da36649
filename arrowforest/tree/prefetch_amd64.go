//go:build amd64 && !purego

package tree

// prefetchRowsAsm issues PREFETCHT0 for the first and last byte of row
// idx[i] (p bytes at codes + idx[i]·p) for i < n. A prefetch never faults
// and changes no value, so it needs no bounds.
//
//go:noescape
func prefetchRowsAsm(codes *uint8, idx *int32, n, p int)

// prefetchRows hints the cache lines of the row-major codes of rows idx
// (p codes a row) so that a pass reading them a few rows later finds them
// in cache (see buildHists).
func prefetchRows(codes []uint8, idx []int32, p int) {
	if len(idx) == 0 || len(codes) == 0 {
		return
	}
	prefetchRowsAsm(&codes[0], &idx[0], len(idx), p)
}
