package files

import (
	"bytes"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/internal/ipcread"
)

// readIPC reads an Arrow IPC file or stream, checked and validated
// (internal/ipcread), and keeps the columns cols (all when empty).
func readIPC(name string, r ipcread.ReadSeekerAt, file bool, cols []string, mem memory.Allocator) (*arrow.Schema, []arrow.Record, error) {
	schema, recs, err := ipcread.Read(name, r, file, mem)
	if err != nil {
		return nil, nil, err
	}
	return project(name, schema, recs, cols)
}

// ReadIPCBytes decodes an Arrow IPC stream or file held in memory (e.g. a
// Kafka message value) with internal/ipcread's checks, keeping
// opts.Columns; name labels errors. The caller releases the records.
func ReadIPCBytes(name string, b []byte, opts ReadOptions) (*arrow.Schema, []arrow.Record, error) {
	mem := opts.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return readIPC(name, bytes.NewReader(b), ipcread.IsFile(b), opts.Columns, mem)
}
