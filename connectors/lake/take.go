package lake

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// takeRecord returns the rows idx (increasing or not) of rec as a new
// record with rec's schema; the caller releases it.
func takeRecord(mem memory.Allocator, rec arrow.Record, idx []int32) (arrow.Record, error) {
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for j := range cols {
		c, err := take(mem, rec.Column(j), idx)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", rec.ColumnName(j), err)
		}
		cols[j] = c
	}
	return array.NewRecord(rec.Schema(), cols, int64(len(idx))), nil
}

// take gathers rows idx of a into a new array. It covers the types the
// Parquet decoder produces: fixed-width (integers, floats, dates,
// timestamps), booleans, strings and binary.
func take(mem memory.Allocator, a arrow.Array, idx []int32) (arrow.Array, error) {
	n := len(idx)
	d := a.Data()
	off := d.Offset()
	var valid *memory.Buffer
	nulls := 0
	if a.NullN() > 0 {
		valid = memory.NewResizableBuffer(mem)
		valid.Resize(int(bitutil.BytesForBits(int64(n))))
		vb := valid.Bytes()
		for i, k := range idx {
			if a.IsValid(int(k)) {
				bitutil.SetBit(vb, i)
			} else {
				nulls++
			}
		}
	}
	release := func(bufs ...*memory.Buffer) {
		for _, b := range bufs {
			if b != nil {
				b.Release()
			}
		}
	}
	var bufs []*memory.Buffer
	switch dt := a.DataType().(type) {
	case *arrow.BooleanType:
		src := d.Buffers()[1].Bytes()
		vals := memory.NewResizableBuffer(mem)
		vals.Resize(int(bitutil.BytesForBits(int64(n))))
		vb := vals.Bytes()
		for i, k := range idx {
			if bitutil.BitIsSet(src, off+int(k)) {
				bitutil.SetBit(vb, i)
			}
		}
		bufs = []*memory.Buffer{valid, vals}
	case *arrow.StringType, *arrow.BinaryType:
		offs := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[off:]
		data := d.Buffers()[2].Bytes()
		total := 0
		for _, k := range idx {
			total += int(offs[k+1] - offs[k])
		}
		ob := memory.NewResizableBuffer(mem)
		ob.Resize((n + 1) * 4)
		db := memory.NewResizableBuffer(mem)
		db.Resize(total)
		o := arrow.Int32Traits.CastFromBytes(ob.Bytes())
		out := db.Bytes()
		pos := 0
		for i, k := range idx {
			o[i] = int32(pos)
			pos += copy(out[pos:], data[offs[k]:offs[k+1]])
		}
		o[n] = int32(pos)
		bufs = []*memory.Buffer{valid, ob, db}
	case arrow.FixedWidthDataType:
		w := dt.BitWidth() / 8
		if w < 1 || dt.BitWidth()%8 != 0 {
			release(valid)
			return nil, fmt.Errorf("cannot gather %s", dt)
		}
		src := d.Buffers()[1].Bytes()[off*w:]
		vals := memory.NewResizableBuffer(mem)
		vals.Resize(n * w)
		vb := vals.Bytes()
		for i, k := range idx {
			copy(vb[i*w:(i+1)*w], src[int(k)*w:(int(k)+1)*w])
		}
		bufs = []*memory.Buffer{valid, vals}
	default:
		release(valid)
		return nil, fmt.Errorf("cannot gather %s", a.DataType())
	}
	if nulls == 0 && valid != nil {
		valid.Release()
		bufs[0] = nil
	}
	data := array.NewData(a.DataType(), n, bufs, nil, nulls, 0)
	release(bufs...)
	defer data.Release()
	return array.MakeFromData(data), nil
}
