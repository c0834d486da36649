package model

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
)

// internalPanic marks an error made from a recovered panic of this
// package's own code: always a bug (the fuzz tests fail on it).
const internalPanic = "internal error while decoding"

// DecodeBytes decodes b, which must hold exactly one model stream: bytes
// after the end-of-stream marker are rejected as ErrCorrupt. It verifies
// the checksum and model ID, validates the forest (forest.Validate) and the
// metadata's consistency, so a forest it returns is safe to score.
//
// Errors are one line and match, with errors.Is, one of ErrNotModel,
// ErrTruncated, ErrChecksum, ErrFutureVersion or ErrCorrupt. Memory use is
// bounded by a constant factor of the bytes actually read, whatever
// lengths a corrupt stream claims.
func DecodeBytes(b []byte) (*forest.Forest, Meta, error) { return codec{}.DecodeBytes(b) }

// ReadFile decodes the model file at path like DecodeBytes, trailing data
// rejected too. Errors name the path and keep the sentinel for errors.Is.
func ReadFile(path string) (*forest.Forest, Meta, error) { return codec{}.ReadFile(path) }

// DecodeBytes decodes b, which must hold exactly one model stream: bytes
// after the end-of-stream marker are rejected as ErrCorrupt.
func (c codec) DecodeBytes(b []byte) (*forest.Forest, Meta, error) {
	r := &sliceReader{b: b}
	f, m, err := c.Decode(r)
	if err != nil {
		return nil, Meta{}, err
	}
	if n := r.Len(); n > 0 {
		return nil, Meta{}, corrupt("%d bytes of trailing data after the end-of-stream marker", n)
	}
	return f, m, nil
}

// ReadFile decodes the model file at path; like DecodeBytes it rejects
// trailing data. Errors name the path and keep the sentinel for errors.Is.
func (c codec) ReadFile(path string) (*forest.Forest, Meta, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, Meta{}, fmt.Errorf("model: %w", err)
	}
	defer fh.Close()
	br := bufio.NewReaderSize(fh, 1<<20)
	f, m, err := c.Decode(br)
	if err == nil {
		if _, perr := br.Peek(1); perr == nil {
			err = corrupt("trailing data after the end-of-stream marker")
		} else if perr != io.EOF {
			err = fmt.Errorf("reading model: %w", perr)
		}
	}
	if err != nil {
		return nil, Meta{}, fmt.Errorf("model %s: %w", path, err)
	}
	return f, m, nil
}

// Decode reads one model stream from r, up to and including its
// end-of-stream marker, and never reads beyond it. It verifies the checksum
// and model ID, validates every tree (tree.Validate) and the metadata's
// consistency, so a forest it returns is safe to score.
//
// Errors are one line and match, with errors.Is, one of ErrNotModel,
// ErrTruncated, ErrChecksum, ErrFutureVersion or ErrCorrupt — except
// read errors of r itself, which are returned wrapped as they are. Memory
// use is bounded by a constant factor of the bytes actually read, whatever
// lengths a corrupt stream claims.
func (c codec) Decode(r io.Reader) (*forest.Forest, Meta, error) {
	f, _, m, err := c.decode(r, false)
	return f, m, err
}

// DecodeCompiled decodes b like DecodeBytes, with its checks, and returns
// the forest compiled for scoring. A model of format 5 (the compact
// layout) is compiled from its node table directly, validated once
// (forest.CompileCompact), and its forest is the header alone: Trees is
// nil (ReadFile or Decode give the trees). A drf model, or one of an older
// format, is decoded whole and compiled (forest.Compile; a drf model's
// Compiled is nil: it predicts through manifold.NewPredictor).
func (c codec) DecodeCompiled(b []byte) (*forest.Forest, *forest.Compiled, Meta, error) {
	r := &sliceReader{b: b}
	f, comp, m, err := c.decode(r, true)
	if err != nil {
		return nil, nil, Meta{}, err
	}
	if n := r.Len(); n > 0 {
		return nil, nil, Meta{}, corrupt("%d bytes of trailing data after the end-of-stream marker", n)
	}
	return f, comp, m, nil
}

