package frame_test

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/frame"
)

// A training frame from one Arrow record: a numeric feature with a null, a
// string-dictionary (categorical) feature, an id column that is excluded,
// and a string label with one null row, which is dropped and counted.
func ExampleFromRecords() {
	mem := memory.NewGoAllocator()

	width := array.NewFloat64Builder(mem)
	width.AppendValues([]float64{1.5, 0, 2.5, 3}, []bool{true, false, true, true})
	soil := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{
		IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String,
	}).(*array.BinaryDictionaryBuilder)
	for _, s := range []string{"red", "grey", "red", "damp"} {
		_ = soil.AppendString(s)
	}
	id := array.NewStringBuilder(mem)
	id.AppendValues([]string{"p1", "p2", "p3", "p4"}, nil)
	label := array.NewStringBuilder(mem)
	label.AppendValues([]string{"oak", "ash", "", "oak"}, []bool{true, true, false, true})

	schema := arrow.NewSchema([]arrow.Field{
		{Name: "width", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "soil", Type: soil.Type()},
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "species", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	cols := []arrow.Array{width.NewArray(), soil.NewArray(), id.NewArray(), label.NewArray()}
	rec := array.NewRecord(schema, cols, 4)
	defer rec.Release()
	for _, c := range cols {
		c.Release()
	}

	f, err := frame.FromRecords(schema, []arrow.Record{rec}, frame.Options{
		Label:   "species",
		Exclude: []string{"id"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("features:", f.Names)
	fmt.Println("width:", f.Cols[0])
	fmt.Println("soil levels:", f.Levels[1], "values:", f.Cols[1])
	fmt.Println("task:", f.Task, "classes:", f.Classes, "y:", f.Y)
	fmt.Println("rows:", f.NRows, "skipped:", f.SkippedLabels)

	// Without Exclude, the string id column is an error, not silently skipped.
	_, err = frame.FromRecords(schema, []arrow.Record{rec}, frame.Options{Label: "species"})
	fmt.Println(err)

	// Output:
	// features: [width soil]
	// width: [1.5 NaN 3]
	// soil levels: [damp grey red] values: [2 1 0]
	// task: classification classes: [ash oak] y: [1 0 1]
	// rows: 3 skipped: 1
	// frame: column id is utf8, numeric expected (exclude it, or dictionary-encode it to use it as a categorical feature)
}

// Scoring uses the model's feature names and category levels: columns are
// picked by name, and a level the model never saw becomes NaN.
func ExampleFeaturesFromRecords() {
	mem := memory.NewGoAllocator()
	soil := array.NewStringBuilder(mem)
	soil.AppendValues([]string{"red", "sand"}, nil)
	width := array.NewInt32Builder(mem)
	width.AppendValues([]int32{4, 5}, nil)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "soil", Type: arrow.BinaryTypes.String},
		{Name: "width", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	cols := []arrow.Array{soil.NewArray(), width.NewArray()}
	rec := array.NewRecord(schema, cols, 2)
	defer rec.Release()
	for _, c := range cols {
		c.Release()
	}

	f, err := frame.FeaturesFromRecords(schema, []arrow.Record{rec},
		[]string{"width", "soil"}, [][]string{nil, {"damp", "grey", "red"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Names, f.Cols)

	_, err = frame.FeaturesFromRecords(schema, []arrow.Record{rec}, []string{"width", "height"}, nil)
	fmt.Println(err)

	// Output:
	// [width soil] [[4 5] [2 NaN]]
	// frame: missing feature column height; the model needs 2 features: width, height (the input has: soil, width)
}

// ToRecord writes a frame back as Arrow: Float32 features and, because the
// class names are integers, an Int64 label.
func ExampleFrame_ToRecord() {
	f := &frame.Frame{
		Names: []string{"x1", "x2"},
		Cols:  [][]float32{{0.5, 1.5}, {-1, 2}},
		NRows: 2,

		LabelName: "label",
		Task:      frame.TaskClassification,
		Classes:   []string{"0", "1"},
		Y:         []int32{1, 0},
	}
	rec := f.ToRecord(memory.NewGoAllocator())
	defer rec.Release()
	fmt.Println(rec.Schema())
	fmt.Println(rec.Column(2))
	// Output:
	// schema:
	//   fields: 3
	//     - x1: type=float32
	//     - x2: type=float32
	//     - label: type=int64
	// [1 0]
}
