package files

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// parquet-go v0.32.0 decodes a Parquet footer (a Thrift compact-protocol
// FileMetaData) with reflection, sizing every list from the length the
// footer claims before it reads a single element: a 25-byte file whose
// schema list claims 2^31-1 elements makes it allocate hundreds of
// gigabytes and the Go runtime aborts ("fatal error: runtime: out of
// memory"), which no recover can catch. It has no option to bound the
// footer. So every Parquet file is opened through openParquetFile, which
// first walks the footer's Thrift encoding without allocating, as
// internal/ipcread's fbcheck.go does for Arrow IPC flatbuffers, and refuses a footer whose
// lists, strings or nesting cannot be what they claim (ARCHITECTURE.md,
// File map: connectors/files).

// ErrCorruptParquet marks a Parquet file whose footer is refused before it
// is decoded: an input error (the file is at fault, not the reader), so a
// lake skips the file and a command exits 1 with one line naming it.
var ErrCorruptParquet = errors.New("corrupt Parquet footer")

const (
	// MaxParquetFooterBytes bounds the footer (FileMetaData) of a Parquet
	// file: 64 MiB is ten times the footer of a file with 10,000 columns
	// in 100 row groups, with statistics.
	MaxParquetFooterBytes = 64 << 20

	// MaxParquetFooterMemory bounds the memory the decoded footer may take,
	// as thriftWalk estimates it (an upper bound).
	MaxParquetFooterMemory = 1 << 30

	// maxThriftDepth bounds the nesting of structs and lists in a footer:
	// FileMetaData's deepest path (a row group's column chunk's metadata's
	// geospatial statistics' bounding box) is 6 deep; parquet-go decodes
	// and skips nested values recursively, so a deeper claim could
	// overflow its stack, another fatal error.
	maxThriftDepth = 32

	// Per-element charges of thriftWalk, upper bounds of what parquet-go
	// holds per decoded element: a struct in a list is at most a
	// format.ColumnChunk (560 bytes in v0.32.0; parquetFooterCosts_test
	// checks it) plus parquet-go's own state for it (a column chunk
	// reader); a struct field not in a list may be a union member,
	// allocated on its own; a string or byte slice header is 24 bytes plus
	// its bytes.
	thriftListStructCost = 1024
	thriftStructCost     = 64
	thriftSliceCost      = 24
	thriftScalarCost     = 8
)

// Thrift compact-protocol types.
const (
	tcStop   = 0
	tcTrue   = 1
	tcFalse  = 2
	tcByte   = 3
	tcI16    = 4
	tcI32    = 5
	tcI64    = 6
	tcDouble = 7
	tcBinary = 8
	tcList   = 9
	tcSet    = 10
	tcMap    = 11
	tcStruct = 12
)

// fileMetaDataFields names FileMetaData's fields, for errors.
var fileMetaDataFields = [...]string{1: "version", 2: "schema", 3: "num_rows", 4: "row_groups",
	5: "key_value_metadata", 6: "created_by", 7: "column_orders", 8: "encryption_algorithm",
	9: "footer_signing_key_metadata"}

// thriftWalk checks a Thrift compact-protocol struct in b without
// decoding it: every list, set, map and binary length must fit in the
// bytes that remain (an element takes at least one byte; a double eight),
// nesting stays within maxThriftDepth, and the memory a decoder would
// hold (cost, charged per element, see the costs above) within budget.
type thriftWalk struct {
	b      []byte
	p      int
	cost   int64
	budget int64
	top    int      // the top-level field being walked (for errors)
	fields []string // names of the top-level fields; nil: FileMetaData's
}

func (w *thriftWalk) fail(format string, args ...any) error {
	where, names := "", w.fields
	if names == nil {
		names = fileMetaDataFields[:]
	}
	if w.top > 0 && w.top < len(names) && names[w.top] != "" {
		where = "field " + names[w.top] + ": "
	} else if w.top > 0 {
		where = fmt.Sprintf("field %d: ", w.top)
	}
	return fmt.Errorf("%w: %s%s (at byte %d of %d)", ErrCorruptParquet, where, fmt.Sprintf(format, args...), w.p, len(w.b))
}

func (w *thriftWalk) left() uint64 { return uint64(len(w.b) - w.p) }

func (w *thriftWalk) byte1() (byte, error) {
	if w.p >= len(w.b) {
		return 0, w.fail("ends early")
	}
	c := w.b[w.p]
	w.p++
	return c, nil
}

func (w *thriftWalk) skip(n uint64) error {
	if n > w.left() {
		return w.fail("%d bytes claimed, %d remain", n, w.left())
	}
	w.p += int(n)
	return nil
}

func (w *thriftWalk) uvarint() (uint64, error) {
	v, n := binary.Uvarint(w.b[w.p:])
	if n <= 0 {
		return 0, w.fail("bad varint")
	}
	w.p += n
	return v, nil
}

func (w *thriftWalk) charge(n uint64, each int64) error {
	if each > 0 && n > uint64((w.budget-w.cost)/each) {
		return w.fail("%d elements would take more than the %d bytes the footer may decode to", n, w.budget)
	}
	w.cost += int64(n) * each
	return nil
}

// minBytes is the fewest bytes an element of type t takes in a list.
func minBytes(t byte) uint64 {
	if t == tcDouble {
		return 8
	}
	return 1
}

