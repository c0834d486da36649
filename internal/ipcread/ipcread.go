// Package ipcread reads Arrow IPC data (the file format, "ARROW1" magic,
// or the stream format) safely, for the file connector (.arrow, .arrows)
// and the message codec (Kafka values) alike (ARCHITECTURE.md, Formats):
// before arrow-go sees the data the flatbuffer metadata is checked
// (fbcheck.go), every allocation is capped relative to the input's size,
// a failed read frees what it allocated, a decoder panic is an error, and
// every decoded record is validated (ValidateRecord). Corrupt input is an
// error, never a crash.
package ipcread

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// ReadSeekerAt is what Read needs: an *os.File or a *bytes.Reader.
type ReadSeekerAt interface {
	io.ReadSeeker
	io.ReaderAt
}

// Read reads an Arrow IPC file (random-access format, "ARROW1" magic;
// file true) or stream from r; name labels errors. Every record is
// validated (buffer sizes, offsets, dictionary indices) so that a corrupt
// input is an error here rather than a panic later; a panic inside the
// Arrow decoder is turned into an error too. A failed read frees
// everything it allocated from mem (scopedAllocator). The caller releases
// the records.
func Read(name string, r ReadSeekerAt, file bool, mem memory.Allocator) (schema *arrow.Schema, recs []arrow.Record, err error) {
	scope := newScopedAllocator(mem)
	defer func() {
		if p := recover(); p != nil {
			release(recs)
			schema, recs = nil, nil
			err = fmt.Errorf("%s: corrupt Arrow IPC data (decoder panic: %v)", name, p)
		}
		scope.end(err != nil)
	}()
	size, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	limit := allocCap(size)
	mem = cappedAllocator{Allocator: scope, max: limit}
	what := "Arrow IPC stream"
	if file {
		what = "Arrow IPC file"
	}
	if err := checkIPCMetadata(r, size, file); err != nil {
		return nil, nil, fmt.Errorf("%s: reading %s: %w", name, what, err)
	}
	if file {
		what = "Arrow IPC file"
		schema, recs, err = readIPCFile(r, mem, limit)
	} else {
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		schema, recs, err = readIPCStream(r, mem, -1)
		// The reader stops at the end-of-stream marker; bytes after it (a
		// second stream appended, say) would otherwise go unread, unsaid.
		if pos, serr := r.Seek(0, io.SeekCurrent); err == nil && serr == nil && pos < size {
			err = fmt.Errorf("%d bytes after the end-of-stream marker (one stream per input: a second stream, or garbage, follows it)", size-pos)
		}
	}
	if err != nil {
		release(recs)
		return nil, nil, fmt.Errorf("%s: reading %s: %w", name, what, err)
	}
	seen := make(map[string]int, schema.NumFields())
	for j, f := range schema.Fields() {
		if k, dup := seen[f.Name]; dup {
			release(recs)
			return nil, nil, fmt.Errorf("%s: duplicate column name %s (columns %d and %d)", name, f.Name, k+1, j+1)
		}
		seen[f.Name] = j
	}
	for i, rec := range recs {
		if err := ValidateRecord(schema, rec); err != nil {
			release(recs)
			return nil, nil, fmt.Errorf("%s: record batch %d: %w", name, i, err)
		}
	}
	return schema, recs, nil
}

func readIPCFile(r ReadSeekerAt, mem memory.Allocator, limit int) (*arrow.Schema, []arrow.Record, error) {
	// arrow-go v17's FileReader never releases the dictionaries it reads
	// when opened (nor their messages), so with dictionaries the records
	// are read from the stream embedded in the file (the file format is
	// "ARROW1", padding, the stream, the footer) instead. The footer is
	// still opened and checked first, with a private allocator.
	probe, err := ipc.NewFileReader(r, ipc.WithAllocator(cappedAllocator{Allocator: memory.NewGoAllocator(), max: limit}))
	if err != nil {
		return nil, nil, err
	}
	nDicts, nRecs := probe.NumDictionaries(), probe.NumRecords()
	probe.Close()
	if nDicts > 0 {
		size, err := r.Seek(0, io.SeekEnd)
		if err != nil {
			return nil, nil, err
		}
		// The embedded stream need not end with an end-of-stream marker
		// before the footer, so stop after the batches the footer lists.
		schema, recs, err := readIPCStream(io.NewSectionReader(r, 8, size-8), mem, nRecs)
		if err == nil && len(recs) != nRecs {
			err = fmt.Errorf("footer lists %d record batches, the file holds %d", nRecs, len(recs))
		}
		return schema, recs, err
	}

	fr, err := ipc.NewFileReader(r, ipc.WithAllocator(mem))
	if err != nil {
		return nil, nil, err
	}
	defer fr.Close()
	var recs []arrow.Record
	for i := 0; i < fr.NumRecords(); i++ {
		rec, err := fr.RecordAt(i)
		if err != nil {
			return nil, recs, err
		}
		recs = append(recs, rec)
	}
	return fr.Schema(), recs, nil
}

