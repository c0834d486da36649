package files

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"

	"github.com/forestd/forestd/internal/colname"
)

// Parquet reading decodes column chunks page by page into Arrow buffers:
// for each row group and each projected column, every data page's typed
// values (or dictionary indices plus the chunk's dictionary) are scattered
// into the column's value buffer using the page's definition levels, which
// also give the validity bitmap. No row is ever materialised.

// maxBatchRows bounds the rows of one row group (Arrow arrays hold at most
// 2^31-1 rows here, and a corrupt footer must not drive allocation).
const maxBatchRows = math.MaxInt32

// pqColumn is one projected top-level Parquet column and its Arrow type.
type pqColumn struct {
	name   string
	leaf   int // leaf column index in the row groups
	kind   parquet.Kind
	dt     arrow.DataType
	maxDef byte
	scale  float64 // decimal divisor (0: not a decimal)
	flba   int     // FIXED_LEN_BYTE_ARRAY length
}

// readParquet reads a whole Parquet file through OpenParquet (the footer
// checked first) and ReadRowGroup, refusing it with ErrMemory when the
// decoded columns would take more than what remains of budget (nil: no
// bound): the footer's claims (RowGroupBytes) are taken from it before
// any row group is decoded, and the string data a decoder materialises,
// which dictionary encoding can make far larger than the footer says, as
// it grows.
func readParquet(name string, r io.ReaderAt, size int64, cols []string, mem memory.Allocator, budget *readBudget) (schema *arrow.Schema, recs []arrow.Record, err error) {
	f, err := OpenParquet(name, r, size)
	if err != nil {
		return nil, nil, err
	}
	if cols == nil {
		cols = f.names
	}
	fields := make([]arrow.Field, len(cols))
	for k, c := range cols {
		dt, err := f.ColumnType(c)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		fields[k] = arrow.Field{Name: c, Type: dt, Nullable: f.Nullable(c)}
	}
	schema = arrow.NewSchema(fields, &f.md)
	var need int64
	for g := range f.rows {
		need = satAdd(need, f.RowGroupBytes(g, cols))
	}
	if err := budget.take(need, fmt.Sprintf("decoding its %d row groups", len(f.rows))); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	recs, err = f.readRowGroups(cols, mem, budget)
	if err != nil {
		return nil, nil, err
	}
	return schema, recs, nil
}

// readRowGroups decodes every row group of f on up to GOMAXPROCS
// goroutines (a row group's columns are independent of the others', and
// ParquetFile reads concurrently, as connectors/lake's readers do), in
// file order; the error is the first row group's that failed, as a
// reading in order would give it, and nothing is left to release.
func (f *ParquetFile) readRowGroups(cols []string, mem memory.Allocator, budget *readBudget) ([]arrow.Record, error) {
	if len(f.rows) == 0 {
		return nil, nil
	}
	recs := make([]arrow.Record, len(f.rows))
	errs := make([]error, len(f.rows))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(f.rows)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				g := int(next.Add(1) - 1)
				if g >= len(recs) {
					return
				}
				recs[g], errs[g] = f.readRowGroup(g, cols, mem, budget)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			release(recs)
			return nil, err
		}
	}
	return recs, nil
}

// satAdd adds non-negative a and b, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// ErrMemory marks a read refused because what it would decode exceeds
// ReadOptions.MaxMemory.
var ErrMemory = errors.New("over the memory budget")

// readBudget is what remains of a read's memory budget (ReadOptions.
// MaxMemory), shared by the files of one ReadPaths call; nil means no
// bound.
type readBudget struct {
	mu        sync.Mutex
	left, max int64
}

func newReadBudget(max int64) *readBudget { return &readBudget{left: max, max: max} }

// take reserves n bytes or says what is over the budget.
func (b *readBudget) take(n int64, what string) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.left {
		return fmt.Errorf("%w: %s would take about %d bytes, and %d of the %d bytes allowed (ReadOptions.MaxMemory, the command's --max-memory) remain", ErrMemory, what, n, b.left, b.max)
	}
	b.left -= n
	return nil
}

// arrowSchemaKey is the key under which Arrow's own Parquet writers
// (pyarrow, arrow-go's pqarrow) store the whole Arrow schema, an encoded
// IPC message: the readers rebuild the schema from the Parquet columns and
// leave it out, as pyarrow does.
const arrowSchemaKey = "ARROW:schema"

