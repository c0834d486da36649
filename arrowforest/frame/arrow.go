package frame

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/float16"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/internal/colname"
)

// Options says how FromRecords turns Arrow columns into a training frame.
type Options struct {
	// Label names the label column. Empty means the frame has no label.
	Label string

	// Targets, instead of Label, names two or more numeric columns that
	// are learnt together as a multi-output regression target
	// (Frame.Targets): a row with a null or NaN in any of them is dropped
	// and counted in SkippedLabels.
	Targets []string

	// Task overrides how the label is learnt (see Task). TaskRegression
	// with a string or string-dictionary label is an error.
	Task Task

	// Features lists the feature columns explicitly, in this order. When
	// empty, every column except Label and the Exclude list is a feature,
	// in schema order.
	Features []string

	// Exclude lists columns that are not features (ids, keys, timestamps,
	// free text). Every name must exist in the schema.
	Exclude []string

	// Levels holds category levels from a trained model, by feature name.
	// When set for a feature, string values are mapped to their position
	// in this list and a value not in it becomes NaN; a plain Utf8 column
	// is then accepted too.
	Levels map[string][]string
}

var nan32 = float32(math.NaN())

// FromRecords builds a training (or labelled evaluation) frame from Arrow
// records that all share schema.
//
// # Feature columns
//
// Usable feature types are every signed and unsigned integer type,
// float16/32/64, bool (false = 0, true = 1) and dictionary columns. A
// dictionary with numeric values contributes the value; a dictionary with
// string values is a categorical feature whose cells hold the level index
// (0..k-1) as a float32, with the levels sorted lexicographically (byte
// order) over the values that occur in recs, and the level list stored in
// Frame.Levels. Options.Levels overrides the levels (unseen values become
// NaN) and also admits plain Utf8 columns.
//
// Every other type is an error naming the column, whether the column was
// listed in Options.Features or picked up implicitly: when Features is
// empty, every column except the label and Options.Exclude must be usable.
// In particular a plain string column is never silently skipped (a
// numeric-looking text column is a common export mistake); exclude it or
// dictionary-encode it.
//
// Nulls and NaNs become NaN. Integers wider than 24 bits lose precision in
// float32.
//
// # Label
//
// Integer, string, bool and dictionary labels are classification; classes
// are the distinct values that occur, ordered numerically (integers, and
// numeric dictionary values), lexicographically (strings) or false before
// true (bool), and named by their string form. A floating-point label is
// regression unless opts.Task is TaskClassification, in which case its
// distinct values are classes ordered numerically and named with
// strconv.FormatFloat(v, 'g', -1, 64). An integer label with TaskRegression
// is a regression target. Rows whose label is null, or NaN, are dropped
// from the whole frame and counted in SkippedLabels; an infinite regression
// target is an error. Options.Targets reads several numeric (integer,
// float or bool) columns as one multi-output regression target the same
// way (see Frame.SetTargets).
func FromRecords(schema *arrow.Schema, recs []arrow.Record, opts Options) (*Frame, error) {
	if schema == nil {
		return nil, errors.New("frame: nil schema")
	}
	if err := checkRecords(schema, recs); err != nil {
		return nil, err
	}

	var labelIdx []int
	if opts.Label != "" {
		if len(opts.Targets) > 0 {
			return nil, errors.New("frame: a label and targets exclude each other")
		}
		j, err := fieldIndex(schema, opts.Label)
		if err != nil {
			return nil, fmt.Errorf("frame: label %w", err)
		}
		labelIdx = append(labelIdx, j)
	}
	if len(opts.Targets) > 0 {
		if len(opts.Targets) < 2 {
			return nil, fmt.Errorf("frame: %d target columns; use Label for one", len(opts.Targets))
		}
		if opts.Task == TaskClassification {
			return nil, errors.New("frame: several target columns are a regression target, not classes")
		}
		for _, name := range opts.Targets {
			j, err := fieldIndex(schema, name)
			if err != nil {
				return nil, fmt.Errorf("frame: target %w", err)
			}
			if slices.Contains(labelIdx, j) {
				return nil, fmt.Errorf("frame: target %s listed twice", name)
			}
			labelIdx = append(labelIdx, j)
		}
	}

	featIdx, err := selectFeatures(schema, labelIdx, opts)
	if err != nil {
		return nil, err
	}
	if len(featIdx) == 0 {
		return nil, errors.New("frame: no feature columns")
	}

	f := &Frame{}
	nIn := 0
	for _, r := range recs {
		nIn += int(r.NumRows())
	}
	var chunkKeep [][]int32
	nOut := nIn
	var targets []float64 // multi-output: nOut×q row-major
	switch {
	case len(opts.Targets) > 0:
		var valid []bool
		if targets, valid, err = decodeTargets(schema, recs, labelIdx, nIn); err != nil {
			return nil, err
		}
		chunkKeep, nOut = keepIndices(recs, valid)
		f.SkippedLabels = nIn - nOut
	case len(labelIdx) == 1:
		f.LabelName = opts.Label
		var valid []bool
		valid, err = decodeLabel(f, schema.Field(labelIdx[0]), chunksOf(recs, labelIdx[0]), nIn, opts.Task)
		if err != nil {
			return nil, err
		}
		chunkKeep, nOut = keepIndices(recs, valid)
		f.SkippedLabels = nIn - nOut
	}

	names := make([]string, len(featIdx))
	levels := make([][]string, len(featIdx))
	for k, j := range featIdx {
		names[k] = schema.Field(j).Name
		if lv, ok := opts.Levels[names[k]]; ok {
			levels[k] = slices.Clone(lv)
			if levels[k] == nil {
				levels[k] = []string{}
			}
		}
	}
	cols, outLevels, err := decodeFeatures(schema, recs, featIdx, levels, true, chunkKeep, nOut)
	if err != nil {
		return nil, err
	}
	f.Names = names
	f.Cols = cols
	f.Levels = outLevels
	f.NRows = nOut
	if targets != nil {
		if err := f.SetTargets(opts.Targets, targets); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// decodeTargets reads the target columns idx as regression labels and
// returns their values for the rows valid in all of them (rows × q,
// row-major) and which rows those are.
func decodeTargets(schema *arrow.Schema, recs []arrow.Record, idx []int, n int) ([]float64, []bool, error) {
	q := len(idx)
	valid := make([]bool, n)
	for i := range valid {
		valid[i] = true
	}
	full := make([][]float64, q) // per target, one value per input row
	for o, j := range idx {
		var tmp Frame
		v, err := decodeLabel(&tmp, schema.Field(j), chunksOf(recs, j), n, TaskRegression)
		if err != nil {
			return nil, nil, err
		}
		col, k := make([]float64, n), 0
		for i, ok := range v {
			if ok {
				col[i] = tmp.YReg[k]
				k++
			} else {
				valid[i] = false
			}
		}
		full[o] = col
	}
	var y []float64
	for i, ok := range valid {
		if ok {
			for o := 0; o < q; o++ {
				y = append(y, full[o][i])
			}
		}
	}
	if y == nil {
		y = []float64{}
	}
	return y, valid, nil
}

// FeaturesFromRecords builds a scoring frame holding exactly the named
// feature columns, in that order, e.g. the features a model was trained
// on. levels, when non-nil, has one entry per name: the model's category
// levels for a categorical feature (values not among them become NaN), or
// nil for a numeric one. A missing column is an error naming it and listing
// what the model needs; a column whose type is not usable (see FromRecords)
// is an error naming it. The frame has no label.
func FeaturesFromRecords(schema *arrow.Schema, recs []arrow.Record, names []string, levels [][]string) (*Frame, error) {
	if schema == nil {
		return nil, errors.New("frame: nil schema")
	}
	if len(names) == 0 {
		return nil, errors.New("frame: no feature names given")
	}
	if levels != nil && len(levels) != len(names) {
		return nil, fmt.Errorf("frame: %d level lists for %d features", len(levels), len(names))
	}
	if err := checkRecords(schema, recs); err != nil {
		return nil, err
	}
	idx := make([]int, len(names))
	var missing []string
	for k, name := range names {
		j, err := fieldIndex(schema, name)
		if err != nil {
			if len(schema.FieldIndices(name)) > 1 {
				return nil, fmt.Errorf("frame: feature %w", err)
			}
			missing = append(missing, name)
			continue
		}
		idx[k] = j
	}
	if len(missing) > 0 {
		have := fieldNames(schema)
		return nil, missingf("frame: missing feature column%s %s; the model needs %d features: %s (the input has: %s)%s",
			plural(len(missing)), strings.Join(missing, ", "), len(names), colname.List(names), colname.List(have), colname.SuggestAll(missing, have))
	}
	lv := make([][]string, len(names))
	for k := range levels {
		if levels[k] != nil {
			lv[k] = slices.Clone(levels[k])
		}
	}
	for k, j := range idx {
		fl := schema.Field(j)
		if err := checkFeatureType(fl, lv[k] != nil); err != nil {
			return nil, err
		}
		if lv[k] == nil && kindOf(fl.Type) == kindStrDict {
			return nil, typef("frame: column %s is %s, but the model has no category levels for it (numeric expected)", fl.Name, fl.Type)
		}
	}
	n := 0
	for _, r := range recs {
		n += int(r.NumRows())
	}
	cols, outLevels, err := decodeFeatures(schema, recs, idx, lv, false, nil, n)
	if err != nil {
		return nil, err
	}
	return &Frame{Names: slices.Clone(names), Cols: cols, Levels: outLevels, NRows: n}, nil
}

// ToRecord converts the frame into one Arrow record: every feature as a
// non-nullable Float32 column named as in Names (a missing value stays a
// NaN value, not a null; a categorical feature holds its level index and
// the level names are not written), followed, when the frame has a label,
// by the label column named LabelName ("label" if empty): the class name
// as Utf8 for classification, or Int64 when every class name is a
// canonical decimal integer (so integer-labelled data round-trips as
// integers), and Float64 for regression. The caller releases the record.
func (f *Frame) ToRecord(mem memory.Allocator) arrow.Record {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	n := f.NRows
	fields := make([]arrow.Field, 0, len(f.Names)+1)
	cols := make([]arrow.Array, 0, len(f.Names)+1)
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for j, name := range f.Names {
		fields = append(fields, arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float32})
		cols = append(cols, fixedArray(mem, arrow.PrimitiveTypes.Float32, arrow.Float32Traits.CastToBytes(f.Cols[j][:n]), n))
	}
	if f.HasLabel() {
		name := f.LabelName
		if name == "" {
			name = "label"
		}
		switch {
		case f.Y != nil:
			if ints, ok := classInts(f.Classes); ok {
				v := make([]int64, n)
				for i, y := range f.Y[:n] {
					v[i] = ints[y]
				}
				fields = append(fields, arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64})
				cols = append(cols, fixedArray(mem, arrow.PrimitiveTypes.Int64, arrow.Int64Traits.CastToBytes(v), n))
			} else {
				b := array.NewStringBuilder(mem)
				b.Reserve(n)
				for _, y := range f.Y[:n] {
					b.Append(f.Classes[y])
				}
				fields = append(fields, arrow.Field{Name: name, Type: arrow.BinaryTypes.String})
				cols = append(cols, b.NewArray())
				b.Release()
			}
		default:
			fields = append(fields, arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float64})
			cols = append(cols, fixedArray(mem, arrow.PrimitiveTypes.Float64, arrow.Float64Traits.CastToBytes(f.YReg[:n]), n))
		}
	}
	return array.NewRecord(arrow.NewSchema(fields, nil), cols, int64(n))
}