// readIPCStream reads up to maxRecs record batches (all if maxRecs < 0).
func readIPCStream(r io.Reader, mem memory.Allocator, maxRecs int) (*arrow.Schema, []arrow.Record, error) {
	rdr, err := ipc.NewReader(r, ipc.WithAllocator(mem))
	if err != nil {
		return nil, nil, err
	}
	defer rdr.Release()
	var recs []arrow.Record
	for len(recs) != maxRecs && rdr.Next() {
		rec := rdr.Record()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := rdr.Err(); err != nil {
		return nil, recs, err
	}
	return rdr.Schema(), recs, nil
}

// allocCap bounds a single allocation while decoding an IPC input of the
// given size. Without compression no buffer can exceed the input; with it
// buffers may be far larger (a constant column compresses by orders of
// magnitude), hence the generous factor and floor. The cap exists so that a
// corrupt length field fails with an error instead of a fatal out-of-memory.
func allocCap(size int64) int {
	return int(min(max(size*1024, 256<<20), 1<<40))
}

// cappedAllocator refuses an allocation larger than max. memory.Allocator
// has no error return, so a panic is the only way to refuse one (a short
// or nil slice would make arrow-go write out of bounds); arrow-go's IPC
// readers recover it into their error, and readIPC recovers what they miss,
// so it never leaves this package.
type cappedAllocator struct {
	memory.Allocator
	max int
}

func (a cappedAllocator) check(n int) {
	if n > a.max || n < 0 {
		panic(fmt.Sprintf("allocation of %d bytes exceeds the limit of %d for this input", n, a.max))
	}
}

func (a cappedAllocator) Allocate(n int) []byte {
	a.check(n)
	return a.Allocator.Allocate(n)
}

func (a cappedAllocator) Reallocate(n int, b []byte) []byte {
	a.check(n)
	return a.Allocator.Reallocate(n, b)
}

// scopedAllocator passes allocations through to an allocator and, while a
// read is under way, remembers the buffers it has handed out and not had
// back. arrow-go v17's IPC reader loses buffers when it fails: NewReader
// keeps the first message's buffer when that message is not a schema, and
// a corrupt message can make the decoder panic halfway through a buffer it
// was filling. end(true) frees what the failed read still holds, so that
// a corrupt message costs a caller's accounting allocator nothing; end
// (either way) stops the bookkeeping, and the records of a good read free
// their buffers through it later as through the allocator itself.
type scopedAllocator struct {
	memory.Allocator
	mu   sync.Mutex
	live map[*byte][]byte // by first byte; nil once the read has ended
}

func newScopedAllocator(mem memory.Allocator) *scopedAllocator {
	return &scopedAllocator{Allocator: mem, live: map[*byte][]byte{}}
}

// track records b as handed out (zero-length buffers hold nothing).
func (a *scopedAllocator) track(b []byte) {
	if len(b) == 0 {
		return
	}
	a.mu.Lock()
	if a.live != nil {
		a.live[&b[0]] = b
	}
	a.mu.Unlock()
}

// forget records b as given back.
func (a *scopedAllocator) forget(b []byte) {
	if len(b) == 0 {
		return
	}
	a.mu.Lock()
	if a.live != nil {
		delete(a.live, &b[0])
	}
	a.mu.Unlock()
}

func (a *scopedAllocator) Allocate(n int) []byte {
	b := a.Allocator.Allocate(n)
	a.track(b)
	return b
}

func (a *scopedAllocator) Reallocate(n int, b []byte) []byte {
	a.forget(b)
	nb := a.Allocator.Reallocate(n, b)
	a.track(nb)
	return nb
}

func (a *scopedAllocator) Free(b []byte) {
	a.forget(b)
	a.Allocator.Free(b)
}

// end stops the bookkeeping; with failed, it first frees every buffer the
// read allocated and did not give back (the caller has released all it
// got from the read, so nothing else refers to them).
func (a *scopedAllocator) end(failed bool) {
	a.mu.Lock()
	live := a.live
	a.live = nil
	a.mu.Unlock()
	if failed {
		for _, b := range live {
			a.Allocator.Free(b)
		}
	}
}

// ReadBytes decodes an Arrow IPC stream or file (by its "ARROW1" magic)
// held in memory (e.g. a Kafka message value); name labels errors. The
// caller releases the records.
func ReadBytes(name string, b []byte, mem memory.Allocator) (*arrow.Schema, []arrow.Record, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return Read(name, bytes.NewReader(b), IsFile(b), mem)
}

// IsFile reports whether head, the first bytes of an input, begin an
// Arrow IPC file ("ARROW1") rather than a stream.
func IsFile(head []byte) bool { return bytes.HasPrefix(head, magic) }

var magic = []byte("ARROW1")

func release(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}
