package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/schemas"
	"github.com/forestd/forestd/scoring"
)

var update = flag.Bool("update", false, "rewrite the golden SVG files in testdata/")

const dataDir = "../../testdata"

// evil is a feature name that would run a script if it reached the
// markup unescaped.
const evil = `<img src=x onerror=alert(1)>`

// golden compares got with testdata/name (rewritten with -update), and
// checks that the SVG is well-formed XML in which the evil name, where it
// occurs, is text and never an element.
func golden(t *testing.T, name string, got template.HTML) {
	t.Helper()
	checkSVG(t, name, string(got))
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/report -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from the golden file (go test ./internal/report -update rewrites it after a deliberate change)\ngot:\n%s", name, got)
	}
}

// checkSVG parses the SVG as XML: it must be well-formed, have an <svg>
// root, and contain no element other than SVG's own (so no <img>).
func checkSVG(t *testing.T, name, s string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	allowed := map[string]bool{"svg": true, "title": true, "text": true, "rect": true, "g": true, "line": true,
		"polyline": true, "circle": true}
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", name, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if !allowed[se.Name.Local] {
				t.Fatalf("%s has a <%s> element", name, se.Name.Local)
			}
		}
	}
	if root != "svg" {
		t.Fatalf("%s: root element %q, want svg", name, root)
	}
}

// texts returns the character data of every element named el (and its
// children) in the SVG.
func texts(t *testing.T, s, el string) []string {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	var out []string
	depth := 0
	var cur strings.Builder
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		switch v := tok.(type) {
		case xml.StartElement:
			if v.Name.Local == el && depth == 0 {
				depth = 1
				cur.Reset()
			} else if depth > 0 {
				depth++
			}
		case xml.EndElement:
			if depth > 0 {
				depth--
				if depth == 0 {
					out = append(out, cur.String())
				}
			}
		case xml.CharData:
			if depth > 0 {
				cur.Write(v)
			}
		}
	}
}

// count returns the number of elements with the given name and class.
func count(t *testing.T, s, el, class string) int {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	n := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == el {
			for _, a := range se.Attr {
				if a.Name.Local == "class" && strings.Contains(" "+a.Value+" ", " "+class+" ") {
					n++
				}
			}
		}
	}
}

func TestBarsGolden(t *testing.T) {
	bars := []Bar{{"petal_width", 0.42}, {"sepal_length", 0.1}, {evil, 0.25}, {"noise", -0.03}, {"undefined", math.NaN()}}
	got, err := Bars(BarChart{Title: "impurity importance", Class: "importances", Bars: bars})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "bars.svg", got)
	if n := count(t, string(got), "rect", "bar"); n != len(bars) {
		t.Fatalf("%d bars for %d values", n, len(bars))
	}
	// the evil name is text: the first label drawn after the largest
	found := false
	for _, s := range texts(t, string(got), "text") {
		if s == evil {
			found = true
		}
	}
	if !found {
		t.Fatalf("the feature name %q is not drawn as text", evil)
	}
	// more bars than the limit: the rest are counted
	many := make([]Bar, 50)
	for i := range many {
		many[i] = Bar{Label: "f" + strconv.Itoa(i), Value: float64(i)}
	}
	got, err = Bars(BarChart{Title: "many", Bars: many, Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, string(got), "rect", "bar"); n != 10 || !strings.Contains(string(got), "… 40 more") {
		t.Fatalf("50 bars limited to 10: %d drawn", n)
	}
	// largest first
	if l := texts(t, string(got), "title")[1]; !strings.HasPrefix(l, "f49:") {
		t.Fatalf("first bar %q, want f49", l)
	}
}