// fileMetadata returns the key-value metadata of a Parquet file as the
// Arrow schema metadata of what it reads (ParquetWriter writes a schema's
// metadata there), in the file's order, without arrowSchemaKey.
func fileMetadata(pf *parquet.File) arrow.Metadata {
	var keys, vals []string
	for _, kv := range pf.Metadata().KeyValueMetadata {
		if kv.Key != arrowSchemaKey {
			keys, vals = append(keys, kv.Key), append(vals, kv.Value)
		}
	}
	return arrow.NewMetadata(keys, vals)
}

// errLZ4Raw refuses LZ4_RAW-compressed column chunks. parquet-go v0.32.0
// decodes them wrongly whenever the LZ4 decoder outgrows the page buffer it
// was handed (it keeps the old, unfilled buffer: parquet-go issue #608),
// which happens for ordinary pages and depends on which pooled buffer a
// page gets: the values come back as garbage, without an error. Until the
// reader is fixed such files are an error rather than wrong predictions.
var errLZ4Raw = errors.New("LZ4_RAW-compressed column chunk: this build's Parquet reader (parquet-go v0.32.0, issue #608) decodes LZ4_RAW pages wrongly, so forestd refuses them; rewrite the file with zstd, snappy, gzip or no compression")

// checkCodec refuses a column chunk whose codec the reader decodes
// wrongly (see errLZ4Raw).
func checkCodec(pf *parquet.File, g, leaf int) error {
	md := pf.Metadata()
	if g < len(md.RowGroups) && leaf < len(md.RowGroups[g].Columns) &&
		md.RowGroups[g].Columns[leaf].MetaData.Codec == format.Lz4Raw {
		return errLZ4Raw
	}
	return nil
}

func parquetColumn(c *parquet.Column) (pqColumn, error) {
	pc := pqColumn{name: c.Name(), leaf: c.Index()}
	if !c.Leaf() || c.Repeated() || c.MaxRepetitionLevel() > 0 {
		return pc, errors.New("nested or repeated Parquet columns are not supported")
	}
	if c.MaxDefinitionLevel() > 1 {
		return pc, fmt.Errorf("unsupported definition level %d", c.MaxDefinitionLevel())
	}
	pc.maxDef = byte(c.MaxDefinitionLevel())
	typ := c.Type()
	pc.kind = typ.Kind()
	var lt format.LogicalTypeValue
	if l := typ.LogicalType(); l != nil {
		lt = l.Value
	}
	var ct deprecated.ConvertedType = -1
	if p := typ.ConvertedType(); p != nil {
		ct = *p
	}
	unsupported := func() (pqColumn, error) {
		desc := pc.kind.String()
		if lt != nil {
			desc += " (" + lt.String() + ")"
		}
		return pc, fmt.Errorf("unsupported Parquet type %s", desc)
	}
	switch pc.kind {
	case parquet.Boolean:
		pc.dt = arrow.FixedWidthTypes.Boolean
	case parquet.Int32:
		pc.dt = arrow.PrimitiveTypes.Int32
		switch t := lt.(type) {
		case *format.IntType:
			pc.dt = intArrowType(int(t.BitWidth), t.IsSigned)
		case *format.DecimalType:
			pc.dt, pc.scale = arrow.PrimitiveTypes.Float64, math.Pow10(int(t.Scale))
		case *format.DateType:
			pc.dt = arrow.FixedWidthTypes.Date32
		case nil:
			switch ct {
			case deprecated.Int8:
				pc.dt = arrow.PrimitiveTypes.Int8
			case deprecated.Int16:
				pc.dt = arrow.PrimitiveTypes.Int16
			case deprecated.Uint8:
				pc.dt = arrow.PrimitiveTypes.Uint8
			case deprecated.Uint16:
				pc.dt = arrow.PrimitiveTypes.Uint16
			case deprecated.Uint32:
				pc.dt = arrow.PrimitiveTypes.Uint32
			case deprecated.Date:
				pc.dt = arrow.FixedWidthTypes.Date32
			case deprecated.Decimal:
				return unsupported()
			}
		default:
			return unsupported()
		}
		if pc.dt == nil {
			return unsupported()
		}
	case parquet.Int64:
		pc.dt = arrow.PrimitiveTypes.Int64
		switch t := lt.(type) {
		case *format.IntType:
			pc.dt = intArrowType(int(t.BitWidth), t.IsSigned)
		case *format.DecimalType:
			pc.dt, pc.scale = arrow.PrimitiveTypes.Float64, math.Pow10(int(t.Scale))
		case *format.TimestampType:
			tz := ""
			if t.IsAdjustedToUTC {
				tz = "UTC"
			}
			switch t.Unit.Value.(type) {
			case *format.MilliSeconds:
				pc.dt = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: tz}
			case *format.MicroSeconds:
				pc.dt = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: tz}
			case *format.NanoSeconds:
				pc.dt = &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: tz}
			default:
				return unsupported()
			}
		case nil:
			switch ct {
			case deprecated.Uint64:
				pc.dt = arrow.PrimitiveTypes.Uint64
			case deprecated.TimestampMillis:
				pc.dt = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
			case deprecated.TimestampMicros:
				pc.dt = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
			case deprecated.Decimal:
				return unsupported()
			}
		default:
			return unsupported()
		}
		if pc.dt == nil {
			return unsupported()
		}
	case parquet.Float:
		pc.dt = arrow.PrimitiveTypes.Float32
	case parquet.Double:
		pc.dt = arrow.PrimitiveTypes.Float64
	case parquet.ByteArray:
		pc.dt = arrow.BinaryTypes.Binary
		switch lt.(type) {
		case *format.StringType, *format.EnumType, *format.JsonType:
			pc.dt = arrow.BinaryTypes.String
		case nil:
			switch ct {
			case deprecated.UTF8, deprecated.Enum, deprecated.Json:
				pc.dt = arrow.BinaryTypes.String
			}
		}
	case parquet.FixedLenByteArray:
		pc.flba = typ.Length()
		if _, ok := lt.(*format.Float16Type); ok && pc.flba == 2 {
			pc.dt = arrow.FixedWidthTypes.Float16
		} else {
			return unsupported()
		}
	default:
		return unsupported()
	}
	return pc, nil
}