// DecodeCompiled decodes b like DecodeBytes, with its checks, and returns
// the forest compiled for scoring. A model of format 5 (the compact
// layout) is compiled from its node table directly, validated once
// (forest.CompileCompact), and its forest is the header alone: Trees is
// nil (ReadFile or DecodeBytes give the trees). A drf model, or one of an
// older format, is decoded whole and compiled (forest.Compile; a drf
// model's Compiled is nil: it predicts through manifold.NewPredictor).
func DecodeCompiled(b []byte) (*forest.Forest, *forest.Compiled, Meta, error) {
	return codec{}.DecodeCompiled(b)
}

// decode is Decode, and with compile DecodeCompiled.
func (c codec) decode(r io.Reader, compile bool) (f *forest.Forest, comp *forest.Compiled, m Meta, err error) {
	mr := &msgReader{r: r, refs: 1}
	if sr, ok := r.(*sliceReader); ok {
		mr.size = int64(sr.Len())
	}
	alloc := &budgetAllocator{mem: c.alloc(), read: &mr.read, out: map[*byte]int{}}
	defer alloc.freeAll() // runs after rdr.Release below
	// ipc.Reader recovers the panics of its own decoding; this is the last
	// line of defence for anything else.
	defer func() {
		if p := recover(); p != nil {
			f, comp, m, err = nil, nil, Meta{}, corrupt("%s: %v", internalPanic, p)
		}
	}()
	rdr, err := ipc.NewReaderFromMessageReader(mr, ipc.WithAllocator(alloc))
	if err != nil {
		mr.Release()
		if mr.err != nil {
			return nil, nil, Meta{}, mr.err
		}
		if mr.eos {
			return nil, nil, Meta{}, notModel("Arrow stream has no schema")
		}
		return nil, nil, Meta{}, newError(ErrCorrupt, err, "reading schema")
	}
	defer rdr.Release()
	if f, comp, m, err = decodeStream(rdr, mr, compile); err != nil {
		return nil, nil, Meta{}, err
	}
	if compile && comp == nil && f.Kind != forest.KindDRF {
		if comp, err = forest.Compile(f); err != nil {
			return nil, nil, Meta{}, wrapCorrupt(err)
		}
	}
	return f, comp, m, nil
}