// fixedArray copies raw little-endian values into a new fixed-width array
// without nulls.
func fixedArray(mem memory.Allocator, dt arrow.DataType, raw []byte, n int) arrow.Array {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(len(raw))
	copy(buf.Bytes(), raw)
	data := array.NewData(dt, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	buf.Release()
	a := array.MakeFromData(data)
	data.Release()
	return a
}

// classInts reports whether every class name is a canonical decimal
// integer and returns the values.
func classInts(classes []string) ([]int64, bool) {
	if len(classes) == 0 {
		return nil, false
	}
	out := make([]int64, len(classes))
	for k, c := range classes {
		v, err := strconv.ParseInt(c, 10, 64)
		if err != nil || strconv.FormatInt(v, 10) != c {
			return nil, false
		}
		out[k] = v
	}
	return out, true
}

// ---------------------------------------------------------------------------
// schema and column selection

func checkRecords(schema *arrow.Schema, recs []arrow.Record) error {
	for r, rec := range recs {
		if rec == nil {
			return fmt.Errorf("frame: record %d is nil", r)
		}
		rs := rec.Schema()
		if rs.NumFields() != schema.NumFields() {
			return fmt.Errorf("frame: record %d has %d columns, schema has %d", r, rs.NumFields(), schema.NumFields())
		}
		for j := 0; j < schema.NumFields(); j++ {
			a, b := rs.Field(j), schema.Field(j)
			if a.Name != b.Name || !arrow.TypeEqual(a.Type, b.Type) {
				return fmt.Errorf("frame: record %d column %d is %s %s, schema says %s %s", r, j, a.Name, a.Type, b.Name, b.Type)
			}
		}
	}
	return nil
}

func fieldIndex(schema *arrow.Schema, name string) (int, error) {
	idx := schema.FieldIndices(name)
	switch len(idx) {
	case 0:
		return -1, missingf("%s", colname.NotFound("", name, fieldNames(schema)))
	case 1:
		return idx[0], nil
	}
	return -1, fmt.Errorf("column name %s is ambiguous: it occurs %d times", name, len(idx))
}

func fieldNames(schema *arrow.Schema) []string {
	out := make([]string, schema.NumFields())
	for j := range out {
		out[j] = schema.Field(j).Name
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func selectFeatures(schema *arrow.Schema, labelIdx []int, opts Options) ([]int, error) {
	excluded := make(map[int]bool, len(opts.Exclude))
	for _, name := range opts.Exclude {
		j, err := fieldIndex(schema, name)
		if err != nil {
			return nil, fmt.Errorf("frame: excluded %w", err)
		}
		excluded[j] = true
	}
	var idx []int
	if len(opts.Features) > 0 {
		seen := make(map[int]bool, len(opts.Features))
		for _, name := range opts.Features {
			j, err := fieldIndex(schema, name)
			switch {
			case err != nil:
				return nil, fmt.Errorf("frame: feature %w", err)
			case slices.Contains(labelIdx, j):
				return nil, fmt.Errorf("frame: column %s is the label and cannot be a feature", name)
			case excluded[j]:
				return nil, fmt.Errorf("frame: column %s is both a feature and excluded", name)
			case seen[j]:
				return nil, fmt.Errorf("frame: feature %s listed twice", name)
			}
			seen[j] = true
			idx = append(idx, j)
		}
	} else {
		// Features are known by name (a model maps scoring columns by
		// name), so two columns of one name cannot both be features.
		first := make(map[string]int, schema.NumFields())
		for j := 0; j < schema.NumFields(); j++ {
			if !slices.Contains(labelIdx, j) && !excluded[j] {
				name := schema.Field(j).Name
				if k, dup := first[name]; dup {
					return nil, fmt.Errorf("frame: column name %s occurs twice (columns %d and %d): features are known by name", name, k+1, j+1)
				}
				first[name] = j
				idx = append(idx, j)
			}
		}
	}
	for _, j := range idx {
		fl := schema.Field(j)
		if !utf8.ValidString(fl.Name) { // a model names its features in UTF-8
			return nil, fmt.Errorf("frame: column name %q (column %d) is not valid UTF-8", fl.Name, j+1)
		}
		_, hasLevels := opts.Levels[fl.Name]
		if err := checkFeatureType(fl, hasLevels); err != nil {
			return nil, err
		}
	}
	return idx, nil
}

// featureKind classifies a usable feature type.
type featureKind int

const (
	kindUnusable featureKind = iota
	kindNumeric              // integers, floats, bool
	kindNumDict              // dictionary with numeric values
	kindStrDict              // dictionary with string values
	kindString               // plain string (only with levels)
)

func kindOf(dt arrow.DataType) featureKind {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL:
		return kindNumeric
	case arrow.STRING, arrow.LARGE_STRING:
		return kindString
	case arrow.DICTIONARY:
		dt := dt.(*arrow.DictionaryType)
		switch kindOf(dt.ValueType) {
		case kindNumeric:
			return kindNumDict
		case kindString:
			return kindStrDict
		}
	}
	return kindUnusable
}

func checkFeatureType(fl arrow.Field, hasLevels bool) error {
	switch kindOf(fl.Type) {
	case kindNumeric, kindStrDict:
		return nil
	case kindNumDict:
		if hasLevels {
			return typef("frame: column %s is %s, but the model expects a categorical (string) feature", fl.Name, fl.Type)
		}
		return nil
	case kindString:
		if hasLevels {
			return nil
		}
		return typef("frame: column %s is %s, numeric expected (exclude it, or dictionary-encode it to use it as a categorical feature)", fl.Name, fl.Type)
	}
	if hasLevels {
		return typef("frame: column %s is %s, but the model expects a categorical (string) feature", fl.Name, fl.Type)
	}
	return typef("frame: column %s is %s, numeric expected (exclude it to train without it)", fl.Name, fl.Type)
}

func chunksOf(recs []arrow.Record, j int) []arrow.Array {
	out := make([]arrow.Array, len(recs))
	for r, rec := range recs {
		out[r] = rec.Column(j)
	}
	return out
}

// keepIndices turns a global validity mask into per-record lists of kept
// local row indices (nil for a record that keeps every row).
func keepIndices(recs []arrow.Record, valid []bool) ([][]int32, int) {
	keep := make([][]int32, len(recs))
	total, base := 0, 0
	for r, rec := range recs {
		n := int(rec.NumRows())
		v := valid[base : base+n]
		cnt := 0
		for _, ok := range v {
			if ok {
				cnt++
			}
		}
		if cnt < n {
			k := make([]int32, 0, cnt)
			for i, ok := range v {
				if ok {
					k = append(k, int32(i))
				}
			}
			keep[r] = k
		}
		total += cnt
		base += n
	}
	return keep, total
}

// ---------------------------------------------------------------------------
// labels

// labelValues is the label column flattened over all records.
type labelValues struct {
	kind  int // lvInt, lvFloat, lvString, lvBool
	ints  []int64
	flts  []float64
	strs  []string
	valid []bool
}

const (
	lvInt = iota
	lvFloat
	lvString
	lvBool
)

func decodeLabel(f *Frame, fl arrow.Field, chunks []arrow.Array, n int, task Task) ([]bool, error) {
	lv := labelValues{valid: make([]bool, n)}
	base := fl.Type
	if dt, ok := base.(*arrow.DictionaryType); ok {
		base = dt.ValueType
	}
	switch base.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		lv.kind = lvInt
		lv.ints = make([]int64, n)
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		lv.kind = lvFloat
		lv.flts = make([]float64, n)
	case arrow.STRING, arrow.LARGE_STRING:
		lv.kind = lvString
		lv.strs = make([]string, n)
	case arrow.BOOL:
		lv.kind = lvBool
		lv.ints = make([]int64, n)
	default:
		return nil, typef("frame: label column %s is %s; want an integer, float, string, bool or dictionary column", fl.Name, fl.Type)
	}
	if lv.kind == lvString && task == TaskRegression {
		return nil, typef("frame: label column %s is %s and cannot be a regression target", fl.Name, fl.Type)
	}
	off := 0
	for _, c := range chunks {
		if err := lv.fill(fl.Name, c, off); err != nil {
			return nil, err
		}
		off += c.Len()
	}

	regression := task == TaskRegression || (task == TaskAuto && lv.kind == lvFloat)
	if regression {
		f.Task = TaskRegression
		y := make([]float64, 0, n)
		for i, ok := range lv.valid {
			if !ok {
				continue
			}
			var v float64
			if lv.kind == lvFloat {
				v = lv.flts[i]
			} else {
				v = float64(lv.ints[i])
			}
			if math.IsNaN(v) {
				lv.valid[i] = false
				continue
			}
			if math.IsInf(v, 0) {
				return nil, fmt.Errorf("frame: label column %s: row %d has infinite target %v", fl.Name, i, v)
			}
			y = append(y, v)
		}
		f.YReg = y
		return lv.valid, nil
	}

	f.Task = TaskClassification
	y := make([]int32, 0, n)
	switch lv.kind {
	case lvInt, lvBool:
		var vals []int64
		for i, ok := range lv.valid {
			if ok {
				vals = append(vals, lv.ints[i])
			}
		}
		classes := sortedUnique(vals)
		f.Classes = make([]string, len(classes))
		for k, c := range classes {
			if lv.kind == lvBool {
				f.Classes[k] = strconv.FormatBool(c != 0)
			} else {
				f.Classes[k] = strconv.FormatInt(c, 10)
			}
		}
		for i, ok := range lv.valid {
			if ok {
				k, _ := slices.BinarySearch(classes, lv.ints[i])
				y = append(y, int32(k))
			}
		}
	case lvFloat:
		var vals []float64
		for i, ok := range lv.valid {
			if !ok {
				continue
			}
			if math.IsNaN(lv.flts[i]) {
				lv.valid[i] = false
				continue
			}
			vals = append(vals, lv.flts[i])
		}
		classes := sortedUnique(vals)
		f.Classes = make([]string, len(classes))
		for k, c := range classes {
			f.Classes[k] = strconv.FormatFloat(c, 'g', -1, 64)
		}
		for i, ok := range lv.valid {
			if ok {
				k, _ := slices.BinarySearch(classes, lv.flts[i])
				y = append(y, int32(k))
			}
		}
	case lvString:
		index := map[string]int32{}
		for i, ok := range lv.valid {
			if ok {
				if _, seen := index[lv.strs[i]]; !seen {
					index[lv.strs[i]] = 0
				}
			}
		}
		f.Classes = make([]string, 0, len(index))
		for s := range index {
			f.Classes = append(f.Classes, s)
		}
		sort.Strings(f.Classes)
		for k, s := range f.Classes {
			if !utf8.ValidString(s) { // a model names its classes in UTF-8
				return nil, fmt.Errorf("frame: label column %s: class %q is not valid UTF-8", fl.Name, s)
			}
			index[s] = int32(k)
		}
		for i, ok := range lv.valid {
			if ok {
				y = append(y, index[lv.strs[i]])
			}
		}
	}
	if len(f.Classes) > math.MaxInt32 {
		return nil, fmt.Errorf("frame: label column %s has too many classes", fl.Name)
	}
	f.Y = y
	return lv.valid, nil
}

func sortedUnique[T int64 | float64](v []T) []T {
	s := slices.Clone(v)
	slices.Sort(s)
	return slices.Compact(s)
}

// fill decodes one chunk of the label column into rows off.. of lv.
func (lv *labelValues) fill(name string, c arrow.Array, off int) error {
	n := c.Len()
	valid := lv.valid[off : off+n]
	if bm, bo := validity(c); bm == nil {
		for i := range valid {
			valid[i] = true
		}
	} else {
		for i := range valid {
			valid[i] = bitutil.BitIsSet(bm, bo+i)
		}
	}
	if d, ok := c.(*array.Dictionary); ok {
		// Decode the dictionary values once, then gather by index.
		dict := d.Dictionary()
		sub := labelValues{kind: lv.kind, valid: make([]bool, dict.Len())}
		switch lv.kind {
		case lvInt, lvBool:
			sub.ints = make([]int64, dict.Len())
		case lvFloat:
			sub.flts = make([]float64, dict.Len())
		case lvString:
			sub.strs = make([]string, dict.Len())
		}
		if err := sub.fill(name, dict, 0); err != nil {
			return err
		}
		idx, err := indexValues(d.Indices())
		if err != nil {
			return fmt.Errorf("frame: label column %s: %w", name, err)
		}
		for i, ok := range valid {
			if !ok {
				continue
			}
			k := idx[i]
			if k < 0 || k >= int64(len(sub.valid)) {
				return fmt.Errorf("frame: label column %s: dictionary index %d out of range [0,%d)", name, k, len(sub.valid))
			}
			if !sub.valid[k] {
				valid[i] = false
				continue
			}
			switch lv.kind {
			case lvInt, lvBool:
				lv.ints[off+i] = sub.ints[k]
			case lvFloat:
				lv.flts[off+i] = sub.flts[k]
			case lvString:
				lv.strs[off+i] = sub.strs[k]
			}
		}
		return nil
	}
	switch a := c.(type) {
	case *array.Int8:
		widenInt(lv.ints[off:off+n], a.Int8Values())
	case *array.Int16:
		widenInt(lv.ints[off:off+n], a.Int16Values())
	case *array.Int32:
		widenInt(lv.ints[off:off+n], a.Int32Values())
	case *array.Int64:
		copy(lv.ints[off:off+n], a.Int64Values())
	case *array.Uint8:
		widenInt(lv.ints[off:off+n], a.Uint8Values())
	case *array.Uint16:
		widenInt(lv.ints[off:off+n], a.Uint16Values())
	case *array.Uint32:
		widenInt(lv.ints[off:off+n], a.Uint32Values())
	case *array.Uint64:
		for i, v := range a.Uint64Values() {
			if valid[i] && v > math.MaxInt64 {
				return fmt.Errorf("frame: label column %s: value %d does not fit in int64", name, v)
			}
			lv.ints[off+i] = int64(v)
		}
	case *array.Float16:
		dst := lv.flts[off : off+n]
		for i, v := range a.Values() {
			dst[i] = float64(v.Float32())
		}
	case *array.Float32:
		dst := lv.flts[off : off+n]
		for i, v := range a.Float32Values() {
			dst[i] = float64(v)
		}
	case *array.Float64:
		copy(lv.flts[off:off+n], a.Float64Values())
	case *array.Boolean:
		dst := lv.ints[off : off+n]
		for i := range dst {
			if a.Value(i) {
				dst[i] = 1
			} else {
				dst[i] = 0
			}
		}
	case *array.String:
		dst := lv.strs[off : off+n]
		for i := range dst {
			if valid[i] {
				dst[i] = strings.Clone(a.Value(i))
			}
		}
	case *array.LargeString:
		dst := lv.strs[off : off+n]
		for i := range dst {
			if valid[i] {
				dst[i] = strings.Clone(a.Value(i))
			}
		}
	default:
		return fmt.Errorf("frame: label column %s: unsupported array %s", name, c.DataType())
	}
	return nil
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

type number interface {
	integer | ~float32 | ~float64
}

func widenInt[T integer](dst []int64, src []T) {
	for i, v := range src {
		dst[i] = int64(v)
	}
}

// indexValues widens the indices of a dictionary array to int64.
func indexValues(a arrow.Array) ([]int64, error) {
	out := make([]int64, a.Len())
	switch ix := a.(type) {
	case *array.Int8:
		widenInt(out, ix.Int8Values())
	case *array.Int16:
		widenInt(out, ix.Int16Values())
	case *array.Int32:
		widenInt(out, ix.Int32Values())
	case *array.Int64:
		copy(out, ix.Int64Values())
	case *array.Uint8:
		widenInt(out, ix.Uint8Values())
	case *array.Uint16:
		widenInt(out, ix.Uint16Values())
	case *array.Uint32:
		widenInt(out, ix.Uint32Values())
	case *array.Uint64:
		for i, v := range ix.Uint64Values() {
			if v > math.MaxInt64 {
				v = math.MaxInt64
			}
			out[i] = int64(v)
		}
	default:
		return nil, fmt.Errorf("unsupported dictionary index type %s", a.DataType())
	}
	return out, nil
}

// ---------------------------------------------------------------------------
// features

// decodeFeatures copies the feature columns idx of recs into float32
// column buffers of nOut rows, keeping only the rows listed in chunkKeep
// (nil: all rows). levels[k], when non-nil, are preset category levels of
// feature k; when learn is set, string-dictionary features without preset
// levels get sorted levels from the data. It returns the columns and the
// per-feature levels (nil when no feature is categorical).
// decodeColumnSafe is decodeColumn in a worker goroutine, where a panic
// would end the process: arrays a reader did not validate (a Go caller's,
// or a corrupt one, such as a null count with no validity bitmap) make
// arrow-go panic while decodeColumn reads them, and that becomes the
// column's error.
func decodeColumnSafe(dst []float32, name string, recs []arrow.Record, j int, levels []string, chunkKeep [][]int32) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("frame: column %s: malformed Arrow array (%v)", name, p)
		}
	}()
	return decodeColumn(dst, name, recs, j, levels, chunkKeep)
}

