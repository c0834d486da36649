package model

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The Arrow Go IPC reader trusts flatbuffer vector lengths: it allocates
// make([]T, n) from them before touching any element, so one flipped byte
// in a schema can demand tens of gigabytes and kill the process (an
// out-of-memory fault, which recover cannot catch). verifyMessage therefore
// checks every table, vector and string the reader will use against the
// message bounds before the message reaches the Arrow reader. It also
// restricts the message types to what a model contains: the first message
// is a Schema, every later one a RecordBatch, and record batches must not
// use IPC body compression (forestd never writes it).
//
// Slot numbers follow Arrow's Message.fbs and Schema.fbs; the union fields
// take two slots (type tag, then value).

const (
	fbHeaderSchema      = 1
	fbHeaderRecordBatch = 3
	fbTypeUnion         = 14
	maxFieldDepth       = 64
)

var errFlatbuffer = errors.New("flatbuffer out of bounds")

type fbVerifier struct {
	b      []byte
	tables int // tables visited
	limit  int // at most one table per 4 bytes: no DAG blow-up
}

type fbTable struct {
	v      *fbVerifier
	pos    int64
	vt     int64
	vtSize int64
}

func (v *fbVerifier) in(pos, n int64) bool {
	return pos >= 0 && n >= 0 && pos <= int64(len(v.b)) && n <= int64(len(v.b))-pos
}

func (v *fbVerifier) u16(pos int64) (int64, error) {
	if !v.in(pos, 2) {
		return 0, errFlatbuffer
	}
	return int64(binary.LittleEndian.Uint16(v.b[pos:])), nil
}

func (v *fbVerifier) u32(pos int64) (int64, error) {
	if !v.in(pos, 4) {
		return 0, errFlatbuffer
	}
	return int64(binary.LittleEndian.Uint32(v.b[pos:])), nil
}

func (v *fbVerifier) table(pos int64) (fbTable, error) {
	v.tables++
	if v.tables > v.limit {
		return fbTable{}, fmt.Errorf("flatbuffer has too many tables")
	}
	so, err := v.u32(pos)
	if err != nil {
		return fbTable{}, err
	}
	vt := pos - int64(int32(uint32(so)))
	vtSize, err := v.u16(vt)
	if err != nil {
		return fbTable{}, err
	}
	tSize, err := v.u16(vt + 2)
	if err != nil || vtSize < 4 || vtSize%2 != 0 || !v.in(vt, vtSize) || !v.in(pos, tSize) {
		return fbTable{}, errFlatbuffer
	}
	return fbTable{v: v, pos: pos, vt: vt, vtSize: vtSize}, nil
}

// field returns the absolute position of a field, or 0 if it is absent.
func (t fbTable) field(slot int) (int64, error) {
	vo := int64(4 + 2*slot)
	if vo+2 > t.vtSize {
		return 0, nil
	}
	fo, err := t.v.u16(t.vt + vo)
	if err != nil || fo == 0 {
		return 0, err
	}
	return t.pos + fo, nil
}

// scalar checks a scalar field of size bytes and returns its little-endian
// value (0 when absent).
func (t fbTable) scalar(slot int, size int64) (int64, error) {
	p, err := t.field(slot)
	if err != nil || p == 0 {
		return 0, err
	}
	if !t.v.in(p, size) {
		return 0, errFlatbuffer
	}
	switch size {
	case 1:
		return int64(t.v.b[p]), nil
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(t.v.b[p:]))), nil
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(t.v.b[p:]))), nil
	default:
		return int64(binary.LittleEndian.Uint64(t.v.b[p:])), nil
	}
}

// ref follows an offset field to the object it points at.
func (t fbTable) ref(slot int) (int64, bool, error) {
	p, err := t.field(slot)
	if err != nil || p == 0 {
		return 0, false, err
	}
	off, err := t.v.u32(p)
	if err != nil {
		return 0, false, err
	}
	if !t.v.in(p+off, 0) {
		return 0, false, errFlatbuffer
	}
	return p + off, true, nil
}

// vector checks a vector (or string) field of elemSize-byte elements and
// returns the position of its first element and its length.
func (t fbTable) vector(slot int, elemSize int64) (int64, int64, error) {
	p, ok, err := t.ref(slot)
	if err != nil || !ok {
		return 0, 0, err
	}
	n, err := t.v.u32(p)
	if err != nil {
		return 0, 0, err
	}
	if !t.v.in(p+4, n*elemSize) {
		return 0, 0, errFlatbuffer
	}
	return p + 4, n, nil
}