func decodeStream(rdr *ipc.Reader, mr *msgReader, compile bool) (*forest.Forest, *forest.Compiled, Meta, error) {
	schema := rdr.Schema()
	entries, st, err := readMetadata(schema)
	if err != nil {
		return nil, nil, Meta{}, err
	}
	spec := nodeColumns
	if st.version >= compactVersion {
		spec = compactColumns
	}
	if err := checkSchema(spec, schema); err != nil {
		return nil, nil, Meta{}, err
	}

	reserve := st.nodes
	if spec[0].name == compactColumns[0].name && mr.size > 0 {
		// a format-5 row takes 8 bytes of the input, so the input's size
		// bounds the rows: room for them all at once (no regrowth) is
		// within the memory the input justifies
		reserve = mr.size / 8
	}
	tab := newDecodeTable(spec, reserve)
	batches := 0
	for rdr.Next() {
		if err := tab.appendRecord(rdr.Record()); err != nil {
			return nil, nil, Meta{}, corrupt("record batch %d: %v", batches, err)
		}
		batches++
	}
	if mr.cleanEOF {
		return nil, nil, Meta{}, truncated("stream ended after %d of %d nodes without an end-of-stream marker", tab.rows, st.nodes)
	}
	if mr.err != nil {
		return nil, nil, Meta{}, mr.err
	}
	if err := rdr.Err(); err != nil {
		return nil, nil, Meta{}, newError(ErrCorrupt, err, "record batch %d", batches)
	}
	if !mr.eos {
		return nil, nil, Meta{}, truncated("stream ended after %d of %d nodes without an end-of-stream marker", tab.rows, st.nodes)
	}

	d := canonicalDigest(entries, tab)
	stored, _ := schema.Metadata().GetValue(keyChecksum)
	if stored != d.checksum {
		return nil, nil, Meta{}, newError(ErrChecksum, nil, "stored %q, content has %s", stored, d.checksum)
	}
	if id, _ := schema.Metadata().GetValue(keyModelID); id != d.id {
		return nil, nil, Meta{}, newError(ErrChecksum, nil, "model_id %q does not match the content (%s)", id, d.id)
	}
	st.meta.ID = d.id

	if int64(tab.rows) != st.nodes && st.version < compactVersion {
		return nil, nil, Meta{}, corrupt("node table has %d rows but %s is %d", tab.rows, keyNodes, st.nodes)
	}
	for _, e := range entries {
		k := lookupMetaKey(e.key)
		if k.dec == nil {
			continue
		}
		if err := k.dec(e.value, st); err != nil {
			return nil, nil, Meta{}, corrupt("metadata %s: %v", e.key, err)
		}
	}
	if st.version >= compactVersion {
		f, comp, meta, err := decodeCompact(tab, st, compile)
		if err != nil {
			return nil, nil, Meta{}, err
		}
		if meta.Reference, err = readReference(schema.Metadata(), f, d.id); err != nil { // reference.go
			return nil, nil, Meta{}, err
		}
		return f, comp, meta, nil
	}
	trees, err := tab.split()
	if err != nil {
		return nil, nil, Meta{}, corrupt("%v", err)
	}
	if int64(len(trees)) != st.trees {
		return nil, nil, Meta{}, corrupt("node table has %d trees but %s is %d", len(trees), keyTrees, st.trees)
	}
	st.f.Trees = trees
	// the format is checked: now the meaning, once (forest.Validate)
	if err := st.f.Validate(); err != nil {
		return nil, nil, Meta{}, wrapCorrupt(err)
	}
	if v := formatVersionFor(st.f); v > st.version {
		return nil, nil, Meta{}, corrupt("%s %d cannot hold what this model carries (it needs version %d)", KeyFormatVersion, st.version, v)
	}
	if st.meta.Reference, err = readReference(schema.Metadata(), st.f, d.id); err != nil { // reference.go
		return nil, nil, Meta{}, err
	}
	return st.f, nil, st.meta, nil
}

// readMetadata checks the format keys and returns the metadata entries the
// checksum covers, with trees and nodes parsed.
func readMetadata(schema *arrow.Schema) ([]metaEntry, *decodeState, error) {
	md := schema.Metadata()
	seen := map[string]string{}
	var entries []metaEntry
	for i, key := range md.Keys() {
		if !strings.HasPrefix(key, keyPrefix) {
			continue // other tools' metadata: ignored and not covered
		}
		if _, dup := seen[key]; dup {
			return nil, nil, corrupt("metadata key %s appears twice", key)
		}
		v := md.Values()[i]
		seen[key] = v
		if key != keyChecksum && key != keyModelID {
			entries = append(entries, metaEntry{key, v})
		}
	}
	format, ok := seen[KeyFormat]
	if !ok {
		if len(seen) > 0 {
			return nil, nil, corrupt("metadata has forestd keys but no %s", KeyFormat)
		}
		return nil, nil, notModel("Arrow stream without %s metadata", KeyFormat)
	}
	if format != FormatName {
		return nil, nil, notModel("%s is %q, want %q", KeyFormat, format, FormatName)
	}
	vs, ok := seen[KeyFormatVersion]
	if !ok {
		return nil, nil, corrupt("missing %s", KeyFormatVersion)
	}
	version, err := strconv.ParseInt(vs, 10, 64)
	if err != nil || version < 1 {
		return nil, nil, corrupt("bad %s %q", KeyFormatVersion, vs)
	}
	if version > FormatVersion {
		return nil, nil, futureVersion(version)
	}
	for _, key := range []string{keyChecksum, keyModelID} {
		if _, ok := seen[key]; !ok {
			return nil, nil, corrupt("missing %s", key)
		}
	}
	for _, e := range entries {
		if lookupMetaKey(e.key) == nil {
			return nil, nil, corrupt("unknown metadata key %s", e.key)
		}
		if !utf8.ValidString(e.value) {
			return nil, nil, corrupt("metadata %s is not valid UTF-8", e.key)
		}
	}
	for _, k := range metaKeys {
		if _, ok := seen[k.key]; !ok && !k.optional {
			return nil, nil, corrupt("missing %s", k.key)
		}
	}
	st := &decodeState{version: int(version), f: &forest.Forest{}}
	for _, key := range []string{keyTrees, keyNodes} {
		if err := lookupMetaKey(key).dec(seen[key], st); err != nil {
			return nil, nil, corrupt("metadata %s: %v", key, err)
		}
	}
	return entries, st, nil
}

