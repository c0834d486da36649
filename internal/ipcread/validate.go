package ipcread

import (
	"errors"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
)

// ValidateRecord checks that a decoded record is structurally sound for
// the types forestd uses, so that code indexing its buffers cannot run out
// of bounds: the record matches the schema, every validity bitmap and
// value buffer is long enough, variable-length offsets are monotonic and
// inside the data, and dictionary indices are inside the dictionary.
// Other types are checked for their validity bitmap only.
func ValidateRecord(schema *arrow.Schema, rec arrow.Record) error {
	if int(rec.NumCols()) != schema.NumFields() {
		return fmt.Errorf("%d columns, schema has %d", rec.NumCols(), schema.NumFields())
	}
	for j := 0; j < int(rec.NumCols()); j++ {
		c := rec.Column(j)
		if int64(c.Len()) != rec.NumRows() {
			return fmt.Errorf("column %s has %d rows, record has %d", schema.Field(j).Name, c.Len(), rec.NumRows())
		}
		if err := validateData(c.Data()); err != nil {
			return fmt.Errorf("column %s: %w", schema.Field(j).Name, err)
		}
	}
	return nil
}

func bufBytes(d arrow.ArrayData, i int) []byte {
	bufs := d.Buffers()
	if i >= len(bufs) || bufs[i] == nil {
		return nil
	}
	return bufs[i].Bytes()
}

func validateData(d arrow.ArrayData) error {
	n, off := d.Len(), d.Offset()
	if n < 0 || off < 0 {
		return errors.New("negative length or offset")
	}
	end := int64(n) + int64(off)
	bm := bufBytes(d, 0)
	if bm != nil && int64(len(bm)) < bitutil.BytesForBits(end) {
		return fmt.Errorf("validity bitmap of %d bytes for %d rows", len(bm), end)
	}
	if nulls, err := nullCount(d); err != nil {
		return err
	} else if nulls < 0 || nulls > n || nulls > 0 && bm == nil && d.DataType().ID() != arrow.NULL {
		return fmt.Errorf("%d nulls in %d rows with a validity bitmap of %d bytes", nulls, n, len(bm))
	}
	dt := d.DataType()
	switch dt.ID() {
	case arrow.NULL:
		return nil
	case arrow.BOOL:
		if int64(len(bufBytes(d, 1))) < bitutil.BytesForBits(end) {
			return errors.New("boolean value buffer too short")
		}
	case arrow.STRING, arrow.BINARY:
		return checkOffsets(arrow.Int32Traits.CastFromBytes(bufBytes(d, 1)), len(bufBytes(d, 2)), off, n)
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return checkOffsets(arrow.Int64Traits.CastFromBytes(bufBytes(d, 1)), len(bufBytes(d, 2)), off, n)
	case arrow.DICTIONARY:
		dict := dictData(d)
		if dict == nil {
			return errors.New("dictionary array without dictionary")
		}
		if err := validateData(dict); err != nil {
			return fmt.Errorf("dictionary: %w", err)
		}
		dtt := dt.(*arrow.DictionaryType)
		w := dtt.IndexType.(arrow.FixedWidthDataType).BitWidth() / 8
		if int64(len(bufBytes(d, 1))) < end*int64(w) {
			return errors.New("dictionary index buffer too short")
		}
		data := array.NewData(dtt.IndexType, n, d.Buffers(), nil, d.NullN(), off)
		defer data.Release()
		idx := array.MakeFromData(data)
		defer idx.Release()
		return checkIndices(idx, dict.Len())
	default:
		if fw, ok := dt.(arrow.FixedWidthDataType); ok {
			bits := int64(fw.BitWidth())
			if int64(len(bufBytes(d, 1)))*8 < end*bits {
				return fmt.Errorf("%s value buffer too short", dt)
			}
		}
	}
	return nil
}

// dictData returns the dictionary of d, or nil (ArrayData.Dictionary
// returns a typed nil pointer when there is none).
func dictData(d arrow.ArrayData) arrow.ArrayData {
	dd := d.Dictionary()
	if p, ok := dd.(*array.Data); dd == nil || (ok && p == nil) {
		return nil
	}
	return dd
}

func checkOffsets[O int32 | int64](offs []O, dataLen, off, n int) error {
	if n == 0 {
		return nil
	}
	if len(offs) < off+n+1 {
		return errors.New("offsets buffer too short")
	}
	offs = offs[off : off+n+1]
	if offs[0] < 0 {
		return errors.New("negative offset")
	}
	for i := 1; i < len(offs); i++ {
		if offs[i] < offs[i-1] {
			return errors.New("decreasing offsets")
		}
	}
	if int64(offs[n]) > int64(dataLen) {
		return errors.New("offsets beyond the data buffer")
	}
	return nil
}

func checkIndices(idx arrow.Array, size int) error {
	bm := idx.NullBitmapBytes()
	o := idx.Data().Offset()
	check := func(i int, k int64) error {
		if (bm == nil || bitutil.BitIsSet(bm, o+i)) && (k < 0 || k >= int64(size)) {
			return fmt.Errorf("dictionary index %d out of range [0,%d)", k, size)
		}
		return nil
	}
	var err error
	switch a := idx.(type) {
	case *array.Int8:
		for i, k := range a.Int8Values() {
			if err = check(i, int64(k)); err != nil {
				return err
			}
		}
	case *array.Int16:
		for i, k := range a.Int16Values() {
			if err = check(i, int64(k)); err != nil {
				return err
			}
		}
	case *array.Int32:
		for i, k := range a.Int32Values() {
			if err = check(i, int64(k)); err != nil {
				return err
			}
		}
	case *array.Int64:
		for i, k := range a.Int64Values() {
			if err = check(i, k); err != nil {
				return err
			}
		}
	case *array.Uint8:
		for i, k := range a.Uint8Values() {
			if err = check(i, int64(k)); err != nil {
				return err
			}
		}
	case *array.Uint16:
		for i, k := range a.Uint16Values() {
			if err = check(i, int64(k)); err != nil {
				return err
			}
		}
	case *array.Uint32:
		for i, k := range a.Uint32Values() {
			if err = check(i, int64(k)); err != nil {
				return err
			}
		}
	case *array.Uint64:
		for i, k := range a.Uint64Values() {
			if k > 1<<62 {
				return fmt.Errorf("dictionary index %d out of range [0,%d)", k, size)
			}
			if err = check(i, int64(k)); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unsupported dictionary index type %s", idx.DataType())
	}
	return nil
}

// nullCount returns d's null count. An IPC field node may state -1, which
// arrow-go takes for "unknown" and counts from the validity bitmap — and
// panics on when there is none.
func nullCount(d arrow.ArrayData) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("null count not stated and no validity bitmap to count (%v)", p)
		}
	}()
	return d.NullN(), nil
}
