package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/internal/broker"
)

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