func (t fbTable) child(slot int) (fbTable, bool, error) {
	p, ok, err := t.ref(slot)
	if err != nil || !ok {
		return fbTable{}, false, err
	}
	c, err := t.v.table(p)
	return c, err == nil, err
}

// tables checks a vector of tables and calls fn on each element.
func (t fbTable) tables(slot int, fn func(fbTable) error) error {
	start, n, err := t.vector(slot, 4)
	if err != nil {
		return err
	}
	for i := int64(0); i < n; i++ {
		e := start + 4*i
		off, err := t.v.u32(e)
		if err != nil {
			return err
		}
		c, err := t.v.table(e + off)
		if err != nil {
			return err
		}
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

// verifyMessage checks an IPC message's flatbuffer metadata and returns its
// body length. first says whether it is the first message of the stream.
func verifyMessage(meta []byte, first bool) (int64, error) {
	v := &fbVerifier{b: meta, limit: len(meta)/4 + 8}
	root, err := v.u32(0)
	if err != nil {
		return 0, err
	}
	msg, err := v.table(root)
	if err != nil {
		return 0, err
	}
	if _, err := msg.scalar(0, 2); err != nil { // version
		return 0, err
	}
	htype, err := msg.scalar(1, 1)
	if err != nil {
		return 0, err
	}
	want := int64(fbHeaderRecordBatch)
	if first {
		want = fbHeaderSchema
	}
	if htype != want {
		return 0, fmt.Errorf("IPC message type %d where a model has type %d", htype, want)
	}
	header, ok, err := msg.child(2)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("IPC message without header")
	}
	bodyLen, err := msg.scalar(3, 8)
	if err != nil {
		return 0, err
	}
	if bodyLen < 0 {
		return 0, fmt.Errorf("negative IPC body length %d", bodyLen)
	}
	if err := msg.tables(4, verifyKeyValue); err != nil {
		return 0, err
	}
	if first {
		return bodyLen, verifySchemaTable(header)
	}
	return bodyLen, verifyRecordBatch(header)
}

func verifyKeyValue(t fbTable) error {
	if _, _, err := t.vector(0, 1); err != nil {
		return err
	}
	_, _, err := t.vector(1, 1)
	return err
}

func verifySchemaTable(t fbTable) error {
	if _, err := t.scalar(0, 2); err != nil { // endianness
		return err
	}
	if err := t.tables(1, func(f fbTable) error { return verifyField(f, 0) }); err != nil {
		return err
	}
	if err := t.tables(2, verifyKeyValue); err != nil {
		return err
	}
	_, _, err := t.vector(3, 8) // features
	return err
}

func verifyField(t fbTable, depth int) error {
	if depth > maxFieldDepth {
		return fmt.Errorf("schema nested too deeply")
	}
	if _, _, err := t.vector(0, 1); err != nil { // name
		return err
	}
	if _, err := t.scalar(1, 1); err != nil { // nullable
		return err
	}
	tag, err := t.scalar(2, 1) // type tag
	if err != nil {
		return err
	}
	if typ, ok, err := t.child(3); err != nil {
		return err
	} else if ok && tag == fbTypeUnion {
		// Only Union has a vector (typeIds, slot 1); the reader reads it
		// element by element, but check it anyway.
		if _, _, err := typ.vector(1, 4); err != nil {
			return err
		}
	}
	if dict, ok, err := t.child(4); err != nil {
		return err
	} else if ok {
		if _, _, err := dict.child(1); err != nil { // index type
			return err
		}
	}
	if err := t.tables(5, func(c fbTable) error { return verifyField(c, depth+1) }); err != nil {
		return err
	}
	return t.tables(6, verifyKeyValue)
}

func verifyRecordBatch(t fbTable) error {
	if _, err := t.scalar(0, 8); err != nil { // length
		return err
	}
	if _, _, err := t.vector(1, 16); err != nil { // nodes
		return err
	}
	if _, _, err := t.vector(2, 16); err != nil { // buffers
		return err
	}
	if _, ok, err := t.ref(3); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("compressed record batches are not supported")
	}
	_, _, err := t.vector(4, 8) // variadic buffer counts
	return err
}
