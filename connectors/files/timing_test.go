package files

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

func loadCorpus(t *testing.T, dir string) map[string][]byte {
	out := map[string][]byte{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		lines := strings.SplitN(string(b), "\n", 2)
		s2 := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(lines[1]), "[]byte("), ")")
		s, err := strconv.Unquote(s2)
		if err != nil {
			t.Log(e.Name(), err)
			continue
		}
		out[e.Name()] = []byte(s)
	}
	return out
}

func TestTimingParquetCorpus(t *testing.T) {
	for name, data := range loadCorpus(t, os.Getenv("CORPUS")) {
		start := time.Now()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		s, recs, err := readParquet("fuzz.parquet", bytes.NewReader(data), int64(len(data)), nil, mem)
		d := time.Since(start)
		consume(t, mem, s, recs, err, false)
		if d > 5*time.Millisecond {
			fmt.Println(name, len(data), d, err)
		}
	}
}