func checkSchema(spec []column, schema *arrow.Schema) error {
	if schema.NumFields() != len(spec) {
		return corrupt("node table has %d columns, want %d", schema.NumFields(), len(spec))
	}
	for i, c := range spec {
		fl := schema.Field(i)
		if fl.Name != c.name {
			return corrupt("column %d is %q, want %q", i, fl.Name, c.name)
		}
		if !c.kind.matches(fl.Type) {
			return corrupt("column %s has type %s, want %s", c.name, fl.Type, c.kind.arrowType())
		}
	}
	return nil
}

// newDecodeTable prepares an empty table, reserving room for the expected
// number of rows only up to a modest bound (the count is not yet verified).
func newDecodeTable(spec []column, nodes int64) *table {
	tab := &table{spec: spec, cols: make([]tableCol, len(spec))}
	reserve := int(min(nodes, 1<<16))
	if spec[0].name == compactColumns[0].name {
		reserve = int(nodes) // bounded by the input's size (decodeStream)
	}
	for ci, c := range spec {
		tc := &tab.cols[ci]
		if c.kind.isList() {
			tc.off = make([]int64, 1, reserve+1)
			continue
		}
		switch c.kind {
		case kInt32:
			tc.i32 = make([]int32, 0, reserve)
		case kFloat32:
			tc.f32 = make([]float32, 0, reserve)
		case kFloat64:
			tc.f64 = make([]float64, 0, reserve)
		case kBool:
			tc.b = make([]bool, 0, reserve)
		}
	}
	return tab
}

// appendRecord copies a record batch into the table, checking every buffer
// length, offset and null count itself rather than trusting the IPC
// metadata.
func (tab *table) appendRecord(rec arrow.Record) error {
	if rec.NumCols() != int64(len(tab.spec)) {
		return fmt.Errorf("%d columns, want %d", rec.NumCols(), len(tab.spec))
	}
	n := rec.NumRows()
	if n < 0 || n > 1<<31 {
		return fmt.Errorf("bad row count %d", n)
	}
	rows := int(n)
	// Extract every column before appending any, so a failing batch
	// leaves the table unchanged.
	cols := make([]treeCol, len(tab.spec))
	for ci, c := range tab.spec {
		col, err := extract(rec.Column(ci).Data(), c.kind, rows)
		if err != nil {
			return fmt.Errorf("column %s: %w", c.name, err)
		}
		cols[ci] = col
	}
	for ci, c := range tab.spec {
		tc, col := &tab.cols[ci], cols[ci]
		if !c.kind.isList() {
			tc.appendFrom(c.kind, col.values, 0, rows)
			continue
		}
		base, o0 := tc.off[len(tc.off)-1], int64(col.off[0])
		for _, o := range col.off[1:] {
			tc.off = append(tc.off, base+int64(o)-o0)
		}
		tc.appendFrom(c.kind, col.values, int(col.off[0]), int(col.off[rows]))
	}
	tab.rows += rows
	return nil
}