func TestHeatmapGolden(t *testing.T) {
	l := projection.Topology{H: 3, W: 4, C: 2}
	v := make([]float64, 24)
	names := make([]string, 24)
	for j := range v {
		v[j] = float64(j%7) / 7
		names[j] = "px" + strconv.Itoa(j)
	}
	names[5] = evil
	got, err := Heatmap(HeatmapChart{Title: "projection-count importance", Layout: l, Values: v, Names: names})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "heatmap.svg", got)
	if n := count(t, string(got), "rect", "cell"); n != 24 {
		t.Fatalf("%d cells, want 24", n)
	}
	if _, err := Heatmap(HeatmapChart{Layout: l, Values: v[:23]}); err == nil {
		t.Fatal("23 values on a 24-cell layout: no error")
	}
}

func TestLinesGolden(t *testing.T) {
	got, err := Lines(LineChart{Title: "rows per second", X: []float64{-40, -30, -20, -10, 0}, XUnit: " s", YMin0: true,
		Series: []Series{{Name: "in", Y: []float64{100, 120, math.NaN(), 90, 110}}, {Name: "out", Y: []float64{90, 118, 80, 95, 100}}}})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "lines.svg", got)
	// the gap splits "in" into two polylines
	if n := count(t, string(got), "polyline", "series"); n != 3 {
		t.Fatalf("%d polylines, want 3 (in: two runs around the gap; out: one)", n)
	}
	got, err = Lines(LineChart{Title: "OOB error by version", X: []float64{1, 2, 3}, Points: true,
		Series: []Series{{Name: "OOB error", Y: []float64{0.2, 0.15, 0.12}}}})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "history.svg", got)
	if n := count(t, string(got), "circle", "point"); n != 3 {
		t.Fatalf("%d points, want 3", n)
	}
	empty, err := Lines(LineChart{Title: "nothing"})
	if err != nil || !strings.Contains(string(empty), "no data yet") {
		t.Fatalf("empty chart: %v %s", err, empty)
	}
	if _, err := Lines(LineChart{X: []float64{1}, Series: []Series{{Y: []float64{1, 2}}}}); err == nil {
		t.Fatal("series longer than x: no error")
	}
}

func TestConfusionAndResidualsGolden(t *testing.T) {
	got, err := Confusion([]string{"setosa", "versicolor", evil}, [][]int64{{50, 0, 0}, {0, 47, 3}, {0, 4, 46}})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "confusion.svg", got)
	if n := count(t, string(got), "rect", "cell"); n != 9 {
		t.Fatalf("%d cells, want 9", n)
	}
	pred := []float64{1, 2, 3, 4, 5, 6}
	act := []float64{1.5, 1.8, 3.3, 3.6, 5.2, 6.1}
	got, err = Residuals(pred, act)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "residuals.svg", got)
	if n := count(t, string(got), "circle", "point"); n != 6 {
		t.Fatalf("%d points, want 6", n)
	}
}