func intArrowType(bits int, signed bool) arrow.DataType {
	switch {
	case bits == 8 && signed:
		return arrow.PrimitiveTypes.Int8
	case bits == 16 && signed:
		return arrow.PrimitiveTypes.Int16
	case bits == 32 && signed:
		return arrow.PrimitiveTypes.Int32
	case bits == 64 && signed:
		return arrow.PrimitiveTypes.Int64
	case bits == 8:
		return arrow.PrimitiveTypes.Uint8
	case bits == 16:
		return arrow.PrimitiveTypes.Uint16
	case bits == 32:
		return arrow.PrimitiveTypes.Uint32
	case bits == 64:
		return arrow.PrimitiveTypes.Uint64
	}
	return nil
}

// chunkBuilder accumulates one column chunk into Arrow buffers.
type chunkBuilder struct {
	mem    memory.Allocator
	width  int            // bytes per value (fixed width); 0 for byte arrays
	values *memory.Buffer // fixed-width values, or bool bits
	valid  *memory.Buffer // validity bits (nil for required columns)
	offs   *memory.Buffer // int32 offsets (byte arrays)
	data   *memory.Buffer // bytes (byte arrays)
	dataN  int            // bytes used in data
	rows   int
	nulls  int

	budget  *readBudget // nil: string data bounded only by 2 GiB
	free    int         // string bytes the footer declared (counted already)
	charged int         // string bytes beyond free taken from budget
}

// grow makes b hold at least n bytes, growing geometrically.
func grow(b *memory.Buffer, n int) {
	if n > b.Cap() {
		b.Reserve(max(n, 2*b.Cap()))
	}
	b.ResizeNoShrink(n)
}

func (b *chunkBuilder) release() {
	for _, x := range []*memory.Buffer{b.values, b.valid, b.offs, b.data} {
		if x != nil {
			x.Release()
		}
	}
}

// extend makes room for k more rows and returns the first new row.
func (b *chunkBuilder) extend(k int, boolBits bool) int {
	row := b.rows
	b.rows += k
	if b.valid != nil {
		grow(b.valid, int(bitutil.BytesForBits(int64(b.rows))))
	}
	switch {
	case boolBits:
		grow(b.values, int(bitutil.BytesForBits(int64(b.rows))))
	case b.width > 0:
		grow(b.values, b.rows*b.width)
	default:
		grow(b.offs, (b.rows+1)*4)
	}
	return row
}