// extract returns views of a column's values; for lists, off holds rows+1
// offsets into the element values (not necessarily starting at 0).
func extract(d arrow.ArrayData, k kind, rows int) (treeCol, error) {
	if d.Len() != rows {
		return treeCol{}, fmt.Errorf("%d values for %d rows", d.Len(), rows)
	}
	if !k.isList() {
		v, err := scalarValues(d, k)
		return treeCol{values: v}, err
	}
	if d.NullN() != 0 {
		return treeCol{}, fmt.Errorf("null count %d, want 0", d.NullN())
	}
	if d.Offset() < 0 {
		return treeCol{}, fmt.Errorf("negative array offset")
	}
	ob := buffer(d, 1)
	need := 4 * (int64(d.Offset()) + int64(rows) + 1)
	if int64(len(ob)) < need {
		return treeCol{}, fmt.Errorf("offsets buffer has %d bytes, want %d", len(ob), need)
	}
	off := arrow.Int32Traits.CastFromBytes(ob)[d.Offset() : d.Offset()+rows+1]
	if len(d.Children()) != 1 {
		return treeCol{}, fmt.Errorf("list without one child array")
	}
	child := d.Children()[0]
	v, err := scalarValues(child, k.elem())
	if err != nil {
		return treeCol{}, fmt.Errorf("list values: %w", err)
	}
	if off[0] < 0 {
		return treeCol{}, fmt.Errorf("negative list offset")
	}
	for i := 1; i <= rows; i++ {
		if off[i] < off[i-1] {
			return treeCol{}, fmt.Errorf("list offsets decrease at row %d", i-1)
		}
	}
	if int(off[rows]) > child.Len() {
		return treeCol{}, fmt.Errorf("list offsets reach %d past %d values", off[rows], child.Len())
	}
	return treeCol{values: v, off: off}, nil
}

// scalarValues returns views of the d.Len() values of a fixed-width array
// (bools unpacked into a new slice).
func scalarValues(d arrow.ArrayData, k kind) (values, error) {
	if !k.matches(d.DataType()) {
		return values{}, fmt.Errorf("type %s, want %s", d.DataType(), k.arrowType())
	}
	if d.NullN() != 0 {
		return values{}, fmt.Errorf("null count %d, want 0", d.NullN())
	}
	n, off := int64(d.Len()), int64(d.Offset())
	if n < 0 || off < 0 {
		return values{}, fmt.Errorf("negative length or offset")
	}
	b := buffer(d, 1)
	if k == kBool {
		if int64(len(b))*8 < off+n {
			return values{}, fmt.Errorf("bitmap has %d bytes for %d values", len(b), n)
		}
		out := make([]bool, n)
		for i := range out {
			out[i] = bitutil.BitIsSet(b, int(off)+i)
		}
		return values{b: out}, nil
	}
	w := int64(k.width())
	if int64(len(b)) < w*(off+n) {
		return values{}, fmt.Errorf("values buffer has %d bytes for %d values", len(b), n)
	}
	lo, hi := int(off), int(off+n)
	switch k {
	case kInt32:
		return values{i32: arrow.Int32Traits.CastFromBytes(b)[lo:hi]}, nil
	case kFloat32:
		return values{f32: arrow.Float32Traits.CastFromBytes(b)[lo:hi]}, nil
	case kFloat64:
		return values{f64: arrow.Float64Traits.CastFromBytes(b)[lo:hi]}, nil
	}
	return values{}, fmt.Errorf("unexpected kind %#x", uint8(k))
}

func buffer(d arrow.ArrayData, i int) []byte {
	bufs := d.Buffers()
	if i >= len(bufs) || bufs[i] == nil {
		return nil
	}
	return bufs[i].Bytes()
}

