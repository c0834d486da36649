package bytefmt

import "testing"

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		b    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {512 << 20, "512.0 MiB"}, {3 << 40, "3.0 TiB"}, {5 << 50, "5120.0 TiB"}} {
		if got := Format(c.b); got != c.want {
			t.Errorf("Format(%d) = %q, want %q", c.b, got, c.want)
		}
	}
}
