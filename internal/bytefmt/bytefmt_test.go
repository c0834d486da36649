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

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"65536": 65536, "512MiB": 512 << 20, "512mib": 512 << 20, "2GiB": 2 << 30, "1.5G": 3 << 29,
		"100MB": 100e6, "64k": 64 << 10, "1TB": 1e12, " 8 MiB ": 8 << 20,
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-5", "0", "1XB", "nan", "9999999999T", "1..5M"} {
		if v, err := Parse(in); err == nil {
			t.Errorf("%q: accepted as %d", in, v)
		}
	}
}

// FuzzParse: any flag text gives a positive size or an error.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"512MiB", "1.5G", "0", "-1", "1e309", ".", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Parse(s)
		if err == nil && v <= 0 {
			t.Fatalf("%q: %d", s, v)
		}
	})
}