// msgReader is an ipc.MessageReader that frames messages itself so that it
// can tell a clean end-of-stream marker from a truncated input, classify
// errors, and read claimed lengths incrementally (a corrupt length cannot
// make it allocate more than the input holds).
type msgReader struct {
	r    io.Reader
	size int64 // the input's size when known (a bytes.Reader), else 0
	read int64 // bytes consumed
	eos  bool  // the end-of-stream marker was read
	// count is the number of messages read (the first must be a schema).
	count int
	// cleanEOF: the input ended exactly between two messages.
	cleanEOF bool
	err      error // the first error returned, already classified
	msg      *ipc.Message
	refs     int64
}

const ipcContinuation = 0xFFFFFFFF

func (m *msgReader) Retain() { m.refs++ }

func (m *msgReader) Release() {
	m.refs--
	if m.refs == 0 && m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
}

func (m *msgReader) Message() (*ipc.Message, error) {
	if m.err != nil {
		return nil, m.err
	}
	if m.eos {
		return nil, io.EOF
	}
	msg, err := m.next()
	if err != nil && err != io.EOF {
		m.err = err
	}
	return msg, err
}

func (m *msgReader) next() (*ipc.Message, error) {
	start := m.read
	var hdr [8]byte
	if err := m.readFull(hdr[:4]); err != nil {
		if err == io.EOF { // no byte of a new message
			if start == 0 {
				return nil, truncated("empty input")
			}
			m.cleanEOF = true
			return nil, truncated("input ends at byte %d without an end-of-stream marker", start)
		}
		return nil, m.readErr(err, start)
	}
	if binary.LittleEndian.Uint32(hdr[:4]) != ipcContinuation {
		if start == 0 {
			if bytes.Equal(hdr[:4], []byte("ARRO")) {
				return nil, notModel("input is an Arrow IPC file, not an Arrow IPC stream")
			}
			return nil, notModel("input is not an Arrow IPC stream")
		}
		return nil, corrupt("no IPC message marker at byte %d", start)
	}
	if err := m.readFull(hdr[4:]); err != nil {
		return nil, m.readErr(err, start)
	}
	metaLen := int32(binary.LittleEndian.Uint32(hdr[4:]))
	switch {
	case metaLen == 0:
		m.eos = true
		return nil, io.EOF
	case metaLen < 0:
		return nil, corrupt("negative IPC metadata length at byte %d", start)
	}
	meta, err := m.readN(int64(metaLen))
	if err != nil {
		return nil, m.readErr(err, start)
	}
	bodyLen, err := verifyMessage(meta, m.count == 0)
	if err != nil {
		return nil, newError(ErrCorrupt, err, "IPC message at byte %d", start)
	}
	m.count++
	body, err := m.readN(bodyLen)
	if err != nil {
		return nil, m.readErr(err, start)
	}
	mb, bb := memory.NewBufferBytes(meta), memory.NewBufferBytes(body)
	msg, err := newMessage(mb, bb)
	if err != nil {
		return nil, newError(ErrCorrupt, err, "IPC message at byte %d", start)
	}
	if m.msg != nil {
		m.msg.Release()
	}
	m.msg = msg
	return msg, nil
}

func (m *msgReader) readErr(err error, start int64) error {
	if isEOF(err) {
		return truncated("input ends inside the IPC message at byte %d", start)
	}
	return fmt.Errorf("reading model: %w", err)
}

func isEOF(err error) bool { return err == io.EOF || err == io.ErrUnexpectedEOF }

func (m *msgReader) readFull(b []byte) error {
	n, err := io.ReadFull(m.r, b)
	m.read += int64(n)
	return err
}

// readN reads exactly n bytes, growing the buffer only as data arrives.
func (m *msgReader) readN(n int64) ([]byte, error) {
	if n < 0 {
		return nil, corrupt("negative IPC length")
	}
	if sr, ok := m.r.(*sliceReader); ok {
		// the input is in memory: a view of it, no copy (the decoder
		// copies every value out of Arrow's arrays before it returns)
		b := sr.next(n)
		m.read += int64(len(b))
		if int64(len(b)) < n {
			return nil, io.ErrUnexpectedEOF
		}
		return b, nil
	}
	const eager = 1 << 20
	if n <= eager {
		b := make([]byte, n)
		return b, m.readFull(b)
	}
	var buf bytes.Buffer
	buf.Grow(eager)
	got, err := io.CopyN(&buf, m.r, n)
	m.read += got
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf.Bytes(), nil
}

