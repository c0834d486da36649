package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/pipeline"
)

const chaosIDHeader = "chaos-id"

// chaosProducer streams good JSON-lines messages (rows with consecutive
// ids and features f0..f3, as trainSyntheticModel learns them) mixed with
// poison and zero-row messages, every message with a chaos-id header, and
// retries each until the broker acknowledges it (through broker outages).
type chaosProducer struct {
	mu       sync.Mutex
	goodRows []int    // ids of acknowledged good rows
	poison   []string // chaos ids of acknowledged poison messages, by kind "kind/n"
	empty    int      // acknowledged zero-row messages
	// unacked is the chaos id of the message whose write the stop cut
	// short ("" if none): it may or may not be on the topic, so its dead
	// letter (or its predictions) may or may not come
	unacked string
	cancel  context.CancelFunc
	done    chan struct{}
}

// poisonKinds are the message kinds the daemon must dead-letter: bytes that
// are neither Arrow nor JSON, a truncated Arrow IPC stream, a JSON row
// without a feature, a JSON row with a string feature, and text.
var poisonKinds = []string{"binary", "truncated-arrow", "missing-feature", "string-feature", "text"}

func chaosRow(id int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id": %d`, id)
	for j := 0; j < 4; j++ {
		fmt.Fprintf(&b, `, "f%d": %g`, j, float64((id*(j+3))%17)/4)
	}
	b.WriteString("}")
	return b.String()
}