func (c *pqColumn) readChunk(chunk parquet.ColumnChunk, n int, mem memory.Allocator, budget *readBudget, declared int64) (arrow.Array, error) {
	b := &chunkBuilder{mem: mem, budget: budget, free: int(min(declared, math.MaxInt32))}
	defer b.release()
	boolBits := c.dt.ID() == arrow.BOOL
	reserveRows := min(n, 1<<20)
	switch {
	case c.kind == parquet.ByteArray:
		b.offs = memory.NewResizableBuffer(mem)
		b.offs.Reserve((reserveRows + 1) * 4)
		b.offs.ResizeNoShrink(4)
		arrow.Int32Traits.CastFromBytes(b.offs.Bytes())[0] = 0
		b.data = memory.NewResizableBuffer(mem)
	case boolBits:
		b.values = memory.NewResizableBuffer(mem)
		b.values.Reserve(int(bitutil.BytesForBits(int64(reserveRows))))
	default:
		b.width = c.dt.(arrow.FixedWidthDataType).BitWidth() / 8
		b.values = memory.NewResizableBuffer(mem)
		b.values.Reserve(reserveRows * b.width)
	}
	if c.maxDef > 0 {
		b.valid = memory.NewResizableBuffer(mem)
		b.valid.Reserve(int(bitutil.BytesForBits(int64(reserveRows))))
	}

	pages := chunk.Pages()
	defer pages.Close()
	for {
		page, err := pages.ReadPage()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		err = c.readPage(b, page, n)
		parquet.Release(page)
		if err != nil {
			return nil, err
		}
	}
	if b.rows != n {
		return nil, fmt.Errorf("pages hold %d rows, row group has %d", b.rows, n)
	}
	return c.finish(b)
}

// readPage appends one data page to b.
func (c *pqColumn) readPage(b *chunkBuilder, page parquet.Page, limit int) error {
	defs := page.DefinitionLevels()
	if c.maxDef == 0 {
		defs = nil
	}
	values := page.Data()
	var idx []int32
	dict := page.Dictionary()
	if dict != nil {
		if values.Kind() != encoding.Int32 {
			return fmt.Errorf("dictionary page with %s indices", values.Kind())
		}
		idx = values.Int32()
		values = dict.Page().Data()
	}
	if values.Kind() != encodingKind(c.kind) {
		return fmt.Errorf("page holds %s values, column is %s", values.Kind(), c.kind)
	}

	// Count the rows and non-null values of the page.
	var rows, defined int
	if c.maxDef > 0 {
		rows = len(defs)
		for _, d := range defs {
			if d == c.maxDef {
				defined++
			}
		}
	} else {
		rows = int(page.NumValues())
		defined = rows
	}
	if rows < 0 || b.rows+rows > limit {
		return fmt.Errorf("pages hold more than the row group's %d rows", limit)
	}
	nvals := 0
	switch {
	case idx != nil:
		nvals = len(idx)
	case c.kind == parquet.Boolean:
		nvals = int(page.NumValues()) - int(page.NumNulls())
		if bits := values.Boolean(); nvals < 0 || len(bits)*8 < nvals {
			return fmt.Errorf("boolean page has %d bytes for %d values", len(bits), nvals)
		}
	case c.kind == parquet.ByteArray:
		_, offsets := values.ByteArray()
		nvals = max(len(offsets)-1, 0)
	case c.kind == parquet.FixedLenByteArray:
		data, size := values.FixedLenByteArray()
		if size != c.flba || size <= 0 {
			return fmt.Errorf("fixed-length values of %d bytes, want %d", size, c.flba)
		}
		nvals = len(data) / size
	default:
		nvals = fixedCount(values)
	}
	if nvals < defined {
		return fmt.Errorf("page has %d values for %d non-null rows", nvals, defined)
	}
	if idx != nil && nvals != defined {
		return fmt.Errorf("page has %d dictionary indices for %d non-null rows", nvals, defined)
	}

	if defined == rows {
		defs = nil // no nulls in this page: take the dense paths
	}
	row0 := b.extend(rows, c.kind == parquet.Boolean)
	var valid []byte
	if b.valid != nil {
		valid = b.valid.Bytes()
		b.nulls += rows - defined
	}
	switch c.kind {
	case parquet.ByteArray:
		return c.putBytes(b, values, idx, defs, valid, row0, rows)
	case parquet.Boolean:
		putBools(b.values.Bytes(), values.Boolean(), defs, c.maxDef, valid, row0, rows)
		return nil
	}
	dst := b.values.Bytes()
	switch c.kind {
	case parquet.Int32:
		return putInts(c, dst, values.Int32(), idx, defs, valid, row0, rows)
	case parquet.Int64:
		return putInts(c, dst, values.Int64(), idx, defs, valid, row0, rows)
	case parquet.Float:
		return scatter(arrow.Float32Traits.CastFromBytes(dst), values.Float(), idx, defs, c.maxDef, valid, row0, rows)
	case parquet.Double:
		return scatter(arrow.Float64Traits.CastFromBytes(dst), values.Double(), idx, defs, c.maxDef, valid, row0, rows)
	case parquet.FixedLenByteArray: // float16
		data, _ := values.FixedLenByteArray()
		return scatter(arrow.Uint16Traits.CastFromBytes(dst), arrow.Uint16Traits.CastFromBytes(data[:len(data)&^1]), idx, defs, c.maxDef, valid, row0, rows)
	}
	return fmt.Errorf("unsupported physical type %s", c.kind)
}

