package lakescore

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// runPool is the Arrow allocator of one ScoreFile run: the row groups it
// decodes and the prediction records it writes take their buffers from
// free lists of power-of-two size classes and give them back when
// released, so that after the first row groups the run takes no new
// memory. A fresh buffer costs a page fault per 4 KiB the first time it
// is written (on this 2-core VM about as much as scoring a fifth of the
// rows); a buffer the garbage collector reclaims and the runtime returns
// to the system costs it again. Unlike a sync.Pool, the lists are not
// emptied by the garbage collector: they hold at most the buffers of the
// records in flight at once, and the run drops them all when it ends.
// Buffers are 64-byte aligned and zeroed up to the size asked for, as
// memory.GoAllocator's are. Safe for concurrent use.
type runPool struct {
	mu   sync.Mutex
	free [maxRunClass + 1][][]byte // class c: buffers of cap 1<<c
	// bytes of the classes handed out (asked), of those made rather than
	// reused (made) and not yet freed (live), for the tests
	asked, made, live atomic.Int64
}

// Size classes of runPool: powers of two from 64 bytes to 64 MiB; a larger
// buffer comes from memory.DefaultAllocator.
const (
	minRunClass = 6
	maxRunClass = 26
	runAlign    = 64 // memory.GoAllocator's alignment
)

var _ memory.Allocator = (*runPool)(nil)

// runClass is the class of a buffer of size bytes; ok is false above the
// largest.
func runClass(size int) (c int, ok bool) {
	c = max(bits.Len(uint(size-1)), minRunClass)
	return c, c <= maxRunClass
}

// Allocate implements memory.Allocator.
func (p *runPool) Allocate(size int) []byte {
	c, ok := runClass(size)
	if size <= 0 || !ok {
		return memory.DefaultAllocator.Allocate(size)
	}
	p.asked.Add(1 << c)
	p.live.Add(1 << c)
	var b []byte
	p.mu.Lock()
	if l := p.free[c]; len(l) > 0 {
		b, p.free[c] = l[len(l)-1], l[:len(l)-1]
	}
	p.mu.Unlock()
	if b == nil {
		p.made.Add(1 << c)
		raw := make([]byte, 1<<c+runAlign)
		off := 0
		if r := int(uintptr(unsafe.Pointer(&raw[0])) % runAlign); r != 0 {
			off = runAlign - r
		}
		return raw[off : off+size : off+1<<c] // zeroed by make
	}
	b = b[:size]
	clear(b)
	return b
}

// Reallocate implements memory.Allocator: in place within the buffer's
// class (the new bytes zeroed), else a new buffer with b's bytes.
func (p *runPool) Reallocate(size int, b []byte) []byte {
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
func (p *runPool) Free(b []byte) {
	if !p.owns(b) {
		return // memory.DefaultAllocator's: the garbage collector's
	}
	c := bits.TrailingZeros(uint(cap(b)))
	p.live.Add(-(1 << c))
	p.mu.Lock()
	p.free[c] = append(p.free[c], b[:0])
	p.mu.Unlock()
}

// owns reports whether b is of one of the pool's classes (a buffer of
// memory.DefaultAllocator above them never is).
func (p *runPool) owns(b []byte) bool {
	n := cap(b)
	return n >= 1<<minRunClass && n <= 1<<maxRunClass && n&(n-1) == 0
}
