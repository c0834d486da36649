package files

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// CSV reading streams the text in batches (at most 64Ki rows and about 2Mi
// cells each); only one batch of text is held at a time, and each batch
// becomes one record.
//
// Type inference, per column:
//
//   - The empty cell, "NA" and "NaN" are nulls in a numeric column; the
//     empty cell and "NA" are nulls in a string column. Numeric cells may
//     carry surrounding spaces.
//   - In the first batch where a column has a non-null cell, the column is
//     numeric when more than half of its non-null cells parse as numbers
//     (strconv.ParseFloat), otherwise it is Utf8 for the rest of the file.
//     So a label column of "M"/"R" or "red soil" is Utf8, and a numeric
//     column with one stray "1.3cm" is numeric.
//   - A numeric column is Int64 if every non-null cell in the file parses
//     as a base-10 int64, otherwise Float64 (earlier batches are widened).
//   - In a numeric column, a non-null cell that does not parse is an
//     error naming the file, the line (the header is line 1; a row's line
//     is the line it starts on), the column and the value.
//   - A column with no non-null cell at all is Float64, all nulls.

const (
	csvMaxBatchRows = 64 << 10
	csvBatchCells   = 2 << 20
)

type csvType int

const (
	ctUndecided csvType = iota
	ctInt
	ctFloat
	ctString
)

type csvBatch struct {
	n    int
	cols []arrow.Array // nil: column undecided so far (all null)
}

func readCSV(name string, r io.Reader, cols []string, mem memory.Allocator) (schema *arrow.Schema, recs []arrow.Record, err error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var src io.Reader = br
	if head, _ := br.Peek(2); bytes.Equal(head, magicGzip) {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: gzip: %w", name, err)
		}
		defer gz.Close()
		src = gz
	}
	cr := csv.NewReader(src)
	cr.ReuseRecord = true

	first, err := cr.Read()
	if err == io.EOF {
		return nil, nil, fmt.Errorf("%s: empty CSV file (a header row is required)", name)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	header := append([]string(nil), first...)
	header[0] = strings.TrimPrefix(header[0], "\ufeff")
	pos := make(map[string]int, len(header))
	for j, h := range header {
		if h == "" {
			return nil, nil, fmt.Errorf("%s: header column %d has an empty name", name, j+1)
		}
		if !utf8.ValidString(h) {
			return nil, nil, fmt.Errorf("%s: header column %d's name %q is not valid UTF-8", name, j+1, h)
		}
		if k, dup := pos[h]; dup {
			return nil, nil, fmt.Errorf("%s: duplicate column name %s (columns %d and %d)", name, h, k+1, j+1)
		}
		pos[h] = j
	}
	sel := make([]int, 0, len(header))
	if cols == nil {
		for j := range header {
			sel = append(sel, j)
		}
	} else {
		for _, c := range cols {
			j, ok := pos[c]
			if !ok {
				return nil, nil, fmt.Errorf("%s: %w", name, missingColumn(c, header))
			}
			sel = append(sel, j)
		}
	}

	p := &csvParser{name: name, header: header, sel: sel, mem: mem, types: make([]csvType, len(sel))}
	defer func() {
		if err != nil {
			p.releaseBatches()
		}
	}()
	// Bound a batch by cells as well as rows, so that wide files hold
	// about as much text per batch as narrow ones.
	batchRows := min(max(csvBatchCells/max(len(sel), 1), 1), csvMaxBatchRows)
	cells := make([][]string, len(sel))
	for k := range cells {
		cells[k] = make([]string, 0, min(batchRows, 4096))
	}
	lines := make([]int, 0, min(batchRows, 4096))
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		lines = append(lines, line)
		for k, j := range sel {
			cells[k] = append(cells[k], rec[j])
		}
		if len(lines) == batchRows {
			if err := p.flush(cells, lines); err != nil {
				return nil, nil, err
			}
			for k := range cells {
				clear(cells[k])
				cells[k] = cells[k][:0]
			}
			lines = lines[:0]
		}
	}
	if len(lines) > 0 {
		if err := p.flush(cells, lines); err != nil {
			return nil, nil, err
		}
	}
	return p.finish()
}

type csvParser struct {
	name    string
	header  []string
	sel     []int
	mem     memory.Allocator
	types   []csvType
	batches []csvBatch
}

func (p *csvParser) releaseBatches() {
	for _, b := range p.batches {
		releaseArrays(b.cols)
	}
	p.batches = nil
}

func isNumericNull(s string) bool { return s == "" || s == "NA" || s == "NaN" }
func isStringNull(s string) bool  { return s == "" || s == "NA" }

// parseFloat parses a number, accepting out-of-range values (±Inf, 0).
func parseFloat(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	if err == nil {
		return v, true
	}
	var ne *strconv.NumError
	return v, errors.As(err, &ne) && ne.Err == strconv.ErrRange
}

// mayBeNumber is a cheap filter run before strconv (whose failures
// allocate): a number starts with a digit, a sign, a dot, or the i/n of
// inf/nan.
func mayBeNumber(s string) bool {
	switch c := s[0]; {
	case c >= '0' && c <= '9', c == '+', c == '-', c == '.', c == 'i', c == 'I', c == 'n', c == 'N':
		return true
	}
	return false
}

