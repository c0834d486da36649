package operators

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/scoring"
)

// TestSelectRecords: the one record mapping behind forestd select, the
// daemon's select stage and the forestd_select processor — column order
// (keep, marginal, mapped, label, passthrough present), each column once,
// mapped values equal to the transform applied to the whole frame across
// several input records, and input errors that wrap scoring.ErrInput.
func TestSelectRecords(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	fr, err := synth.Generate(synth.XOR3, synth.Options{N: 300, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	col := func(name string) int { return slices.Index(fr.Names, name) }
	plan := fdm.Plan{Marginal: []int{col("m0")}, Groups: [][]int{{col("x2a_0"), col("x2a_1")}}}
	tr, err := fdm.Fit(fr, plan, fdm.Options{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	rec := fr.ToRecord(mem)
	defer rec.Release()
	recs := []arrow.Record{rec.NewSlice(0, 100), rec.NewSlice(100, 300)}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	schema, out, err := SelectRecords(tr, rec.Schema(), recs, SelectOptions{Keep: []string{"y", "m0"}, Label: "y",
		Passthrough: []string{"absent", "m0", "x2a_0"}, Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, r := range out {
			r.Release()
		}
	}()
	var names []string
	for _, f := range schema.Fields() {
		names = append(names, f.Name)
	}
	want := append(append([]string{"y", "m0"}, tr.Names()[1:]...), "x2a_0")
	if !slices.Equal(names, want) {
		t.Fatalf("columns %v, want %v", names, want)
	}
	if len(out) != 2 || out[0].NumRows() != 100 || out[1].NumRows() != 200 {
		t.Fatalf("%d records", len(out))
	}
	mapped, err := tr.Columns(fr)
	if err != nil {
		t.Fatal(err)
	}
	for k := range mapped {
		row := 0
		for _, r := range out {
			c := r.Column(2 + k).(*array.Float64)
			for i := 0; i < c.Len(); i++ {
				if c.Value(i) != mapped[k][row] {
					t.Fatalf("mapped column %d row %d: %v, offline %v", k, row, c.Value(i), mapped[k][row])
				}
				row++
			}
		}
	}
	for _, o := range []SelectOptions{{Keep: []string{"id"}}, {Label: "label"}} {
		if _, _, err := SelectRecords(tr, rec.Schema(), recs, o); !errors.Is(err, scoring.ErrInput) {
			t.Fatalf("%+v: %v", o, err)
		}
	}
	// a kept column or the label named like a mapped column: refused
	// naming it (CheckSelectNames, which a processor calls at start)
	out0 := tr.Groups[0].Outputs[0].Name
	for _, o := range []SelectOptions{{Keep: []string{"m0", out0}}, {Label: out0}} {
		want := fmt.Sprintf("column %q is named like a mapped column of the mapping (group 1)", out0)
		if err := CheckSelectNames(tr, o); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%+v: %v", o, err)
		}
		if _, _, err := SelectRecords(tr, rec.Schema(), recs, o); !errors.Is(err, scoring.ErrInput) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%+v: %v", o, err)
		}
	}
	noPair := array.NewRecord(arrow.NewSchema(rec.Schema().Fields()[:1], nil), rec.Columns()[:1], rec.NumRows())
	defer noPair.Release()
	if _, _, err := SelectRecords(tr, noPair.Schema(), []arrow.Record{noPair}, SelectOptions{}); !errors.Is(err, scoring.ErrInput) {
		t.Fatalf("batch without the pair: %v", err)
	}
}

// TestSelectRecordsNil: a nil mapping (Analysis.Transform when the search
// selected nothing), a nil schema and a nil record are input errors, as
// the package documents for every error; the nil mapping was a nil
// pointer panic.
func TestSelectRecordsNil(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64}}, nil)
	tr := &fdm.Transform{}
	for name, call := range map[string]func() error{
		"nil mapping": func() error { _, _, err := SelectRecords(nil, schema, nil, SelectOptions{}); return err },
		"nil schema":  func() error { _, _, err := SelectRecords(tr, nil, nil, SelectOptions{}); return err },
		"nil record":  func() error { _, _, err := SelectRecords(tr, schema, []arrow.Record{nil}, SelectOptions{}); return err },
	} {
		if err := call(); !errors.Is(err, scoring.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
}
