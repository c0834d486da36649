//go:build !amd64 || purego

package tree

// prefetchRows hints the cache lines of rows idx of the row-major codes;
// only the amd64 build has a prefetch instruction, elsewhere it does
// nothing.
func prefetchRows(codes []uint8, idx []int32, p int) {}
