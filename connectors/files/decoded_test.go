package files

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDecodedBytes: a Parquet file counts its footer's uncompressed
// column sizes, a CSV twice its text, a gzip eight times its bytes, an
// Arrow IPC file its size; inputs that cannot be listed count 0.
func TestDecodedBytes(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata")
	size := func(name string) int64 {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	pq := filepath.Join(dir, "iris.parquet")
	fh, err := os.Open(pq)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	pf, err := OpenParquet(pq, fh, size("iris.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for g := 0; g < pf.NumRowGroups(); g++ {
		want += pf.RowGroupBytes(g, pf.ColumnNames())
	}
	for _, c := range []struct {
		name string
		want int64
	}{{"iris.parquet", want}, {"iris.csv.gz", 8 * size("iris.csv.gz")}, {"digits.arrows", size("digits.arrows")}} {
		if got := DecodedBytes([]string{filepath.Join(dir, c.name)}); got != c.want || got <= 0 {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	csv := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(csv, []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := DecodedBytes([]string{csv}); got != 16 {
		t.Errorf("csv: %d, want 16", got)
	}
	if got := DecodedBytes([]string{filepath.Join(dir, "no-such-file.parquet")}); got != 0 {
		t.Errorf("a missing input: %d", got)
	}
}