// testDependence builds a report table with schemas.BuildDependenceReport
// (as analyze --out and the daemon do) and reads it back.
func testDependence(t *testing.T, mem memory.Allocator) *Dependence {
	t.Helper()
	b := schemas.ReportBatch{Features: []schemas.ReportFeature{
		{Name: "x1", Group: -1, Test: schemas.ReportTest{Statistic: 0.41, PValue: 0.000999, AdjPValue: 0.004995, B: 0, N: 1000}},
		{Name: "x2", Group: 1, Test: schemas.ReportTest{Statistic: 0.01, PValue: 0.5, AdjPValue: 1, B: 49, N: 99}},
		{Name: evil, Group: 1, Test: schemas.ReportTest{Statistic: 0.02, PValue: 0.3, AdjPValue: 0.9, B: 29, N: 99}},
		{Name: "x4", Group: 0, Test: schemas.ReportTest{Statistic: math.NaN(), PValue: 1, AdjPValue: 1, B: 99, N: 99}},
		{Name: "x5", Group: -1, Test: schemas.ReportTest{Statistic: 0.2, PValue: 0.0096, AdjPValue: 0.0384, B: 3, N: 400}},
	}, Groups: []schemas.ReportGroup{{Features: []int{1, 2}, Kind: "mds", Test: schemas.ReportTest{Statistic: 0.3, PValue: 0.00999, AdjPValue: 0.01998, B: 0, N: 100}}}}
	rec, err := schemas.BuildDependenceReport(mem, schemas.ReportSpec{Stat: "gcor", Method: "mdc-bottomup", Alpha: 0.05, Adjust: "holm",
		Task: "classification", Seed: 7, Rows: 500}, b)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	d, err := ReadDependence([]arrow.Record{rec})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDependenceGolden(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d := testDependence(t, mem)
	if d.Stat != "gcor" || d.Method != "mdc-bottomup" || float64(d.Alpha) != 0.05 || d.Seed != 7 || d.Rows != 500 ||
		d.Adjust != "holm" || d.Task != "classification" || d.Features[4].Adjusted != 0.0384 || d.Groups[0].Adjusted != 0.01998 {
		t.Fatalf("metadata read back as %+v", d)
	}
	if len(d.Features) != 5 || len(d.Groups) != 1 || d.Groups[0].Name != "g1" ||
		strings.Join(d.Groups[0].Features, ",") != "x2,"+evil || !math.IsNaN(d.Features[3].Statistic) {
		t.Fatalf("report read back as %+v", d)
	}
	if m := d.Marginal(); len(m) != 2 || m[0].Name != "x1" || m[1].Name != "x5" {
		t.Fatalf("marginal %+v", m)
	}
	pv, err := PValues(d)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "pvalues.svg", pv)
	if n := count(t, string(pv), "rect", "bar"); n != 5 {
		t.Fatalf("%d p-value bars, want 5", n)
	}
	g, err := Groups(d)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "groups.svg", g)
	// 4 nodes (2 marginal, 2 in g1); edges: 2 to the label, 1 within g1,
	// 1 dashed from g1 to the label
	if n := count(t, string(g), "g", "node"); n != 4 {
		t.Fatalf("%d nodes, want 4", n)
	}
	if m, gr, j := count(t, string(g), "line", "marginal"), count(t, string(g), "line", "group"), count(t, string(g), "line", "joint"); m != 2 || gr != 1 || j != 1 {
		t.Fatalf("edges: %d marginal, %d group, %d joint; want 2, 1, 1", m, gr, j)
	}
}

