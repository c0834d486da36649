package ipcread

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// arrow-go v17 sizes slices from flatbuffer vector lengths in the IPC
// schema (fields, children, custom metadata) before reading them, so a
// corrupt length makes it allocate up to hundreds of gigabytes and the Go
// runtime aborts — an out-of-memory crash no recover can catch. The checks
// below walk the schema flatbuffer first and reject any vector that does
// not fit in its buffer, the way a flatbuffers verifier would.

var errFB = errors.New("corrupt Arrow IPC metadata")

// fbuf is a flatbuffer with bounds-checked accessors.
type fbuf []byte

func (b fbuf) u32(p int) (int, error) {
	if p < 0 || p+4 > len(b) {
		return 0, errFB
	}
	return int(binary.LittleEndian.Uint32(b[p:])), nil
}

func (b fbuf) u16(p int) (int, error) {
	if p < 0 || p+2 > len(b) {
		return 0, errFB
	}
	return int(binary.LittleEndian.Uint16(b[p:])), nil
}

// field returns the position of field i of the table at t, or 0 if the
// field is absent.
func (b fbuf) field(t, i int) (int, error) {
	so, err := b.u32(t)
	if err != nil {
		return 0, err
	}
	v := t - int(int32(so))
	vsize, err := b.u16(v)
	if err != nil {
		return 0, err
	}
	if 4+2*i >= vsize { // as flatbuffers' Table.Offset: present iff 4+2i < vtable size
		return 0, nil
	}
	off, err := b.u16(v + 4 + 2*i)
	if err != nil || off == 0 {
		return 0, err
	}
	if t+off >= len(b) {
		return 0, errFB
	}
	return t + off, nil
}

// deref follows the uoffset stored at p.
func (b fbuf) deref(p int) (int, error) {
	o, err := b.u32(p)
	if err != nil {
		return 0, err
	}
	q := p + o
	if q >= len(b) || q < p {
		return 0, errFB
	}
	return q, nil
}

// vector returns the element count and first element position of the
// vector referenced by field i of table t (0, 0 when absent), checking
// that elemSize-byte elements fit in the buffer.
func (b fbuf) vector(t, i, elemSize int) (int, int, error) {
	f, err := b.field(t, i)
	if err != nil || f == 0 {
		return 0, 0, err
	}
	v, err := b.deref(f)
	if err != nil {
		return 0, 0, err
	}
	n, err := b.u32(v)
	if err != nil {
		return 0, 0, err
	}
	if n > (len(b)-v-4)/elemSize {
		return 0, 0, fmt.Errorf("%w: vector of %d elements in %d bytes", errFB, n, len(b))
	}
	return n, v + 4, nil
}

// table returns the table referenced by field i of table t (0 if absent).
func (b fbuf) table(t, i int) (int, error) {
	f, err := b.field(t, i)
	if err != nil || f == 0 {
		return 0, err
	}
	return b.deref(f)
}

const maxFieldDepth = 64

// checkSchemaFB verifies a Schema table: its fields (recursively) and
// custom metadata vectors.
func (b fbuf) checkSchema(t int) error {
	n, e, err := b.vector(t, 1, 4) // fields
	if err != nil {
		return err
	}
	for k := 0; k < n; k++ {
		f, err := b.deref(e + 4*k)
		if err != nil {
			return err
		}
		if err := b.checkField(f, 0); err != nil {
			return err
		}
	}
	_, _, err = b.vector(t, 2, 4) // custom_metadata
	return err
}

func (b fbuf) checkField(t, depth int) error {
	if depth > maxFieldDepth {
		return fmt.Errorf("%w: fields nested deeper than %d", errFB, maxFieldDepth)
	}
	if _, _, err := b.vector(t, 6, 4); err != nil { // custom_metadata
		return err
	}
	n, e, err := b.vector(t, 5, 4) // children
	if err != nil {
		return err
	}
	for k := 0; k < n; k++ {
		c, err := b.deref(e + 4*k)
		if err != nil {
			return err
		}
		if err := b.checkField(c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// checkMessage verifies an IPC Message flatbuffer whose header is a
// Schema (other message kinds are left to arrow, which bounds-checks them
// by panicking, recovered by the readers).
func checkMessage(meta []byte) error {
	b := fbuf(meta)
	root, err := b.deref(0)
	if err != nil {
		return err
	}
	if _, _, err := b.vector(root, 4, 4); err != nil { // custom_metadata
		return err
	}
	ht, err := b.field(root, 1)
	if err != nil || ht == 0 || b[ht] != 1 { // MessageHeader.Schema
		return err
	}
	h, err := b.table(root, 2)
	if err != nil || h == 0 {
		return err
	}
	return b.checkSchema(h)
}

// checkFooter verifies the footer flatbuffer of an IPC file.
func checkFooter(footer []byte) error {
	b := fbuf(footer)
	root, err := b.deref(0)
	if err != nil {
		return err
	}
	s, err := b.table(root, 1)
	if err != nil {
		return err
	}
	if s != 0 {
		if err := b.checkSchema(s); err != nil {
			return err
		}
	}
	for _, i := range []int{2, 3} { // dictionaries, recordBatches: 24-byte Block structs
		if _, _, err := b.vector(root, i, 24); err != nil {
			return err
		}
	}
	return nil
}

// checkIPCMetadata verifies the schema flatbuffers of an IPC stream (its
// first message at off) or file (its footer and its embedded stream).
func checkIPCMetadata(r io.ReaderAt, size int64, file bool) error {
	if file {
		var tail [10]byte
		if size < 18 {
			return errors.New("not an Arrow IPC file: too short")
		}
		if _, err := r.ReadAt(tail[:], size-10); err != nil && err != io.EOF {
			return err
		}
		if string(tail[4:]) != "ARROW1" {
			return errors.New("not a complete Arrow IPC file: no ARROW1 magic at the end (truncated?)")
		}
		n := int64(int32(binary.LittleEndian.Uint32(tail[:4])))
		if n <= 0 || n > size-18 {
			return fmt.Errorf("%w: footer length %d", errFB, n)
		}
		footer := make([]byte, n)
		if _, err := r.ReadAt(footer, size-10-n); err != nil && err != io.EOF {
			return err
		}
		if err := checkFooter(footer); err != nil {
			return fmt.Errorf("footer: %w", err)
		}
		return checkFirstMessage(io.NewSectionReader(r, 8, size-8), size-8)
	}
	return checkFirstMessage(r, size)
}

func checkFirstMessage(r io.ReaderAt, size int64) error {
	var head [8]byte
	n, _ := r.ReadAt(head[:], 0)
	if n < 4 {
		return nil // arrow reports the short read
	}
	start, metaLen := int64(4), int64(int32(binary.LittleEndian.Uint32(head[:4])))
	if uint32(metaLen) == 0xFFFFFFFF {
		if n < 8 {
			return nil
		}
		start, metaLen = 8, int64(int32(binary.LittleEndian.Uint32(head[4:])))
	}
	if metaLen <= 0 {
		return nil // end of stream, or a length arrow rejects
	}
	if metaLen > size-start {
		return fmt.Errorf("%w: message metadata of %d bytes in %d", errFB, metaLen, size)
	}
	meta := make([]byte, metaLen)
	if _, err := r.ReadAt(meta, start); err != nil && err != io.EOF {
		return err
	}
	return checkMessage(meta)
}