// elemCost is what a decoded list element of type t costs.
func elemCost(t byte) int64 {
	switch t {
	case tcStruct:
		return thriftListStructCost
	case tcBinary, tcList, tcSet, tcMap:
		return thriftSliceCost
	}
	return thriftScalarCost
}

// value walks one value of type t; inList tells that booleans take a
// byte (as fields they live in the field header).
func (w *thriftWalk) value(t byte, inList bool, depth int) error {
	switch t {
	case tcTrue, tcFalse:
		if inList {
			return w.skip(1)
		}
		return nil
	case tcByte:
		return w.skip(1)
	case tcI16, tcI32, tcI64:
		_, err := w.uvarint()
		return err
	case tcDouble:
		return w.skip(8)
	case tcBinary:
		n, err := w.uvarint()
		if err != nil {
			return err
		}
		if n > w.left() {
			return w.fail("string of %d bytes, %d remain", n, w.left())
		}
		if err := w.charge(n, 1); err != nil {
			return err
		}
		return w.skip(n)
	case tcList, tcSet:
		h, err := w.byte1()
		if err != nil {
			return err
		}
		n, et := uint64(h>>4), h&0x0f
		if n == 15 {
			if n, err = w.uvarint(); err != nil {
				return err
			}
		}
		return w.elements(n, et, 0, false, depth)
	case tcMap:
		n, err := w.uvarint()
		if err != nil || n == 0 {
			return err
		}
		h, err := w.byte1()
		if err != nil {
			return err
		}
		return w.elements(n, h>>4, h&0x0f, true, depth)
	case tcStruct:
		if err := w.charge(1, thriftStructCost); err != nil {
			return err
		}
		return w.structure(depth + 1)
	}
	return w.fail("unknown Thrift type %d", t)
}

// elements walks n list elements of type kt, or with isMap n map entries
// of key type kt and value type vt.
func (w *thriftWalk) elements(n uint64, kt, vt byte, isMap bool, depth int) error {
	if depth+1 > maxThriftDepth {
		return w.fail("nested deeper than %d", maxThriftDepth)
	}
	if kt == tcStop || kt > tcStruct || (isMap && (vt == tcStop || vt > tcStruct)) {
		return w.fail("list or map of unknown Thrift type %d/%d", kt, vt)
	}
	per, cost := minBytes(kt), elemCost(kt)
	if isMap {
		per, cost = per+minBytes(vt), cost+elemCost(vt)
	}
	if n > w.left()/per {
		return w.fail("list of %d elements, %d bytes remain", n, w.left())
	}
	if err := w.charge(n, cost); err != nil {
		return err
	}
	for i := uint64(0); i < n; i++ {
		if err := w.element(kt, depth+1); err != nil {
			return err
		}
		if isMap {
			if err := w.element(vt, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// element walks a list element: a struct's cost is charged by the list.
func (w *thriftWalk) element(t byte, depth int) error {
	if t == tcStruct {
		return w.structure(depth + 1)
	}
	return w.value(t, true, depth)
}

// structure walks a struct's fields up to its stop byte.
func (w *thriftWalk) structure(depth int) error {
	if depth > maxThriftDepth {
		return w.fail("nested deeper than %d", maxThriftDepth)
	}
	var id int64
	for {
		h, err := w.byte1()
		if err != nil {
			return err
		}
		t := h & 0x0f
		if t == tcStop {
			return nil
		}
		if d := int64(h >> 4); d != 0 { // the id is the last one plus d
			id += d
		} else { // a zigzag i16 field id follows
			u, err := w.uvarint()
			if err != nil {
				return err
			}
			id = int64(u>>1) ^ -int64(u&1)
		}
		if depth == 0 {
			w.top = int(id)
		}
		if err := w.value(t, false, depth); err != nil {
			return err
		}
	}
}

// checkParquetFooter walks footer, a FileMetaData, within budget bytes of
// decoded memory.
func checkParquetFooter(footer []byte, budget int64) error {
	w := thriftWalk{b: footer, budget: budget}
	return w.structure(0)
}

// checkParquetFile checks the magic bytes at both ends of a Parquet file
// and its footer: its length (within the file and MaxParquetFooterBytes)
// and its Thrift encoding (checkParquetFooter), so that a truncated file
// is reported as such and a footer bomb as ErrCorruptParquet, before
// parquet-go decodes anything.
func checkParquetFile(r io.ReaderAt, size int64) error {
	var head, tail [8]byte
	if size < 12 {
		return fmt.Errorf("not a Parquet file: only %d bytes", size)
	}
	if _, err := r.ReadAt(head[:4], 0); err != nil {
		return fmt.Errorf("reading Parquet header: %w", err)
	}
	if string(head[:4]) != "PAR1" {
		return fmt.Errorf("not a Parquet file: no PAR1 magic at the start")
	}
	if _, err := r.ReadAt(tail[:], size-8); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading Parquet footer: %w", err)
	}
	if string(tail[4:]) != "PAR1" {
		return fmt.Errorf("not a complete Parquet file: no PAR1 magic at the end (truncated or still being written?)")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-12 {
		return fmt.Errorf("not a complete Parquet file: footer of %d bytes does not fit in %d bytes", n, size)
	}
	if n > MaxParquetFooterBytes {
		return fmt.Errorf("%w: footer of %d bytes, more than %d", ErrCorruptParquet, n, MaxParquetFooterBytes)
	}
	footer := make([]byte, n)
	if _, err := r.ReadAt(footer, size-8-n); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading Parquet footer: %w", err)
	}
	return checkParquetFooter(footer, MaxParquetFooterMemory)
}