func readData(t *testing.T, name string) []arrow.Record {
	t.Helper()
	_, recs, err := files.ReadFile(filepath.Join(dataDir, name), files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	return recs
}

func train(t *testing.T, recs []arrow.Record, label string, task frame.Task, p forest.Params) *scoring.Model {
	t.Helper()
	fr, err := frame.FromRecords(recs[0].Schema(), recs, frame.Options{Label: label, Task: task})
	if err != nil {
		t.Fatal(err)
	}
	f, err := forest.Train(fr, p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := scoring.Encode(f, 3, "report test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEvaluateMatchesScoring: the confusion matrix's diagonal and the
// residuals agree with scoring.Model.Evaluate on the same data (iris,
// classification; Boston housing, regression), so the pictures show the
// predictions forestd eval reports.
func TestEvaluateMatchesScoring(t *testing.T) {
	iris := readData(t, "iris.parquet")
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Seed, p.Threads = 30, 1, 1
	m := train(t, iris, "label", frame.TaskClassification, p)
	ev, err := Evaluate(m, iris, "label", 1)
	if err != nil {
		t.Fatal(err)
	}
	var diag, tot int64
	for a := range ev.Confusion {
		for q, n := range ev.Confusion[a] {
			tot += n
			if a == q {
				diag += n
			}
		}
	}
	if int(tot) != ev.Summary.Rows || math.Abs(float64(diag)/float64(tot)-ev.Summary.Accuracy) > 1e-12 {
		t.Fatalf("confusion matrix: %d of %d right; scoring.Evaluate: %d rows, accuracy %v", diag, tot, ev.Summary.Rows, ev.Summary.Accuracy)
	}
	if len(ev.Classes) != 3 {
		t.Fatalf("classes %v", ev.Classes)
	}
	c, err := ev.Chart()
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, "confusion", string(c))

	boston := readData(t, "boston_housing.parquet")
	p = forest.DefaultParams(frame.TaskRegression)
	p.Trees, p.Seed, p.Threads = 30, 1, 1
	m = train(t, boston, "target", frame.TaskRegression, p)
	ev, err = Evaluate(m, boston, "target", 1)
	if err != nil {
		t.Fatal(err)
	}
	var se float64
	for i := range ev.Pred {
		d := ev.Actual[i] - ev.Pred[i]
		se += d * d
	}
	if len(ev.Pred) != ev.Summary.Rows || math.Abs(math.Sqrt(se/float64(len(ev.Pred)))-ev.Summary.RMSE) > 1e-9 {
		t.Fatalf("residuals: %d rows, RMSE %v; scoring.Evaluate: %d rows, RMSE %v", len(ev.Pred), math.Sqrt(se/float64(len(ev.Pred))), ev.Summary.Rows, ev.Summary.RMSE)
	}
	if _, err := Evaluate(m, boston, "no_such_column", 1); err == nil {
		t.Fatal("a missing label column: no error")
	}
}

// TestModelHTML: the model report of a MORF model on a grid has a heatmap
// per importance kind with a cell per feature, the OOB table, and no
// script; with an evaluation, the confusion matrix.
func TestModelHTML(t *testing.T) {
	digits := readData(t, "digits.parquet")
	p := forest.DefaultParams(frame.TaskClassification)
	p.Forest, p.Layout, p.Width, p.Height = forest.KindMORF, "grid", 8, 8
	p.Trees, p.Seed, p.Threads = 10, 1, 2
	m := train(t, digits, "label", frame.TaskClassification, p)
	mf, err := DescribeModel(m, projection.Topology{})
	if err != nil {
		t.Fatal(err)
	}
	if mf.Layout == nil || mf.Layout.W != 8 || mf.Layout.H != 8 {
		t.Fatalf("layout %+v", mf.Layout)
	}
	ev, err := Evaluate(m, digits, "label", 2)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := ModelHTML(&b, mf, ModelOptions{Eval: ev, In: "digits.parquet"}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(strings.ToLower(page), "<script") || strings.Contains(page, "http://") && !strings.Contains(page, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Fatal("the report has a script or a link")
	}
	if n := strings.Count(page, `class="chart heatmap importances"`); n != len(mf.Importances) {
		t.Fatalf("%d heatmaps for %d importance kinds", n, len(mf.Importances))
	}
	if n := strings.Count(page, `<rect class="cell"`); n != 64*len(mf.Importances)+10*10 {
		t.Fatalf("%d cells; want 64 per heatmap and 100 in the confusion matrix", n)
	}
	for _, want := range []string{"OOB error", "strength", "correlation", "Confusion matrix", mf.ID} {
		if !strings.Contains(page, want) {
			t.Fatalf("the report lacks %q", want)
		}
	}
}

// TestDependenceHTML: the dependence report escapes the evil name and
// lists the adjusted p-values.
func TestDependenceHTML(t *testing.T) {
	d := testDependence(t, memory.NewGoAllocator())
	var b bytes.Buffer
	if err := DependenceHTML(&b, d); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "<img") || !strings.Contains(page, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Fatal("the evil feature name is not escaped")
	}
	for _, want := range []string{"adjusted (holm)", Num(d.Features[0].Adjusted), `class="chart pvalues"`, `class="chart groups"`} {
		if !strings.Contains(page, want) {
			t.Fatalf("the report lacks %q", want)
		}
	}
	// the note under the tables names the analysis' own procedure, and a
	// table without the settings (CSV) says so instead of showing zeros
	for _, c := range []struct {
		adjust    string
		alpha     float64
		want, not []string
	}{
		{"holm", 0.05, []string{"Adjusted (holm)", "step-down over the marginal screen", "<th>adjustment</th><td>holm</td>"}, []string{"Benjamini", "not record"}},
		{"bh", 0.05, []string{"Adjusted (bh)", "Benjamini–Hochberg"}, []string{"Holm", "not record"}},
		{"none", 0.05, []string{"Adjusted (none)", "per-test rule"}, []string{"Holm", "Benjamini"}},
		{"", math.NaN(), []string{"does not record the analysis' settings", "not recorded in this table", "<h1>Dependence report</h1>"}, []string{"Holm", "Benjamini", "<th>rows</th>", "<th>seed</th>", " with "}},
	} {
		dd := *d
		dd.Adjust, dd.Alpha = c.adjust, Number(c.alpha)
		var b bytes.Buffer
		if err := DependenceHTML(&b, &dd); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		for _, w := range c.want {
			if !strings.Contains(page, w) {
				t.Errorf("adjust %q: the report lacks %q", c.adjust, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(page, w) {
				t.Errorf("adjust %q: the report says %q", c.adjust, w)
			}
		}
	}
}

// TestReadDependenceWrongColumnType: a report table whose column has the
// wrong type is an error naming the column and its type.
func TestReadDependenceWrongColumnType(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec, err := schemas.BuildDependenceReport(mem, schemas.ReportSpec{Stat: "dcor", Method: "mdc-bottomup", Alpha: 0.05, Adjust: "holm", Task: "classification", Seed: 1, Rows: 10},
		schemas.ReportBatch{Features: []schemas.ReportFeature{{Name: "x1", Group: -1, Test: schemas.ReportTest{Statistic: 0.4, PValue: 0.01, AdjPValue: 0.01, N: 99}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	// one column's contents under another's name: name gets the numbers
	// of statistic, statistic the text of name
	sc := rec.Schema()
	iName, iStat := sc.FieldIndices(schemas.ColReportName)[0], sc.FieldIndices(schemas.ColReportStatistic)[0]
	for _, c := range []struct {
		at, from int
		want     string
	}{
		{iName, iStat, "column " + schemas.ColReportName + " is float64, want utf8"},
		{iStat, iName, "column " + schemas.ColReportStatistic + " is utf8, want a number"},
	} {
		fields, cols := slices.Clone(sc.Fields()), slices.Clone(rec.Columns())
		fields[c.at].Type, cols[c.at] = rec.Column(c.from).DataType(), rec.Column(c.from)
		md := sc.Metadata()
		bad := array.NewRecord(arrow.NewSchema(fields, &md), cols, rec.NumRows())
		_, err := ReadDependence([]arrow.Record{bad})
		bad.Release()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want it to say %q", err, c.want)
		}
	}
}

// TestEvaluateManyClasses: a label of 100 classes (class k has k+1 rows)
// gives a confusion matrix of MaxConfusionClasses rows and columns — the
// 39 classes with the most rows in their order, and one pooling the 61
// others — that still counts every row, so the chart stays small.
func TestEvaluateManyClasses(t *testing.T) {
	mem := memory.NewGoAllocator()
	xb, yb := array.NewFloat64Builder(mem), array.NewStringBuilder(mem)
	defer xb.Release()
	defer yb.Release()
	rows := 0
	for k := 0; k < 100; k++ {
		for r := 0; r <= k; r++ {
			xb.Append(float64(k) + 0.1*float64(r%3))
			yb.Append(fmt.Sprintf("c%03d", k))
			rows++
		}
	}
	x, y := xb.NewArray(), yb.NewArray()
	defer x.Release()
	defer y.Release()
	rec := array.NewRecord(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64}, {Name: "label", Type: arrow.BinaryTypes.String}}, nil), []arrow.Array{x, y}, int64(rows))
	defer rec.Release()
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Seed, p.Threads = 5, 1, 1
	m := train(t, []arrow.Record{rec}, "label", frame.TaskClassification, p)
	ev, err := Evaluate(m, []arrow.Record{rec}, "label", 1)
	if err != nil {
		t.Fatal(err)
	}
	k := MaxConfusionClasses
	if len(ev.Classes) != k || len(ev.Confusion) != k || ev.Pooled != 61 || ev.Classes[0] != "c061" || ev.Classes[k-2] != "c099" || ev.Classes[k-1] != "(61 other classes)" {
		t.Fatalf("%d classes (pooled %d): %v", len(ev.Classes), ev.Pooled, ev.Classes)
	}
	var tot, pooledActual int64
	for a := range ev.Confusion {
		for _, n := range ev.Confusion[a] {
			tot += n
			if a == k-1 {
				pooledActual += n
			}
		}
	}
	if int(tot) != rows || pooledActual != 61*62/2 {
		t.Fatalf("matrix counts %d rows (%d pooled), want %d (%d)", tot, pooledActual, rows, 61*62/2)
	}
	c, err := ev.Chart()
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, string(c), "rect", "cell"); n != k*k {
		t.Fatalf("%d cells, want %d", n, k*k)
	}
}

// TestModelHTMLDrfNoOOB: a drf forest is trained on bootstrap samples but
// carries no forest OOB estimates (σ_G and γ_G are chosen out of bag or by
// leave-one-out instead);
// the report must not claim it was trained without bootstrap or
// subsampling.
func TestModelHTMLDrfNoOOB(t *testing.T) {
	p := forest.DefaultParams(frame.TaskRegression)
	p.Forest, p.Sample = forest.KindDRF, "bootstrap"
	mf := ModelFacts{ID: "x", Kind: string(forest.KindDRF), Task: "regression", Label: "y0,y1", Trees: 3,
		Features: []string{"a"}, Targets: []string{"y0", "y1"}, Importances: map[string][]float64{}, Params: &p}
	var b bytes.Buffer
	if err := ModelHTML(&b, mf, ModelOptions{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "without bootstrap or subsampling") {
		t.Fatal("the drf report says the bootstrapped model was trained without bootstrap or subsampling")
	}
	if !strings.Contains(page, "drf") || !strings.Contains(page, "select_mse") {
		t.Fatal("the drf report does not say where its out-of-bag selection error is")
	}
}

// TestLinesIsolatedPoints: a value with gaps on both sides (a short burst
// of traffic between idle samples), or at an end next to a gap, is a
// polyline of one point, which a browser does not draw: it is drawn as a
// marker instead, with or without Points, and runs of two or more values
// stay lines.
func TestLinesIsolatedPoints(t *testing.T) {
	nan := math.NaN()
	x := []float64{-40, -30, -20, -10, 0}
	got, err := Lines(LineChart{Title: "latency (ms)", X: x, XUnit: " s", YMin0: true, Series: []Series{
		{Name: "burst", Y: []float64{nan, nan, 12, nan, nan}},
		{Name: "ends", Y: []float64{5, nan, 7, 8, nan}},
		{Name: "last", Y: []float64{nan, nan, nan, nan, 3}}}})
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	if n := count(t, s, "polyline", "series"); n != 1 {
		t.Errorf("%d polylines, want 1 (ends: 7, 8)", n)
	}
	if n := count(t, s, "circle", "point"); n != 3 {
		t.Errorf("%d points, want 3 (burst's 12, ends' 5, last's 3):\n%s", n, s)
	}
	for _, want := range []string{"<title>burst: 12</title>", "<title>ends: 5</title>", "<title>last: 3</title>"} {
		if !strings.Contains(s, want) {
			t.Errorf("no marker %s:\n%s", want, s)
		}
	}
	if strings.Contains(s, "<title>ends: 7</title>") {
		t.Error("a value of a run of two has a marker without Points")
	}
	if regexp.MustCompile(`points="[^" ]*"`).MatchString(s) {
		t.Errorf("a polyline of one point:\n%s", s)
	}
}

// TestLinesLegendWraps: the legend of a chart of many series (the status
// page's lag chart has a series per partition: 8 with the default stages)
// wraps onto more rows, the chart growing to hold them, so that every
// entry, its text included, stays inside the picture; a name longer than
// a row is shortened, whole in its tooltip.
func TestLinesLegendWraps(t *testing.T) {
	long := strings.Repeat("a-very-long-topic-name.", 6) + "/0"
	var series []Series
	for _, topic := range []string{"forestd.features", "forestd.training"} {
		for p := range 4 {
			series = append(series, Series{Name: fmt.Sprintf("%s/%d", topic, p), Y: []float64{1, 2}})
		}
	}
	series = append(series, Series{Name: long, Y: []float64{3, 4}})
	got, err := Lines(LineChart{Title: "consumer lag per partition (messages)", X: []float64{-1, 0}, Series: series})
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	var doc struct {
		W     float64 `xml:"width,attr"`
		H     float64 `xml:"height,attr"`
		Rects []struct {
			X float64 `xml:"x,attr"`
			Y float64 `xml:"y,attr"`
			W float64 `xml:"width,attr"`
		} `xml:"rect"`
		Texts []struct {
			X    float64 `xml:"x,attr"`
			Y    float64 `xml:"y,attr"`
			Text string  `xml:",chardata"`
		} `xml:"text"`
	}
	if err := xml.Unmarshal([]byte(s), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.H <= 218 {
		t.Errorf("height %v: the chart did not grow for the legend's rows", doc.H)
	}
	swatches := 0
	for _, r := range doc.Rects {
		if r.W != 10 {
			continue // the plot's frame
		}
		swatches++
		if r.X < 0 || r.X+10 > doc.W || r.Y < 0 || r.Y+10 > doc.H {
			t.Errorf("legend swatch at (%v, %v) outside %v×%v", r.X, r.Y, doc.W, doc.H)
		}
	}
	if swatches != len(series) {
		t.Fatalf("%d legend entries, want %d", swatches, len(series))
	}
	entries := 0
	for _, tx := range doc.Texts {
		name := strings.TrimSpace(tx.Text)
		if !strings.HasPrefix(name, "forestd.") && !strings.HasPrefix(name, "a-very") {
			continue // title, ticks
		}
		entries++
		if end := tx.X + 7*float64(len([]rune(name))); tx.X < 0 || end > doc.W || tx.Y > doc.H {
			t.Errorf("legend text %q at (%v, %v) ends at %v, outside %v×%v", name, tx.X, tx.Y, end, doc.W, doc.H)
		}
	}
	if entries != len(series) {
		t.Errorf("%d legend texts, want %d", entries, len(series))
	}
	if !strings.Contains(s, "<title>"+long+"</title>") {
		t.Error("the shortened name is not whole in its tooltip")
	}
}

// TestConfusionLongNamesBounded: each cell's tooltip named both classes in
// full, so 40 classes of 2,000-character names made a 6.4 MB matrix (a
// 10.7 MB report for a 2,000-class model with such names). The row and
// column labels keep the full names in their tooltips; the cells shorten
// them, so the matrix stays within a few hundred kB.
func TestConfusionLongNamesBounded(t *testing.T) {
	k := MaxConfusionClasses
	classes := make([]string, k)
	counts := make([][]int64, k)
	for i := range classes {
		classes[i] = fmt.Sprintf("c%02d", i) + strings.Repeat("y", 2000)
		counts[i] = make([]int64, k)
		counts[i][i] = 1
	}
	svg, err := Confusion(classes, counts)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(svg); n > 1<<20 {
		t.Fatalf("confusion matrix of %d classes with 2,000-character names: %d bytes", k, n)
	}
	if n := strings.Count(string(svg), classes[7]); n < 2 {
		t.Fatalf("class 7's full name appears %d times; want it on its row and column labels", n)
	}
}

// TestGroupsManyFeatures: a screen of 1,000 marginal features and 30
// groups draws the 40 marginal features of least p-value and the first 12
// groups, says how many more there are, and keeps every legend entry
// inside the picture.
func TestGroupsManyFeatures(t *testing.T) {
	d := &Dependence{Stat: "gcor", Method: "mdc-bottomup", Alpha: 0.05}
	for i := range 1000 {
		d.Features = append(d.Features, DependenceFeature{Name: fmt.Sprintf("m%04d", i), Group: -1, Kind: "marginal",
			PValue: float64(1000-i) / 1e6})
	}
	for g := range 30 {
		a, b := fmt.Sprintf("g%da", g), fmt.Sprintf("g%db", g)
		d.Features = append(d.Features, DependenceFeature{Name: a, Group: g + 1, Kind: "mds", PValue: 0.5},
			DependenceFeature{Name: b, Group: g + 1, Kind: "mds", PValue: 0.5})
		d.Groups = append(d.Groups, DependenceGroup{Name: fmt.Sprintf("g%d", g+1), Features: []string{a, b}, Kind: "mds", PValue: 1e-5})
	}
	svg, err := Groups(d)
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	if n := count(t, s, "g", "node"); n != 40+2*12 {
		t.Errorf("%d nodes, want 40 marginal and 24 group members", n)
	}
	if !strings.Contains(s, "m0999") || strings.Contains(s, ">m0000<") {
		t.Error("the marginal features drawn are not those of least p-value")
	}
	if !strings.Contains(s, "960 more marginal features and 18 more groups") {
		t.Error("no note of the features and groups left out")
	}
	var doc struct {
		W     float64 `xml:"width,attr"`
		H     float64 `xml:"height,attr"`
		Rects []struct {
			X float64 `xml:"x,attr"`
			Y float64 `xml:"y,attr"`
		} `xml:"rect"`
	}
	if err := xml.Unmarshal([]byte(s), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Rects) != 13 {
		t.Fatalf("%d legend entries, want 13", len(doc.Rects))
	}
	for _, r := range doc.Rects {
		if r.X < 0 || r.X+10 > doc.W || r.Y < 0 || r.Y+10 > doc.H {
			t.Errorf("legend entry at (%v, %v) outside %v×%v", r.X, r.Y, doc.W, doc.H)
		}
	}
}

// TestReadableHeadersAndParams: a confusion matrix of short class names
// stands its column labels upright over their columns (0, 1, 2 turned 45°
// read as glyphs), long names are still turned; the parameter table of a
// model report shows strings without JSON quotes.
func TestReadableHeadersAndParams(t *testing.T) {
	counts := [][]int64{{5, 1, 0}, {0, 6, 0}, {1, 0, 4}}
	svg, err := Confusion([]string{"0", "1", "2"}, counts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(svg), "rotate(") || !strings.Contains(string(svg), `text-anchor="middle">1<title>1</title>`) {
		t.Errorf("short class names turned or not centred:\n%s", svg)
	}
	svg, err = Confusion([]string{"Iris-setosa", "Iris-versicolor", "Iris-virginica"}, counts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), "rotate(-45") {
		t.Errorf("long class names not turned:\n%s", svg)
	}
	p := forest.DefaultParams(frame.TaskClassification)
	p.Criterion = "gini"
	kv := params(ModelFacts{Params: &p})
	got := map[string]string{}
	for _, e := range kv {
		got[e.K] = e.V
	}
	if got["criterion"] != "gini" || got["max_features"] != "default" || got["trees"] == "" {
		t.Errorf("params %v: want criterion gini, max_features default", got)
	}
	for k, v := range got {
		if strings.Contains(v, `"`) {
			t.Errorf("param %s = %s has JSON quotes", k, v)
		}
	}
}
