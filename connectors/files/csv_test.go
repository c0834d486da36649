package files

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

func readCSVString(t *testing.T, text string, cols []string) (*arrow.Schema, []arrow.Record, error) {
	t.Helper()
	mem := checked(t)
	s, recs, err := readCSV("t.csv", strings.NewReader(text), cols, mem)
	if err == nil {
		t.Cleanup(func() { release(recs) })
	}
	return s, recs, err
}

func TestCSVInference(t *testing.T) {
	cases := []struct {
		name  string
		text  string
		types []arrow.Type
		nulls []int
	}{
		{"ints floats strings", "a,b,c\n1,1.5,x\n2,2,y\n", []arrow.Type{arrow.INT64, arrow.FLOAT64, arrow.STRING}, []int{0, 0, 0}},
		{"nulls", "a,b,c\n,NA,NA\nNaN,1e3,\n3, 4 ,z\n", []arrow.Type{arrow.INT64, arrow.FLOAT64, arrow.STRING}, []int{2, 1, 2}},
		{"labels stay strings", "x,label\n1,M\n2,R\n3,red soil\n", []arrow.Type{arrow.INT64, arrow.STRING}, []int{0, 0}},
		{"numeric-looking minority", "label\nA\nB\n3\n", []arrow.Type{arrow.STRING}, []int{0}},
		{"all empty is float", "a,b\n,1\n,2\n", []arrow.Type{arrow.FLOAT64, arrow.INT64}, []int{2, 0}},
		{"header only", "a,b\n", []arrow.Type{arrow.FLOAT64, arrow.FLOAT64}, nil},
		{"int overflow is float", "a\n99999999999999999999\n1\n", []arrow.Type{arrow.FLOAT64}, []int{0}},
		{"inf and huge", "a\n1e400\n-Inf\n2.5\n", []arrow.Type{arrow.FLOAT64}, []int{0}},
		{"quoted", "a,b\n\"1\",\"x, y\"\n2,\"multi\nline\"\n", []arrow.Type{arrow.INT64, arrow.STRING}, []int{0, 0}},
		{"bom", "\ufeffa\n1\n", []arrow.Type{arrow.INT64}, []int{0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, recs, err := readCSVString(t, c.text, nil)
			if err != nil {
				t.Fatal(err)
			}
			for j, want := range c.types {
				if got := s.Field(j).Type.ID(); got != want {
					t.Errorf("column %s: %v, want %v", s.Field(j).Name, got, want)
				}
				if c.nulls != nil && recs[0].Column(j).NullN() != c.nulls[j] {
					t.Errorf("column %s: %d nulls, want %d", s.Field(j).Name, recs[0].Column(j).NullN(), c.nulls[j])
				}
			}
		})
	}
	_, recs, _ := readCSVString(t, "a\n1e400\n-Inf\n2.5\n", nil)
	if v := recs[0].Column(0).(*array.Float64).Float64Values(); !math.IsInf(v[0], 1) || !math.IsInf(v[1], -1) || v[2] != 2.5 {
		t.Errorf("values %v", v)
	}
	s, _, _ := readCSVString(t, "\ufeffa\n1\n", nil)
	if s.Field(0).Name != "a" {
		t.Errorf("BOM kept in name %q", s.Field(0).Name)
	}
}

func TestCSVErrors(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"empty", "", "empty CSV file (a header row is required)"},
		{"bad number", "a,b\n1,x\n2,y\n3.5,z\nfoo,w\n", `t.csv: line 5, column a: cannot parse "foo" as a number`},
		{"bad first number", "a\n1.3cm\n1\n2\n", `t.csv: line 2, column a: cannot parse "1.3cm" as a number`},
		{"ragged", "a,b\n1,2\n3\n", "t.csv: record on line 3: wrong number of fields"},
		{"duplicate", "a,a\n1,2\n", "duplicate column name a"},
		{"empty name", "a,\n1,2\n", "header column 2 has an empty name"},
		{"name not UTF-8", "a,\xff\xfeb\n1,2\n", `t.csv: header column 2's name "\xff\xfeb" is not valid UTF-8`},
		{"bare quote", "a\nx\"y\n", "t.csv"},
		{"projection", "a,b\n1,2\n", `column "c" not found (columns: a, b)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cols []string
			if c.name == "projection" {
				cols = []string{"c"}
			}
			_, _, err := readCSVString(t, c.text, cols)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestCSVProjectionSkipsBadColumns(t *testing.T) {
	// The junk column is never parsed when it is projected away.
	s, recs, err := readCSVString(t, "junk,x\n1,1\nfoo,2\n", []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	if s.NumFields() != 1 || recs[0].Column(0).(*array.Int64).Value(1) != 2 {
		t.Fatalf("%v", s)
	}
}

// TestCSVBatches streams more rows than one batch: a column that turns
// float in a later batch widens the earlier batches, a column empty in the
// first batch is typed by the second, and a bad cell in a later batch is
// reported with its line number.
func TestCSVBatches(t *testing.T) {
	const n = csvMaxBatchRows + 100
	var b strings.Builder
	b.WriteString("i,late,s\n")
	for r := 0; r < n; r++ {
		iv := fmt.Sprint(r)
		late := ""
		if r >= csvMaxBatchRows {
			late = fmt.Sprint(r)
		}
		if r == n-1 {
			iv = "0.5"
		}
		fmt.Fprintf(&b, "%s,%s,s%d\n", iv, late, r%7)
	}
	s, recs, err := readCSVString(t, b.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].NumRows() != csvMaxBatchRows || recs[1].NumRows() != 100 {
		t.Fatalf("%d records", len(recs))
	}
	if s.Field(0).Type.ID() != arrow.FLOAT64 || s.Field(1).Type.ID() != arrow.INT64 || s.Field(2).Type.ID() != arrow.STRING {
		t.Fatalf("schema %v", s)
	}
	for _, r := range recs {
		if !r.Schema().Equal(s) {
			t.Fatalf("record schema %v", r.Schema())
		}
	}
	if v := recs[0].Column(0).(*array.Float64).Value(12345); v != 12345 {
		t.Errorf("widened value %v", v)
	}
	if recs[0].Column(1).NullN() != csvMaxBatchRows || recs[1].Column(1).(*array.Int64).Value(0) != csvMaxBatchRows {
		t.Errorf("late column wrong")
	}

	bad := strings.Replace(b.String(), fmt.Sprintf("\n%d,%d,", csvMaxBatchRows+50, csvMaxBatchRows+50), fmt.Sprintf("\n%d,oops,", csvMaxBatchRows+50), 1)
	_, _, err = readCSVString(t, bad, nil)
	want := fmt.Sprintf(`line %d, column late: cannot parse "oops" as a number`, csvMaxBatchRows+50+2)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

func TestCSVGzipByMagic(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte("a,b\n1,x\n"))
	zw.Close()
	p := filepath.Join(t.TempDir(), "data.csv") // .csv, but gzip inside
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	mem := checked(t)
	s, recs, err := ReadFile(p, ReadOptions{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer release(recs)
	if s.NumFields() != 2 || recs[0].NumRows() != 1 {
		t.Fatalf("%v", s)
	}
}
