package bufpool

import (
	"bytes"
	"fmt"
	"testing"
	"unsafe"
)

// TestPool, with free lists and with sync.Pools: buffers are 64-byte
// aligned, of the size asked for and zeroed, also when reused after being
// written; freed buffers are reused (with free lists, exactly one made per
// class, the garbage collector notwithstanding); Reallocate keeps the bytes
// (in place within a class, copied beyond it) and zeroes the new ones;
// buffers above the largest class are not the pool's; every byte handed
// out comes back.
func TestPool(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			const top = 1 << 20
			p := New(top, keep)
			for _, size := range []int{1, 63, 64, 65, 1000, 8000, top, top + 1} {
				for round := range 40 {
					b := p.Allocate(size)
					if len(b) != size || uintptr(unsafe.Pointer(&b[0]))%align != 0 {
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
			// one buffer per pooled class: 64 (for 1, 63 and 64), 128, 1024, 8192, 1 MiB
			classes := int64(64 + 128 + 1024 + 8192 + top)
			st := p.Stats()
			if st.Asked != 40*(classes+64+64) {
				t.Fatalf("%d bytes asked, want %d (top+1 is not the pool's)", st.Asked, 40*(classes+128))
			}
			if keep && st.Made != classes || !keep && st.Made > st.Asked/2 {
				t.Fatalf("%d bytes made of %d asked, want %d with free lists, at most half with sync.Pools", st.Made, st.Asked, classes)
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
			if n := p.Stats().Live; n != 0 {
				t.Fatalf("%d bytes not returned", n)
			}
		})
	}
}

// TestPoolMaxBytes: New rounds the largest class up to a power of two and
// caps it at 64 MiB.
func TestPoolMaxBytes(t *testing.T) {
	for _, c := range []struct{ max, top int }{{1, minClass}, {4 << 20, 22}, {5 << 20, 23}, {1 << 40, maxClass}} {
		if p := New(c.max, true); p.top != c.top {
			t.Errorf("New(%d): largest class 1<<%d, want 1<<%d", c.max, p.top, c.top)
		}
	}
}
