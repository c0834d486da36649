package kafka

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/internal/broker"
	"github.com/forestd/forestd/pipeline"
)

func startBroker(t *testing.T, opts broker.Options) (*broker.Broker, ClientOptions) {
	t.Helper()
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	b, err := broker.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b, ClientOptions{Brokers: []string{b.Addr()}}
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// partitionBalancer sends a message to the partition named by its key's
// prefix "p<N>/".
type partitionBalancer struct{}

func (partitionBalancer) Balance(msg kafkago.Message, partitions ...int) int {
	var p int
	fmt.Sscanf(string(msg.Key), "p%d/", &p)
	return p
}

// produce writes messages with acks=all; keys "p<N>/..." choose partitions.
func produce(t *testing.T, co ClientOptions, msgs ...kafkago.Message) {
	t.Helper()
	c, err := co.build()
	if err != nil {
		t.Fatal(err)
	}
	w := &kafkago.Writer{Addr: kafkago.TCP(c.brokers...), Transport: c.transport, RequiredAcks: kafkago.RequireAll,
		Balancer: partitionBalancer{}, BatchTimeout: time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(testCtx(t, 20*time.Second), msgs...); err != nil {
		t.Fatal(err)
	}
}

// consumeAll reads every partition of topic from the start up to its
// current end.
func consumeAll(t *testing.T, co ClientOptions, topic string) []kafkago.Message {
	t.Helper()
	ctx := testCtx(t, 20*time.Second)
	c, err := co.build()
	if err != nil {
		t.Fatal(err)
	}
	n, err := Partitions(ctx, co, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []kafkago.Message
	for p := 0; p < n; p++ {
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: c.brokers, Dialer: c.dialer, Topic: topic, Partition: p, MaxWait: 100 * time.Millisecond})
		lag, err := r.ReadLag(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := int64(0); i < lag; i++ {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		r.Close()
	}
	return out
}

// consume reads every partition of topic from the start until want
// messages arrived or the deadline passed.
func consume(t *testing.T, co ClientOptions, topic string, want int, d time.Duration) []kafkago.Message {
	t.Helper()
	ctx := testCtx(t, d)
	c, err := co.build()
	if err != nil {
		t.Fatal(err)
	}
	n, err := Partitions(ctx, co, topic)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out []kafkago.Message
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for p := 0; p < n; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: c.brokers, Dialer: c.dialer, Topic: topic, Partition: p, MaxWait: 100 * time.Millisecond})
			defer r.Close()
			for {
				m, err := r.FetchMessage(rctx)
				if err != nil {
					return
				}
				mu.Lock()
				out = append(out, m)
				if len(out) >= want {
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out
}

// forward passes every input record to stream out, keyed by the source
// coordinates.
type forward struct{ stream string }

func (f forward) Name() string { return "forward" }
func (f forward) Process(ctx context.Context, in *pipeline.Batch) ([]pipeline.Output, *pipeline.Batch, error) {
	var outs []pipeline.Output
	for _, r := range in.Records {
		r.Retain()
		outs = append(outs, pipeline.Output{Stream: f.stream, Key: []byte(in.Env.Source()), Record: r})
	}
	return outs, nil, nil
}

// daemon is a minimal forestd: a group source, a runtime and a sink.
type daemon struct {
	src    *GroupSource
	rt     *pipeline.Runtime
	sink   *Sink
	cancel context.CancelFunc
	done   chan error
}

func startDaemon(t *testing.T, co ClientOptions, group string, topics []string, stage pipeline.Stage, so SourceOptions) *daemon {
	t.Helper()
	sink, err := NewSink(SinkOptions{Client: co, Topics: map[string]string{"out": "out", "dlq": "dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	m := pipeline.NewMetrics()
	var routes []pipeline.Route
	for _, tp := range topics {
		routes = append(routes, pipeline.Route{Topic: tp, Stages: []pipeline.Stage{stage}})
	}
	rt, err := pipeline.New(pipeline.Options{Workers: 2, Metrics: m, Retry: pipeline.Backoff{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}},
		NewDecoder(memory.DefaultAllocator), routes, sink)
	if err != nil {
		t.Fatal(err)
	}
	so.Client, so.Group, so.Topics, so.Metrics = co, group, topics, m
	if so.SessionTimeout == 0 {
		so.SessionTimeout = 2 * time.Second
	}
	if so.CommitInterval == 0 {
		so.CommitInterval = 50 * time.Millisecond
	}
	src, err := NewGroupSource(so)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rt.Start(context.Background())
	d := &daemon{src: src, rt: rt, sink: sink, cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := src.Run(ctx, rt.Submit)
		rt.Close()
		sink.Close()
		d.done <- err
	}()
	t.Cleanup(func() { d.stop(t) })
	return d
}

func (d *daemon) stop(t *testing.T) {
	if d.cancel == nil {
		return
	}
	d.cancel()
	d.cancel = nil
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("source: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("daemon did not stop")
	}
}

func jsonMsg(p, i int) kafkago.Message {
	return kafkago.Message{Topic: "in", Key: []byte(fmt.Sprintf("p%d/%d", p, i)),
		Value:   []byte(fmt.Sprintf(`{"p": %d, "i": %d}`, p, i)),
		Headers: []kafkago.Header{{Key: HeaderContentType, Value: []byte(codec.ContentTypeJSON)}}}
}

// committed returns the group's committed offset per partition of topic.
func committed(b *broker.Broker, group, topic string) map[int32]int64 {
	out := map[int32]int64{}
	gi := b.Cluster().GroupInfo(group)
	if gi == nil {
		return out
	}
	for p, c := range gi.Commits[topic] {
		out[p] = c.Offset
	}
	return out
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// selfSignedTLS makes a server certificate for 127.0.0.1 and writes the CA
// (the certificate itself) to a PEM file.
func selfSignedTLS(t *testing.T) (*tls.Config, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "forestd test broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, ca
}