func newMessage(meta, body *memory.Buffer) (msg *ipc.Message, err error) {
	defer func() {
		if p := recover(); p != nil {
			msg, err = nil, fmt.Errorf("bad IPC message metadata: %v", p)
		}
	}()
	if len(meta.Bytes()) < 8 {
		return nil, errors.New("IPC message metadata too short")
	}
	// Buffers made by memory.NewBufferBytes are not reference counted,
	// so nothing needs releasing here.
	msg = ipc.NewMessage(meta, body)
	_ = msg.Type() // touch the header so a bad flatbuffer fails here
	return msg, nil
}

// budgetAllocator wraps the codec's allocator for one Decode. It fails
// (by panicking, which ipc.Reader turns into an error) when live
// allocations would exceed a constant factor of the bytes read so far, so a
// corrupt buffer length cannot allocate gigabytes. It also remembers every
// outstanding allocation: the Arrow reader leaks buffers when it fails in
// the middle of a record batch, and since nothing decoded from Arrow memory
// outlives Decode (every value is copied out), freeAll returns whatever is
// left to the underlying allocator when Decode finishes.
type budgetAllocator struct {
	mem  memory.Allocator
	read *int64
	live int64
	out  map[*byte]int
}

var errBudget = errors.New("allocation larger than the input can justify")

// reserve fails the Decode when a buffer of size bytes replacing one of old
// bytes would be negative or overrun the budget. memory.Allocator has no
// error return, so a panic is the only way to refuse an allocation (an
// allocator returning a short or nil slice would make arrow-go write out
// of bounds). The Arrow IPC reader recovers it into its error, and Decode
// recovers whatever that misses itself, so it never leaves this package.
func (a *budgetAllocator) reserve(size, old int) {
	if next := a.live + int64(size-old); size < 0 || next < 0 || (size > old && next > 16*(*a.read)+(1<<20)) {
		panic(errBudget)
	}
}

func (a *budgetAllocator) Allocate(size int) []byte {
	a.reserve(size, 0)
	b := a.mem.Allocate(size)
	a.live += int64(size)
	a.out[unsafe.SliceData(b)] = len(b)
	return b
}

func (a *budgetAllocator) Reallocate(size int, b []byte) []byte {
	a.reserve(size, len(b))
	delete(a.out, unsafe.SliceData(b))
	nb := a.mem.Reallocate(size, b)
	a.live += int64(size - len(b))
	a.out[unsafe.SliceData(nb)] = len(nb)
	return nb
}

func (a *budgetAllocator) Free(b []byte) {
	delete(a.out, unsafe.SliceData(b))
	a.live -= int64(len(b))
	a.mem.Free(b)
}

func (a *budgetAllocator) freeAll() {
	for p, n := range a.out {
		a.mem.Free(unsafe.Slice(p, n))
	}
	clear(a.out)
	a.live = 0
}

// sliceReader reads a model held in memory (DecodeBytes,
// DecodeCompiled); msgReader takes message bodies from it as views
// instead of copies.
type sliceReader struct {
	b []byte
	i int
}

func (r *sliceReader) Read(p []byte) (int, error) {
	if r.i >= len(r.b) {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.i:])
	r.i += n
	return n, nil
}

// Len is the number of bytes not yet read.
func (r *sliceReader) Len() int { return len(r.b) - r.i }

// next returns a view of the next n bytes, fewer at the end of the input.
func (r *sliceReader) next(n int64) []byte {
	e := min(int64(r.i)+n, int64(len(r.b)))
	v := r.b[r.i:e:e]
	r.i = int(e)
	return v
}
