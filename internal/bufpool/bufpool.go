// Package bufpool is an Arrow allocator that reuses freed buffers: sizes
// are rounded up to powers of two, and a freed buffer serves the next
// request of its class, so a stream of records of about the same size stops
// taking new memory after its first records. A fresh buffer costs a page
// fault per 4 KiB the first time it is written, which docs/performance.md
// measures beside the walk of the trees. Users: forestd_score's JSON
// batches (connectors/benthos) and one streamed `forestd score` run
// (lakescore.ScoreFile).
package bufpool

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Size classes: powers of two from 64 bytes to 1<<maxClass bytes.
const (
	minClass = 6
	maxClass = 26
	align    = 64 // memory.GoAllocator's alignment
)

// Pool is an Arrow allocator of power-of-two size classes from 64 bytes to
// the largest given to New; a larger buffer comes from
// memory.DefaultAllocator and goes back to the garbage collector. Buffers
// are 64-byte aligned and zeroed up to the size asked for, as
// memory.GoAllocator's are. Safe for concurrent use.
type Pool struct {
	top  int  // largest class
	keep bool // free lists kept until the Pool is dropped, not sync.Pools
	mu   sync.Mutex
	free [maxClass + 1][][]byte  // keep: class c holds buffers of cap 1<<c
	pool [maxClass + 1]sync.Pool // !keep: class c holds *[]byte of cap 1<<c
	// bytes of the classes handed out (asked), of those made rather than
	// reused (made) and not yet freed (live)
	asked, made, live atomic.Int64
}

var _ memory.Allocator = (*Pool)(nil)

// New returns a Pool whose largest class holds maxBytes, rounded up to a
// power of two between 64 bytes and 64 MiB. With keep, freed buffers stay
// on free lists until the Pool is dropped: right for one run, whose
// records in flight bound what the lists hold. Without it they go to a
// sync.Pool per class, which the garbage collector empties, so an idle
// user keeps nothing.
func New(maxBytes int, keep bool) *Pool {
	top, _ := class(maxBytes)
	return &Pool{top: min(top, maxClass), keep: keep}
}

// class is the class of a buffer of size bytes, ok false above the
// largest class of any Pool.
func class(size int) (c int, ok bool) {
	c = max(bits.Len(uint(size-1)), minClass)
	return c, c <= maxClass
}

// Allocate implements memory.Allocator.
func (p *Pool) Allocate(size int) []byte {
	c, _ := class(size)
	if size <= 0 || c > p.top {
		return memory.DefaultAllocator.Allocate(size)
	}
	p.asked.Add(1 << c)
	p.live.Add(1 << c)
	var b []byte
	if p.keep {
		p.mu.Lock()
		if l := p.free[c]; len(l) > 0 {
			b, p.free[c] = l[len(l)-1], l[:len(l)-1]
		}
		p.mu.Unlock()
	} else if v, _ := p.pool[c].Get().(*[]byte); v != nil {
		b = *v
	}
	if b == nil {
		p.made.Add(1 << c)
		raw := make([]byte, 1<<c+align)
		off := 0
		if r := int(uintptr(unsafe.Pointer(&raw[0])) % align); r != 0 {
			off = align - r
		}
		return raw[off : off+size : off+1<<c] // zeroed by make
	}
	b = b[:size]
	clear(b)
	return b
}

// Reallocate implements memory.Allocator: in place within the buffer's
// class (the new bytes zeroed), else a new buffer with b's bytes.
func (p *Pool) Reallocate(size int, b []byte) []byte {
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
func (p *Pool) Free(b []byte) {
	if !p.owns(b) {
		return // memory.DefaultAllocator's: the garbage collector's
	}
	c := bits.TrailingZeros(uint(cap(b)))
	p.live.Add(-(1 << c))
	if !p.keep {
		b = b[:cap(b)]
		p.pool[c].Put(&b)
		return
	}
	p.mu.Lock()
	p.free[c] = append(p.free[c], b[:0])
	p.mu.Unlock()
}

// owns reports whether b is of one of the pool's classes (a buffer of
// memory.DefaultAllocator above them never is).
func (p *Pool) owns(b []byte) bool {
	n := cap(b)
	return n >= 1<<minClass && n <= 1<<p.top && n&(n-1) == 0
}

// Stats are a Pool's counts in bytes of whole classes: handed out, made
// rather than reused, and handed out but not yet freed.
type Stats struct{ Asked, Made, Live int64 }

// Stats returns p's counts so far.
func (p *Pool) Stats() Stats {
	return Stats{Asked: p.asked.Load(), Made: p.made.Load(), Live: p.live.Load()}
}