// encodingKind maps a Parquet physical type to the kind of its decoded
// values (the two enumerations are numbered differently).
func encodingKind(k parquet.Kind) encoding.Kind {
	switch k {
	case parquet.Boolean:
		return encoding.Boolean
	case parquet.Int32:
		return encoding.Int32
	case parquet.Int64:
		return encoding.Int64
	case parquet.Int96:
		return encoding.Int96
	case parquet.Float:
		return encoding.Float
	case parquet.Double:
		return encoding.Double
	case parquet.ByteArray:
		return encoding.ByteArray
	case parquet.FixedLenByteArray:
		return encoding.FixedLenByteArray
	}
	return encoding.Undefined
}

func fixedCount(v encoding.Values) int {
	switch v.Kind() {
	case encoding.Int32:
		return len(v.Int32())
	case encoding.Int64:
		return len(v.Int64())
	case encoding.Float:
		return len(v.Float())
	case encoding.Double:
		return len(v.Double())
	}
	return 0
}

type number interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// putInts converts INT32/INT64 physical values to the column's Arrow type.
func putInts[S int32 | int64](c *pqColumn, dst []byte, src []S, idx []int32, defs []byte, valid []byte, row0, rows int) error {
	md := c.maxDef
	switch c.dt.ID() {
	case arrow.INT8:
		return scatter(arrow.Int8Traits.CastFromBytes(dst), src, idx, defs, md, valid, row0, rows)
	case arrow.INT16:
		return scatter(arrow.Int16Traits.CastFromBytes(dst), src, idx, defs, md, valid, row0, rows)
	case arrow.INT32, arrow.DATE32:
		return scatter(arrow.Int32Traits.CastFromBytes(dst), src, idx, defs, md, valid, row0, rows)
	case arrow.INT64, arrow.TIMESTAMP:
		return scatter(arrow.Int64Traits.CastFromBytes(dst), src, idx, defs, md, valid, row0, rows)
	case arrow.UINT8:
		return scatter(arrow.Uint8Traits.CastFromBytes(dst), src, idx, defs, md, valid, row0, rows)
	case arrow.UINT16:
		return scatter(arrow.Uint16Traits.CastFromBytes(dst), src, idx, defs, md, valid, row0, rows)
	case arrow.UINT32:
		// INT32 holding UINT_32: reinterpret, do not sign-extend.
		return scatter(arrow.Uint32Traits.CastFromBytes(dst), reinterpretU32(src), idx, defs, md, valid, row0, rows)
	case arrow.UINT64:
		return scatter(arrow.Uint64Traits.CastFromBytes(dst), src, idx, defs, md, valid, row0, rows)
	case arrow.FLOAT64: // decimal
		out := arrow.Float64Traits.CastFromBytes(dst)
		if err := scatter(out, src, idx, defs, md, valid, row0, rows); err != nil {
			return err
		}
		for i := row0; i < row0+rows; i++ {
			out[i] /= c.scale
		}
		return nil
	}
	return fmt.Errorf("cannot convert %s to %s", c.kind, c.dt)
}

func reinterpretU32[S int32 | int64](src []S) []uint32 {
	out := make([]uint32, len(src))
	for i, v := range src {
		out[i] = uint32(v)
	}
	return out
}