func decodeFeatures(schema *arrow.Schema, recs []arrow.Record, idx []int, levels [][]string, learn bool, chunkKeep [][]int32, nOut int) ([][]float32, [][]string, error) {
	p := len(idx)
	cols := make([][]float32, p)
	errs := make([]error, p)
	var next atomic.Int64
	workers := min(runtime.GOMAXPROCS(0), p)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= p {
					return
				}
				j := idx[k]
				fl := schema.Field(j)
				if levels[k] == nil && learn && kindOf(fl.Type) == kindStrDict {
					levels[k] = learnLevels(recs, j)
				}
				cols[k] = make([]float32, nOut)
				errs[k] = decodeColumnSafe(cols[k], fl.Name, recs, j, levels[k], chunkKeep)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	var out [][]string
	for k := range levels {
		if levels[k] != nil {
			out = levels
			break
		}
	}
	return cols, out, nil
}

// learnLevels returns the sorted distinct string values referenced by the
// dictionary column j over all records.
func learnLevels(recs []arrow.Record, j int) []string {
	set := map[string]struct{}{}
	for _, rec := range recs {
		d, ok := rec.Column(j).(*array.Dictionary)
		if !ok {
			continue
		}
		dict := d.Dictionary()
		used := make([]bool, dict.Len())
		idx, err := indexValues(d.Indices())
		if err != nil {
			continue // reported by decodeColumn
		}
		for i, k := range idx {
			if k >= 0 && k < int64(len(used)) && d.IsValid(i) {
				used[k] = true
			}
		}
		for k, u := range used {
			if u && dict.IsValid(k) {
				s := stringAt(dict, k)
				if _, ok := set[s]; !ok {
					set[strings.Clone(s)] = struct{}{}
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func stringAt(a arrow.Array, i int) string {
	switch s := a.(type) {
	case *array.String:
		return s.Value(i)
	case *array.LargeString:
		return s.Value(i)
	}
	return ""
}

func levelIndex(levels []string) map[string]int {
	m := make(map[string]int, len(levels))
	for k, s := range levels {
		if _, dup := m[s]; !dup {
			m[s] = k
		}
	}
	return m
}

// decodeColumn fills dst with column j of recs.
func decodeColumn(dst []float32, name string, recs []arrow.Record, j int, levels []string, chunkKeep [][]int32) error {
	var lvIndex map[string]int
	if levels != nil {
		lvIndex = levelIndex(levels)
	}
	off := 0
	for r, rec := range recs {
		var keep []int32
		if chunkKeep != nil {
			keep = chunkKeep[r]
		}
		c := rec.Column(j)
		nOut := c.Len()
		if keep != nil {
			nOut = len(keep)
		}
		if err := decodeChunk(dst[off:off+nOut], c, keep, lvIndex); err != nil {
			return fmt.Errorf("frame: column %s: %w", name, err)
		}
		off += nOut
	}
	return nil
}

// validity returns the validity bitmap and offset of a, or nil when a has
// no nulls.
func validity(a arrow.Array) ([]byte, int) {
	if a.NullN() == 0 {
		return nil, 0
	}
	return a.NullBitmapBytes(), a.Data().Offset()
}

func decodeChunk(dst []float32, c arrow.Array, keep []int32, lvIndex map[string]int) error {
	bm, bo := validity(c)
	switch a := c.(type) {
	case *array.Int8:
		copyNum(dst, a.Int8Values(), bm, bo, keep)
	case *array.Int16:
		copyNum(dst, a.Int16Values(), bm, bo, keep)
	case *array.Int32:
		copyNum(dst, a.Int32Values(), bm, bo, keep)
	case *array.Int64:
		copyNum(dst, a.Int64Values(), bm, bo, keep)
	case *array.Uint8:
		copyNum(dst, a.Uint8Values(), bm, bo, keep)
	case *array.Uint16:
		copyNum(dst, a.Uint16Values(), bm, bo, keep)
	case *array.Uint32:
		copyNum(dst, a.Uint32Values(), bm, bo, keep)
	case *array.Uint64:
		copyNum(dst, a.Uint64Values(), bm, bo, keep)
	case *array.Float32:
		copyNum(dst, a.Float32Values(), bm, bo, keep)
	case *array.Float64:
		copyNum(dst, a.Float64Values(), bm, bo, keep)
	case *array.Float16:
		copyF16(dst, a.Values(), bm, bo, keep)
	case *array.Boolean:
		copyBool(dst, a, bm, bo, keep)
	case *array.Dictionary:
		lut, err := dictLUT(a.Dictionary(), lvIndex)
		if err != nil {
			return err
		}
		return copyDict(dst, a.Indices(), lut, bm, bo, keep)
	case *array.String:
		copyStrings(dst, a.ValueOffsets(), rawBytes(a, 2), bm, bo, keep, lvIndex)
	case *array.LargeString:
		copyStrings(dst, a.ValueOffsets(), rawBytes(a, 2), bm, bo, keep, lvIndex)
	default:
		return fmt.Errorf("unsupported array type %s", c.DataType())
	}
	return nil
}

// copyNum converts a numeric column chunk to float32; nulls become NaN.
// Only the rows in keep are copied when keep is non-nil.
func copyNum[T number](dst []float32, vals []T, bm []byte, bo int, keep []int32) {
	switch {
	case bm == nil && keep == nil:
		vals = vals[:len(dst)]
		for i, v := range vals {
			dst[i] = float32(v)
		}
	case bm == nil:
		for k, i := range keep {
			dst[k] = float32(vals[i])
		}
	case keep == nil:
		vals = vals[:len(dst)]
		for i, v := range vals {
			if bitutil.BitIsSet(bm, bo+i) {
				dst[i] = float32(v)
			} else {
				dst[i] = nan32
			}
		}
	default:
		for k, i := range keep {
			if bitutil.BitIsSet(bm, bo+int(i)) {
				dst[k] = float32(vals[i])
			} else {
				dst[k] = nan32
			}
		}
	}
}

func copyF16(dst []float32, vals []float16.Num, bm []byte, bo int, keep []int32) {
	n := len(dst)
	for k := 0; k < n; k++ {
		i := k
		if keep != nil {
			i = int(keep[k])
		}
		if bm != nil && !bitutil.BitIsSet(bm, bo+i) {
			dst[k] = nan32
		} else {
			dst[k] = vals[i].Float32()
		}
	}
}

func copyBool(dst []float32, a *array.Boolean, bm []byte, bo int, keep []int32) {
	bits := a.Data().Buffers()[1].Bytes()
	off := a.Data().Offset()
	n := len(dst)
	for k := 0; k < n; k++ {
		i := k
		if keep != nil {
			i = int(keep[k])
		}
		switch {
		case bm != nil && !bitutil.BitIsSet(bm, bo+i):
			dst[k] = nan32
		case bitutil.BitIsSet(bits, off+i):
			dst[k] = 1
		default:
			dst[k] = 0
		}
	}
}

// rawBytes returns buffer b of a (nil when absent).
func rawBytes(a arrow.Array, b int) []byte {
	bufs := a.Data().Buffers()
	if b >= len(bufs) || bufs[b] == nil {
		return nil
	}
	return bufs[b].Bytes()
}

// copyStrings maps string cells to level indices. offsets are the cells'
// offsets into data (len = cells+1, already shifted by the array offset).
func copyStrings[O int32 | int64](dst []float32, offsets []O, data []byte, bm []byte, bo int, keep []int32, lvIndex map[string]int) {
	for k := range dst {
		i := k
		if keep != nil {
			i = int(keep[k])
		}
		if bm != nil && !bitutil.BitIsSet(bm, bo+i) {
			dst[k] = nan32
			continue
		}
		if lv, ok := lvIndex[string(data[offsets[i]:offsets[i+1]])]; ok {
			dst[k] = float32(lv)
		} else {
			dst[k] = nan32
		}
	}
}

// dictLUT maps every dictionary entry to its float32 feature value: the
// value itself for numeric dictionaries, the level index for string ones
// (NaN for a level not in lvIndex, and for null entries).
func dictLUT(dict arrow.Array, lvIndex map[string]int) ([]float32, error) {
	lut := make([]float32, dict.Len())
	switch kindOf(dict.DataType()) {
	case kindNumeric:
		return lut, decodeChunk(lut, dict, nil, nil)
	case kindString:
		for k := range lut {
			lut[k] = nan32
			if dict.IsValid(k) {
				if lv, ok := lvIndex[stringAt(dict, k)]; ok {
					lut[k] = float32(lv)
				}
			}
		}
		return lut, nil
	}
	return nil, fmt.Errorf("unsupported dictionary value type %s", dict.DataType())
}

func copyDict(dst []float32, indices arrow.Array, lut []float32, bm []byte, bo int, keep []int32) error {
	switch ix := indices.(type) {
	case *array.Int8:
		return gather(dst, ix.Int8Values(), lut, bm, bo, keep)
	case *array.Int16:
		return gather(dst, ix.Int16Values(), lut, bm, bo, keep)
	case *array.Int32:
		return gather(dst, ix.Int32Values(), lut, bm, bo, keep)
	case *array.Int64:
		return gather(dst, ix.Int64Values(), lut, bm, bo, keep)
	case *array.Uint8:
		return gather(dst, ix.Uint8Values(), lut, bm, bo, keep)
	case *array.Uint16:
		return gather(dst, ix.Uint16Values(), lut, bm, bo, keep)
	case *array.Uint32:
		return gather(dst, ix.Uint32Values(), lut, bm, bo, keep)
	case *array.Uint64:
		return gather(dst, ix.Uint64Values(), lut, bm, bo, keep)
	}
	return fmt.Errorf("unsupported dictionary index type %s", indices.DataType())
}

// gather looks dictionary indices up in lut. An out-of-range index of a
// valid cell is an error (a corrupt dictionary array).
func gather[T integer](dst []float32, idx []T, lut []float32, bm []byte, bo int, keep []int32) error {
	nl := uint64(len(lut))
	for k := range dst {
		i := k
		if keep != nil {
			i = int(keep[k])
		}
		if bm != nil && !bitutil.BitIsSet(bm, bo+i) {
			dst[k] = nan32
			continue
		}
		v := idx[i]
		if v < 0 || uint64(v) >= nl {
			return fmt.Errorf("dictionary index %d out of range [0,%d)", v, nl)
		}
		dst[k] = lut[v]
	}
	return nil
}
