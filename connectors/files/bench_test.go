package files

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
)

// Reading throughput on the shared data sets (bytes = file size).
func BenchmarkRead(b *testing.B) {
	for _, name := range []string{"shuttle.parquet", "letter_recognition_zstd_rg1000.parquet", "dna.parquet", "satellite.arrows", "shuttle.csv.gz"} {
		b.Run(name, func(b *testing.B) {
			p := filepath.Join(dataDir(b), name)
			st, err := os.Stat(p)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(st.Size())
			for b.Loop() {
				_, recs, err := ReadFile(p, ReadOptions{})
				if err != nil {
					b.Fatal(err)
				}
				release(recs)
			}
		})
	}
}

func BenchmarkWriteParquet(b *testing.B) {
	_, recs, err := ReadFile(filepath.Join(dataDir(b), "shuttle.parquet"), ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer release(recs)
	out := filepath.Join(b.TempDir(), "w.parquet")
	b.ResetTimer()
	for b.Loop() {
		if err := WriteFile(out, recs[0].Schema(), []arrow.Record{recs[0]}, WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