// arrowRows encodes n rows from id as an Arrow IPC stream with the
// producer's columns (n = 0: a batch without rows).
func arrowRows(t *testing.T, id, n int) []byte {
	t.Helper()
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}
	for j := 0; j < 4; j++ {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("f%d", j), Type: arrow.PrimitiveTypes.Float64})
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(id + i))
		for j := 0; j < 4; j++ {
			b.Field(j + 1).(*array.Float64Builder).Append(float64(((id+i)*(j+3))%17) / 4)
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func startChaosProducer(t *testing.T, brokers string, seed uint64) *chaosProducer {
	t.Helper()
	sink, err := kafka.NewSink(kafka.SinkOptions{Client: kafka.ClientOptions{Brokers: []string{brokers}},
		Topics: map[string]string{"in": featuresTopic}, WriteTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	valid := arrowRows(t, 0, 20)
	ctx, cancel := context.WithCancel(context.Background())
	p := &chaosProducer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer sink.Close()
		rng := rand.New(rand.NewPCG(seed, 11))
		nextID, n := 0, 0
		for ctx.Err() == nil {
			time.Sleep(15 * time.Millisecond)
			n++
			chaosID := strconv.Itoa(n)
			hs := []pipeline.Header{{Key: chaosIDHeader, Value: []byte(chaosID)}}
			var value []byte
			kind := "good"
			switch r := rng.IntN(20); {
			case r < 3:
				kind = poisonKinds[rng.IntN(len(poisonKinds))]
				switch kind {
				case "binary":
					value = []byte{0x00, 0xfe, 0x13, 0x37, byte(n)}
				case "truncated-arrow":
					value = valid[:len(valid)/2]
					hs = append(hs, pipeline.Header{Key: kafka.HeaderContentType, Value: []byte(codec.ContentTypeArrow)})
				case "missing-feature":
					value = []byte(`{"id": -1, "f0": 1, "f1": 2, "f3": 4}`)
				case "string-feature":
					value = []byte(`{"id": -1, "f0": "one", "f1": 2, "f2": 3, "f3": 4}`)
				case "text":
					value = []byte("rows,f0,f1\n1,2,3\n")
				}
			case r == 3:
				kind = "empty"
				value = arrowRows(t, 0, 0)
			default:
				rows := 1 + rng.IntN(5)
				var b strings.Builder
				for i := 0; i < rows; i++ {
					b.WriteString(chaosRow(nextID + i))
					b.WriteByte('\n')
				}
				value = []byte(b.String())
			}
			out := []pipeline.Output{{Stream: "in", Key: []byte(chaosID), Raw: value, Headers: hs}}
			for ctx.Err() == nil {
				wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
				err := sink.Write(wctx, out)
				wcancel()
				if err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if ctx.Err() != nil {
				// not acknowledged: it may or may not be on the topic, and
				// counts for nothing either way
				p.mu.Lock()
				p.unacked = chaosID
				p.mu.Unlock()
				return
			}
			p.mu.Lock()
			switch kind {
			case "good":
				rows := strings.Count(string(value), "\n")
				for i := 0; i < rows; i++ {
					p.goodRows = append(p.goodRows, nextID+i)
				}
				nextID += rows
			case "empty":
				p.empty++
			default:
				p.poison = append(p.poison, kind+"/"+chaosID)
			}
			p.mu.Unlock()
		}
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *chaosProducer) stop() {
	p.cancel()
	<-p.done
}

// TestServeChaos (reliability issue, the chaos test): a producer streams
// good rows mixed with poison drawn from the kinds (undecodable
// bytes, a truncated Arrow stream, a missing and a string feature, text)
// and zero-row batches, while the daemon and the broker are killed with
// SIGKILL and restarted at random moments for half a minute. At the end,
// every good row has a prediction, every poison message a dead letter with
// its chaos id, no zero-row message produced either, and every partition's
// committed offset reached its end (no offset stuck). It prints the counts.
func TestServeChaos(t *testing.T) {
	t.Parallel()
	needKcat(t)
	model, _ := trainSyntheticModel(t, 4, 10)
	dataDir := t.TempDir()
	addr := freePort(t)
	b := startBroker(t, addr, dataDir)
	args := []string{"--model", model, "--stages", "score", "--output-format", "json", "--key", "id",
		"--session-timeout", "2s", "--commit-interval", "50ms"}
	d := startServe(t, addr, args...)
	d.waitReady(60 * time.Second)
	pr := startChaosProducer(t, addr, 7)
	rng := rand.New(rand.NewPCG(7, 3))
	daemonKills, brokerKills := 0, 0
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
		time.Sleep(time.Duration(700+rng.IntN(2000)) * time.Millisecond)
		if rng.IntN(4) == 0 {
			b.kill()
			brokerKills++
			time.Sleep(time.Duration(200+rng.IntN(800)) * time.Millisecond)
			b = startBroker(t, addr, dataDir)
			continue
		}
		d.kill()
		daemonKills++
		if rng.IntN(3) == 0 {
			time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond) // a second kill soon after a restart
			d = startServe(t, addr, args...)
			time.Sleep(time.Duration(200+rng.IntN(1500)) * time.Millisecond)
			d.kill()
			daemonKills++
		}
		d = startServe(t, addr, args...)
	}
	pr.stop()
	pr.mu.Lock()
	good, poison, empty, unacked := append([]int(nil), pr.goodRows...), append([]string(nil), pr.poison...), pr.empty, pr.unacked
	pr.mu.Unlock()
	if len(good) == 0 || len(poison) == 0 || empty == 0 {
		t.Fatalf("the producer made %d good rows, %d poison and %d empty messages: nothing to check", len(good), len(poison), empty)
	}

	// everything produced is accounted for within a minute of the last kill
	wantPoison := map[string]string{}
	for _, p := range poison {
		kind, id, _ := strings.Cut(p, "/")
		wantPoison[id] = kind
	}
	var ps []prediction
	var dead map[string]string
	deadline := time.Now().Add(90 * time.Second)
	for {
		ps = predictionsJSON(t, kcatConsume(t, addr, "forestd.predictions"))
		dead = map[string]string{}
		for _, m := range kcatConsume(t, addr, "forestd.dlq") {
			dead[m.header(chaosIDHeader)] = m.header(pipeline.HeaderDLQReason)
		}
		seen := map[int]bool{}
		for _, p := range ps {
			seen[int(p.ID)] = true
		}
		missingRows, missingDead := 0, 0
		for _, id := range good {
			if !seen[id] {
				missingRows++
			}
		}
		for id := range wantPoison {
			if _, ok := dead[id]; !ok {
				missingDead++
			}
		}
		if missingRows == 0 && missingDead == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("90 s after the last kill: %d of %d good rows without a prediction, %d of %d poison messages without a dead letter\n%s",
				missingRows, len(good), missingDead, len(wantPoison), tail(d.Log(), 30))
		}
		time.Sleep(500 * time.Millisecond)
	}
	for id, reason := range dead {
		if _, ok := wantPoison[id]; !ok && id != unacked {
			t.Errorf("message %s was dead-lettered but is no poison: %s", id, reason)
		}
	}
	// no offset stuck: the group's committed offsets reach every partition's end
	ends := map[int32]int64{}
	for _, m := range kcatConsume(t, addr, featuresTopic) {
		ends[m.Partition] = max(ends[m.Partition], m.Offset+1)
	}
	for {
		committed := groupOffsets(t, addr, "forestd", featuresTopic)
		stuck := 0
		for part, end := range ends {
			if committed[part] < end {
				stuck++
			}
		}
		if stuck == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d partitions' committed offsets %v short of their ends %v", stuck, committed, ends)
		}
		time.Sleep(200 * time.Millisecond)
	}
	dups := checkAllPredicted(t, good, ps)
	kinds := map[string]int{}
	for _, k := range wantPoison {
		kinds[k]++
	}
	t.Logf("chaos: %d daemon and %d broker kills; %d good rows (%d predictions, %d duplicates), %d poison messages dead-lettered %v, %d zero-row messages",
		daemonKills, brokerKills, len(good), len(ps), dups, len(wantPoison), kinds, empty)
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("daemon exit %d", code)
	}
}
