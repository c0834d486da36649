package benthos

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Size classes of bufPool: powers of two from 64 bytes to 4 MiB. A larger
// buffer comes from memory.DefaultAllocator and goes back to the GC.
const (
	minPoolClass = 6
	maxPoolClass = 22
	poolAlign    = 64 // memory.GoAllocator's alignment
)

// bufPool is the Arrow allocator of forestd_score's JSON batches: the record
// a batch's messages decode into and its prediction records, both released
// before ProcessBatch returns, take their buffers from a sync.Pool per
// power-of-two size class and give them back, so that batch after batch
// they take no new memory (docs/performance.md, "Issue 36, fourth pass").
// The GC empties the pools, so an idle processor keeps nothing. Buffers
// are 64-byte aligned and zeroed up to the size asked for, as
// memory.GoAllocator's are. Safe for concurrent use.
type bufPool struct {
	classes [maxPoolClass + 1]sync.Pool // class c: *[]byte of cap 1<<c
	live    atomic.Int64                // bytes of the classes handed out and not freed
	fresh   atomic.Int64                // buffers made rather than reused
}

var _ memory.Allocator = (*bufPool)(nil)

// poolClass is the class of a buffer of size bytes; ok is false above the
// largest.
func poolClass(size int) (c int, ok bool) {
	c = max(bits.Len(uint(size-1)), minPoolClass)
	return c, c <= maxPoolClass
}

// Allocate implements memory.Allocator.
func (p *bufPool) Allocate(size int) []byte {
	c, ok := poolClass(size)
	if size <= 0 || !ok {
		return memory.DefaultAllocator.Allocate(size)
	}
	var b []byte
	if v, _ := p.classes[c].Get().(*[]byte); v != nil {
		b = *v
	} else {
		p.fresh.Add(1)
		raw := make([]byte, 1<<c+poolAlign)
		off := 0
		if r := int(uintptr(unsafe.Pointer(&raw[0])) % poolAlign); r != 0 {
			off = poolAlign - r
		}
		b = raw[off : off+1<<c : off+1<<c]
	}
	p.live.Add(int64(cap(b)))
	b = b[:size]
	clear(b)
	return b
}

// Reallocate implements memory.Allocator: in place within the buffer's
// class (the new bytes zeroed), else a new buffer with b's bytes.
func (p *bufPool) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) && p.owns(b) {
		if size > len(b) {
			clear(b[len(b):size])
		}
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free implements memory.Allocator.
func (p *bufPool) Free(b []byte) {
	if !p.owns(b) {
		return // memory.DefaultAllocator's: the GC's
	}
	p.live.Add(-int64(cap(b)))
	b = b[:cap(b)]
	p.classes[bits.TrailingZeros(uint(cap(b)))].Put(&b)
}

// owns reports whether b is of one of the pool's classes (a buffer of
// memory.DefaultAllocator above them never is).
func (p *bufPool) owns(b []byte) bool {
	n := cap(b)
	return n >= 1<<minPoolClass && n <= 1<<maxPoolClass && n&(n-1) == 0
}