// infer decides the type of a column from its first batch with data.
func infer(cells []string) csvType {
	var num, str, flt int
	for _, c := range cells {
		t := c
		if len(t) > 0 && (t[0] == ' ' || t[len(t)-1] == ' ' || t[0] == '\t' || t[len(t)-1] == '\t') {
			t = strings.TrimSpace(t)
		}
		if isNumericNull(t) {
			continue
		}
		if !mayBeNumber(t) {
			str++
		} else if _, err := strconv.ParseInt(t, 10, 64); err == nil {
			num++
		} else if _, ok := parseFloat(t); ok {
			num++
			flt++
		} else {
			str++
		}
	}
	switch {
	case num+str == 0:
		return ctUndecided
	case num > str && flt > 0:
		return ctFloat
	case num > str:
		return ctInt
	}
	return ctString
}

func (p *csvParser) flush(cells [][]string, lines []int) error {
	b := csvBatch{n: len(lines), cols: make([]arrow.Array, len(cells))}
	for k, col := range cells {
		if p.types[k] == ctUndecided {
			p.types[k] = infer(col)
		}
		var err error
		switch p.types[k] {
		case ctInt:
			var widened bool
			b.cols[k], widened, err = p.parseInts(k, col, lines)
			if widened {
				p.types[k] = ctFloat
			}
		case ctFloat:
			b.cols[k], err = p.parseFloats(k, col, lines)
		case ctString:
			b.cols[k] = p.strings(col)
		}
		if err != nil {
			releaseArrays(b.cols)
			return err
		}
	}
	p.batches = append(p.batches, b)
	return nil
}

func (p *csvParser) parseErr(k int, line int, cell string) error {
	return fmt.Errorf("%s: line %d, column %s: cannot parse %q as a number", p.name, line, p.header[p.sel[k]], cell)
}

// parseInts parses an Int64 column; when a cell is a float but not an
// int, it parses the batch as Float64 instead and reports widened.
func (p *csvParser) parseInts(k int, col []string, lines []int) (arrow.Array, bool, error) {
	vals := make([]int64, len(col))
	valid := make([]bool, len(col))
	nulls := 0
	for i, c := range col {
		if isNumericNull(c) {
			nulls++
			continue
		}
		v, err := strconv.ParseInt(c, 10, 64)
		if err != nil {
			t := strings.TrimSpace(c)
			if isNumericNull(t) {
				nulls++
				continue
			}
			if v, err = strconv.ParseInt(t, 10, 64); err != nil {
				if _, ok := parseFloat(t); ok {
					a, err := p.parseFloats(k, col, lines)
					return a, true, err
				}
				return nil, false, p.parseErr(k, lines[i], c)
			}
		}
		vals[i], valid[i] = v, true
	}
	if nulls == 0 {
		valid = nil
	}
	bld := array.NewInt64Builder(p.mem)
	defer bld.Release()
	bld.AppendValues(vals, valid)
	return bld.NewArray(), false, nil
}

func (p *csvParser) parseFloats(k int, col []string, lines []int) (arrow.Array, error) {
	vals := make([]float64, len(col))
	valid := make([]bool, len(col))
	nulls := 0
	for i, c := range col {
		if isNumericNull(c) {
			nulls++
			continue
		}
		v, err := strconv.ParseFloat(c, 64)
		if err != nil {
			t := strings.TrimSpace(c)
			if isNumericNull(t) {
				nulls++
				continue
			}
			var ok bool
			if v, ok = parseFloat(t); !ok {
				return nil, p.parseErr(k, lines[i], c)
			}
		}
		vals[i], valid[i] = v, true
	}
	if nulls == 0 {
		valid = nil
	}
	bld := array.NewFloat64Builder(p.mem)
	defer bld.Release()
	bld.AppendValues(vals, valid)
	return bld.NewArray(), nil
}

func (p *csvParser) strings(col []string) arrow.Array {
	valid := make([]bool, len(col))
	nulls, total := 0, 0
	for i, c := range col {
		if isStringNull(c) {
			col[i] = ""
			nulls++
			continue
		}
		valid[i] = true
		total += len(c)
	}
	if nulls == 0 {
		valid = nil
	}
	bld := array.NewStringBuilder(p.mem)
	defer bld.Release()
	bld.ReserveData(total)
	bld.AppendValues(col, valid)
	return bld.NewArray()
}

// finish resolves the final column types and assembles the records.
func (p *csvParser) finish() (*arrow.Schema, []arrow.Record, error) {
	fields := make([]arrow.Field, len(p.sel))
	for k, j := range p.sel {
		var dt arrow.DataType
		switch p.types[k] {
		case ctInt:
			dt = arrow.PrimitiveTypes.Int64
		case ctString:
			dt = arrow.BinaryTypes.String
		default:
			dt = arrow.PrimitiveTypes.Float64
		}
		fields[k] = arrow.Field{Name: p.header[j], Type: dt, Nullable: true}
	}
	schema := arrow.NewSchema(fields, nil)
	recs := make([]arrow.Record, 0, len(p.batches))
	for _, b := range p.batches {
		for k, a := range b.cols {
			dt := fields[k].Type
			switch {
			case a == nil:
				b.cols[k] = array.MakeArrayOfNull(p.mem, dt, b.n)
			case !arrow.TypeEqual(a.DataType(), dt):
				// Int64 batch of a column widened to Float64 later.
				b.cols[k] = int64ToFloat64(p.mem, a.(*array.Int64))
				a.Release()
			}
		}
		recs = append(recs, array.NewRecord(schema, b.cols, int64(b.n)))
		releaseArrays(b.cols)
	}
	p.batches = nil
	return schema, recs, nil
}
