package codec_test

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/codec"
)

// A JSON-lines message without a content-type header is sniffed and
// decoded into one Arrow record; a value that is neither Arrow nor JSON is
// an error (and so a dead letter), never a guess.
func ExampleDecode() {
	value := []byte("{\"x1\": 0.5, \"x2\": 3}\n{\"x1\": -1, \"x2\": null}\n")
	schema, recs, err := codec.Decode(value, "", memory.DefaultAllocator)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(schema.Field(0).Name, schema.Field(0).Type, recs[0].NumRows())
	recs[0].Release()
	_, _, err = codec.Decode([]byte("x1=0.5"), "", memory.DefaultAllocator)
	fmt.Println(err != nil)
	// Output:
	// x1 float64 2
	// true
}
