package model

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/crc32"
	"math"
	"sort"
	"unsafe"
)

// canonicalMagic opens the canonical serialization (see doc.go).
const canonicalMagic = "forestd-model-canonical-v1\n"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// digest is what the canonical serialization hashes to.
type digest struct {
	checksum string // "crc32c:" + 8 hex digits
	id       string // 64 hex digits of SHA-256
}

// canonicalDigest hashes the canonical serialization of the covered
// metadata entries (any order; they are sorted here) and the node table.
// The entries must not include forestd.checksum or forestd.model_id.
func canonicalDigest(entries []metaEntry, tab *table) digest {
	cw := newCanonWriter()
	canonicalHeader(cw, entries, tab.rows, len(tab.spec))
	for ci, c := range tab.spec {
		cw.str(c.name)
		cw.u8(uint8(c.kind))
		tc := &tab.cols[ci]
		if c.kind.isList() {
			for r := 0; r < tab.rows; r++ {
				cw.u32(uint32(tc.off[r+1] - tc.off[r]))
			}
		}
		cw.values(c.kind, &tc.values)
	}
	return cw.sum()
}

// canonicalHeader writes the canonical serialization up to the first
// column: the magic, the sorted metadata entries, the row and column
// counts.
func canonicalHeader(cw *canonWriter, entries []metaEntry, rows, columns int) {
	cw.bytes([]byte(canonicalMagic))
	sorted := append([]metaEntry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].key < sorted[j].key })
	cw.u32(uint32(len(sorted)))
	for _, e := range sorted {
		cw.str(e.key)
		cw.str(e.value)
	}
	cw.u64(uint64(rows))
	cw.u32(uint32(columns))
}

// canonWriter feeds CRC-32C and SHA-256 through one buffer.
type canonWriter struct {
	buf []byte
	crc hash.Hash32
	sha hash.Hash
}

const canonBufSize = 64 << 10

func newCanonWriter() *canonWriter {
	return &canonWriter{
		buf: make([]byte, 0, canonBufSize),
		crc: crc32.New(castagnoli),
		sha: sha256.New(),
	}
}

func (w *canonWriter) flush() {
	w.crc.Write(w.buf)
	w.sha.Write(w.buf)
	w.buf = w.buf[:0]
}

// room makes sure n more bytes fit in the buffer (n ≤ canonBufSize).
func (w *canonWriter) room(n int) {
	if len(w.buf)+n > cap(w.buf) {
		w.flush()
	}
}

func (w *canonWriter) u8(v uint8) { w.room(1); w.buf = append(w.buf, v) }
func (w *canonWriter) u32(v uint32) {
	w.room(4)
	w.buf = binary.LittleEndian.AppendUint32(w.buf, v)
}
func (w *canonWriter) u64(v uint64) {
	w.room(8)
	w.buf = binary.LittleEndian.AppendUint64(w.buf, v)
}

func (w *canonWriter) bytes(b []byte) {
	for len(b) > 0 {
		w.room(1)
		n := copy(w.buf[len(w.buf):cap(w.buf)], b)
		w.buf = w.buf[:len(w.buf)+n]
		b = b[n:]
	}
}

func (w *canonWriter) str(s string) {
	w.u32(uint32(len(s)))
	w.bytes([]byte(s))
}

// values writes every value little-endian (floats as IEEE-754 bits, bools
// as one byte 0 or 1).
func (w *canonWriter) values(k kind, v *values) {
	switch k.elem() {
	case kInt32:
		if littleEndian && len(v.i32) > 0 {
			w.raw(unsafe.Slice((*byte)(unsafe.Pointer(&v.i32[0])), 4*len(v.i32)))
			return
		}
		for _, x := range v.i32 {
			w.u32(uint32(x))
		}
	case kFloat32:
		if littleEndian && len(v.f32) > 0 {
			w.raw(unsafe.Slice((*byte)(unsafe.Pointer(&v.f32[0])), 4*len(v.f32)))
			return
		}
		for _, x := range v.f32 {
			w.u32(math.Float32bits(x))
		}
	case kFloat64:
		for _, x := range v.f64 {
			w.u64(math.Float64bits(x))
		}
	default: // kBool
		for _, x := range v.b {
			b := uint8(0)
			if x {
				b = 1
			}
			w.u8(b)
		}
	}
}

// littleEndian: the machine's own bytes of an int32 or float32 are its
// canonical (little-endian) bytes.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// raw writes b, bytes already in canonical order, straight to the hashes.
func (w *canonWriter) raw(b []byte) {
	w.flush()
	w.crc.Write(b)
	w.sha.Write(b)
}

func (w *canonWriter) sum() digest {
	w.flush()
	return digest{
		checksum: fmt.Sprintf("crc32c:%08x", w.crc.Sum32()),
		id:       hex.EncodeToString(w.sha.Sum(nil)),
	}
}
