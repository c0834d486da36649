package model

import (
	"bytes"
	"sync"
	"testing"

	"github.com/forestd/forestd/arrowforest/forest"
)

// benchForest: 100 classification trees of 10 001 nodes (≈10⁶ nodes in
// all), 3-entry oblique atoms on average 2, 5 classes with sparse leaves.
var benchForest = sync.OnceValues(func() (*forest.Forest, []byte) {
	f := randomForest(42, 100, 10001, 200, 5, 3)
	b, _, err := EncodeBytes(f, Meta{Version: 1, CreatedBy: "bench"})
	if err != nil {
		panic(err)
	}
	return f, b
})

func BenchmarkEncode(b *testing.B) {
	f, enc := benchForest()
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if _, err := (codec{}).Encode(&buf, f, Meta{Version: 1, CreatedBy: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(enc))/(1<<20), "model-MiB")
}

func BenchmarkDecode(b *testing.B) {
	_, enc := benchForest()
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeBytes(enc); err != nil {
			b.Fatal(err)
		}
	}
}
