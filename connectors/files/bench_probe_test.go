package files

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

func BenchmarkProbeIrisParquet(b *testing.B) {
	data, _ := os.ReadFile(filepath.Join(dataDir(b), "iris.parquet"))
	for b.Loop() {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		_, recs, err := readParquet("x", bytes.NewReader(data), int64(len(data)), nil, mem)
		if err != nil {
			b.Fatal(err)
		}
		release(recs)
	}
}
