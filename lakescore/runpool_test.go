package lakescore

import (
	"bytes"
	"testing"
	"unsafe"
)

// TestRunPool: buffers are 64-byte aligned, of the size asked for and
// zeroed, also when reused after being written; a freed buffer is reused
// by the next of its class (the garbage collector does not empty the
// lists); Reallocate keeps the bytes (in place within a class, copied
// beyond it) and zeroes the new ones; buffers above the largest class
// are not the pool's; every byte handed out comes back.
func TestRunPool(t *testing.T) {
	p := &runPool{}
	for _, size := range []int{1, 63, 64, 65, 1000, 1 << 20, 1 << maxRunClass, 1<<maxRunClass + 1} {
		for round := range min(20, 1<<24/size+2) {
			b := p.Allocate(size)
			if len(b) != size || uintptr(unsafe.Pointer(&b[0]))%runAlign != 0 {
				t.Fatalf("size %d: len %d at %p", size, len(b), &b[0])
			}
			if i := bytes.IndexFunc(b, func(r rune) bool { return r != 0 }); i >= 0 {
				t.Fatalf("size %d, round %d: byte %d is %d, want 0", size, round, i, b[i])
			}
			for i := range b {
				b[i] = byte(i) | 1
			}
			p.Free(b)
		}
	}
	// one buffer made per pooled class: 64 (for 1, 63 and 64), 128, 1024, 1 MiB, 64 MiB
	if made, want := p.made.Load(), int64(64+128+1024+1<<20+1<<maxRunClass); made != want {
		t.Fatalf("%d bytes made, want %d (one buffer per class)", made, want)
	}
	b := p.Allocate(100)
	copy(b, "forestd")
	b = p.Reallocate(120, b) // within the 128-byte class
	if string(b[:7]) != "forestd" || len(b) != 120 || !bytes.Equal(b[100:], make([]byte, 20)) {
		t.Fatalf("in place: %q", b)
	}
	b = p.Reallocate(1000, b) // another class
	if string(b[:7]) != "forestd" || len(b) != 1000 || !bytes.Equal(b[120:], make([]byte, 880)) {
		t.Fatalf("copied: %q", b[:10])
	}
	p.Free(b)
	if n := p.live.Load(); n != 0 {
		t.Fatalf("%d bytes not returned", n)
	}
}