// scatter writes rows [row0, row0+rows) of dst. Without definition levels
// every row takes the next value; otherwise rows whose level is maxDef do
// and the others are nulls (zero value, validity bit cleared). With idx,
// the values are dictionary entries looked up by index.
func scatter[D, S number](dst []D, src []S, idx []int32, defs []byte, maxDef byte, valid []byte, row0, rows int) error {
	dst = dst[row0 : row0+rows]
	if defs == nil {
		if valid != nil {
			bitutil.SetBitsTo(valid, int64(row0), int64(rows), true)
		}
		if idx == nil {
			src = src[:rows]
			for i, v := range src {
				dst[i] = D(v)
			}
			return nil
		}
		nd := uint32(len(src))
		for i, k := range idx[:rows] {
			if uint32(k) >= nd {
				return fmt.Errorf("dictionary index %d out of range [0,%d)", k, nd)
			}
			dst[i] = D(src[k])
		}
		return nil
	}
	defs = defs[:rows]
	j := 0
	if idx == nil {
		for i, d := range defs {
			if d == maxDef {
				dst[i] = D(src[j])
				j++
				bitutil.SetBit(valid, row0+i)
			} else {
				dst[i] = 0
				bitutil.ClearBit(valid, row0+i)
			}
		}
		return nil
	}
	nd := uint32(len(src))
	for i, d := range defs {
		if d == maxDef {
			k := idx[j]
			j++
			if uint32(k) >= nd {
				return fmt.Errorf("dictionary index %d out of range [0,%d)", k, nd)
			}
			dst[i] = D(src[k])
			bitutil.SetBit(valid, row0+i)
		} else {
			dst[i] = 0
			bitutil.ClearBit(valid, row0+i)
		}
	}
	return nil
}

// putBools copies bit-packed booleans (non-null values only) into the
// value bitmap at rows [row0, row0+rows).
func putBools(dst, bits []byte, defs []byte, maxDef byte, valid []byte, row0, rows int) {
	j := 0
	for i := 0; i < rows; i++ {
		r := row0 + i
		if defs != nil && defs[i] != maxDef {
			bitutil.ClearBit(dst, r)
			bitutil.ClearBit(valid, r)
			continue
		}
		bitutil.SetBitTo(dst, r, bitutil.BitIsSet(bits, j))
		j++
		if valid != nil {
			bitutil.SetBit(valid, r)
		}
	}
}

// putBytes appends byte-array values (strings) for rows [row0, row0+rows).
func (c *pqColumn) putBytes(b *chunkBuilder, values encoding.Values, idx []int32, defs []byte, valid []byte, row0, rows int) error {
	data, offsets := values.ByteArray()
	for i := 1; i < len(offsets); i++ {
		if offsets[i] < offsets[i-1] || int(offsets[i]) > len(data) {
			return errors.New("corrupt byte array offsets")
		}
	}
	offs := arrow.Int32Traits.CastFromBytes(b.offs.Bytes())
	j := 0
	for i := 0; i < rows; i++ {
		r := row0 + i
		if defs != nil && defs[i] != c.maxDef {
			offs[r+1] = int32(b.dataN)
			bitutil.ClearBit(valid, r)
			continue
		}
		k := j
		if idx != nil {
			k = int(idx[j])
			if k < 0 || k >= len(offsets)-1 {
				return fmt.Errorf("dictionary index %d out of range [0,%d)", k, len(offsets)-1)
			}
		}
		j++
		v := data[offsets[k]:offsets[k+1]]
		end := b.dataN + len(v)
		if end > math.MaxInt32 {
			return errors.New("more than 2 GiB of string data in one row group")
		}
		if over := end - b.free; b.budget != nil && over > b.charged {
			if err := b.budget.take(int64(over-b.charged), "string data beyond what the footer declares"); err != nil {
				return err
			}
			b.charged = over
		}
		if len(v) > 0 {
			grow(b.data, end)
			copy(b.data.Bytes()[b.dataN:], v)
			b.dataN = end
		}
		offs[r+1] = int32(b.dataN)
		if valid != nil {
			bitutil.SetBit(valid, r)
		}
	}
	return nil
}

// finish turns the accumulated buffers into an Arrow array.
func (c *pqColumn) finish(b *chunkBuilder) (arrow.Array, error) {
	var bufs []*memory.Buffer
	valid := b.valid
	if b.nulls == 0 {
		valid = nil
	}
	if c.kind == parquet.ByteArray {
		b.data.ResizeNoShrink(b.dataN)
		bufs = []*memory.Buffer{valid, b.offs, b.data}
	} else {
		bufs = []*memory.Buffer{valid, b.values}
	}
	data := array.NewData(c.dt, b.rows, bufs, nil, b.nulls, 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

func missingColumn(name string, have []string) error {
	return errors.New(colname.NotFound("", name, have))
}

func release(recs []arrow.Record) {
	for _, r := range recs {
		if r != nil {
			r.Release()
		}
	}
}

func releaseArrays(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}
