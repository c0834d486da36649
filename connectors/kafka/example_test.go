package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/broker"
	"github.com/forestd/forestd/connectors/kafka"
)

// A JSON-lines message without a content-type header is sniffed and
// decoded into one Arrow record; a value that is neither Arrow nor JSON is
// an error (and so a dead letter), never a guess.
func ExampleDecode() {
	value := []byte("{\"x1\": 0.5, \"x2\": 3}\n{\"x1\": -1, \"x2\": null}\n")
	schema, recs, err := kafka.Decode(value, "", memory.DefaultAllocator)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(schema.Field(0).Name, schema.Field(0).Type, recs[0].NumRows())
	recs[0].Release()
	_, _, err = kafka.Decode([]byte("x1=0.5"), "", memory.DefaultAllocator)
	fmt.Println(err != nil)
	// Output:
	// x1 float64 2
	// true
}

// CheckAuth tells a refused password (ErrAuth: retrying cannot help)
// apart from a broker that is merely down.
func ExampleCheckAuth() {
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0",
		Users: []broker.User{{Mechanism: broker.MechanismScramSHA512, Name: "forestd", Password: "s3cret"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	co := kafka.ClientOptions{Brokers: []string{b.Addr()},
		SASL: kafka.SASLOptions{Mechanism: kafka.SASLScramSHA512, Username: "forestd", Password: "s3cret"}}
	fmt.Println(kafka.CheckAuth(ctx, co))
	co.SASL.Password = "guess"
	fmt.Println(errors.Is(kafka.CheckAuth(ctx, co), kafka.ErrAuth))
	// Output:
	// <nil>
	// true
}
