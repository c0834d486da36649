package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/pipeline"
)

// readyz returns /readyz's status code and body.
func (d *daemon) readyz() (int, string) {
	resp, err := http.Get("http://" + d.ops + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitCommitted waits until the group "forestd" has committed every
// message of the features topic, as the broker reports it (end offsets and
// the group's committed offsets).
func (d *daemon) waitCommitted(t *testing.T, brokers string, within time.Duration) {
	t.Helper()
	var lag int64
	deadline := time.Now().Add(within)
	for {
		if lag = groupLag(t, brokers, "forestd", featuresTopic); lag == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages of %s not committed after %v", lag, featuresTopic, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// groupLag is the sum over topic's partitions of the log end offset minus
// the group's committed offset (0 without a commit).
func groupLag(t *testing.T, brokers, group, topic string) int64 {
	t.Helper()
	committed := groupOffsets(t, brokers, group, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := kafka.Partitions(ctx, kafka.ClientOptions{Brokers: []string{brokers}}, topic)
	if err != nil {
		t.Fatal(err)
	}
	req := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{}}
	for p := 0; p < n; p++ {
		req.Topics[topic] = append(req.Topics[topic], kafkago.LastOffsetOf(p))
	}
	cl := &kafkago.Client{Addr: kafkago.TCP(brokers), Timeout: 10 * time.Second}
	resp, err := cl.ListOffsets(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var lag int64
	for _, po := range resp.Topics[topic] {
		if po.Error != nil {
			t.Fatal(po.Error)
		}
		lag += po.LastOffset - committed[int32(po.Partition)]
	}
	return lag
}

// setTopicConfig sets one config of a topic through the broker
// (IncrementalAlterConfigs), as an operator would with kafka-configs.
func setTopicConfig(t *testing.T, brokers, topic, name, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := &kafkago.Client{Addr: kafkago.TCP(brokers), Timeout: 10 * time.Second}
	resp, err := cl.IncrementalAlterConfigs(ctx, &kafkago.IncrementalAlterConfigsRequest{Resources: []kafkago.IncrementalAlterConfigsRequestResource{{
		ResourceType: kafkago.ResourceTypeTopic, ResourceName: topic,
		Configs: []kafkago.IncrementalAlterConfigsRequestConfig{{Name: name, Value: value, ConfigOperation: kafkago.ConfigOperationSet}},
	}}})
	if err == nil && len(resp.Resources) == 1 {
		err = resp.Resources[0].Error
	}
	if err != nil {
		t.Fatalf("setting %s=%s on %s: %v", name, value, topic, err)
	}
}

// TestServeOversizedDeadLetters (reliability issue, item 2): with the
// broker's message limit raised to 10 MB, a 5 MB undecodable message and a
// 3.2 MB JSON object without the model's features are larger than the
// daemon may produce (1 MB). They used to stay uncommitted — after 1,000
// more messages every partition stalled, /readyz kept saying ready and
// forestd_dead_letters_total counted letters never written. Now both are
// stored in forestd.dlq cut to fit, with their original size and SHA-256
// in headers; the good rows around them are scored, every offset commits,
// the daemon stays ready, and the counters count what was written.
func TestServeOversizedDeadLetters(t *testing.T) {
	t.Parallel()
	brokers, d := digitsDaemon(t, []string{"--max-message-bytes", "10000000"}, "--output-format", "json")

	// control bytes: not a format the daemon knows, and valid UTF-8, so
	// that kcat -J prints them one for one
	undecodable := bytes.Repeat([]byte{0x00, 0x01, 0x02}, 5_000_000/3)
	var obj strings.Builder
	obj.WriteString(`{"note": "`)
	obj.WriteString(strings.Repeat("n", 3_200_000))
	obj.WriteString(`"}`)
	rows := digitsJSONRows(t, 4)
	big := []string{"-X", "message.max.bytes=10000000"}
	kcatLines(t, brokers, featuresTopic, []string{"content-type=application/json"}, rows[:2])
	kcatProduceX(t, brokers, featuresTopic, big, nil, undecodable)
	kcatProduceX(t, brokers, featuresTopic, big, []string{"content-type=application/json"}, []byte(obj.String()))
	kcatLines(t, brokers, featuresTopic, []string{"content-type=application/json"}, rows[2:])

	ps := waitPredictions(t, brokers, "forestd.predictions", 60*time.Second, func(ps []prediction) bool { return len(ps) >= 4 })
	if len(ps) != 4 {
		t.Fatalf("%d predictions for 4 good rows", len(ps))
	}
	d.waitCommitted(t, brokers, 30*time.Second)
	dlq := kcatConsume(t, brokers, "forestd.dlq")
	if len(dlq) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dlq))
	}
	originals := map[int][]byte{len(undecodable): undecodable, obj.Len(): []byte(obj.String())}
	for _, m := range dlq {
		n, _ := strconv.Atoi(m.header(pipeline.HeaderDLQOriginalBytes))
		orig, ok := originals[n]
		if !ok {
			t.Fatalf("dead letter with original size %q, want one of %d, %d", m.header(pipeline.HeaderDLQOriginalBytes), len(undecodable), obj.Len())
		}
		sum := sha256.Sum256(orig)
		if m.header(pipeline.HeaderDLQValueSHA256) != hex.EncodeToString(sum[:]) || m.header(pipeline.HeaderDLQTrimmed) != "value" {
			t.Fatalf("dead letter of %d bytes: digest %q, trimmed %q", n, m.header(pipeline.HeaderDLQValueSHA256), m.header(pipeline.HeaderDLQTrimmed))
		}
		if m.Payload == nil || len(*m.Payload) == 0 || len(*m.Payload) > 1_000_000 || !bytes.HasPrefix(orig, []byte(*m.Payload)) {
			t.Fatalf("the %d-byte letter is not stored as a prefix of at most 1000000 bytes", n)
		}
		if m.header(pipeline.HeaderSourceTopic) != featuresTopic || m.header(pipeline.HeaderDLQReason) == "" {
			t.Fatalf("dead letter headers %v", m.Headers)
		}
	}
	if v := d.metric("forestd_dead_letters_total"); v != 2 {
		t.Fatalf("forestd_dead_letters_total = %v", v)
	}
	if v := d.metric("forestd_dead_letters_trimmed_total"); v != 2 {
		t.Fatalf("forestd_dead_letters_trimmed_total = %v", v)
	}
	if code, body := d.readyz(); code != 200 {
		t.Fatalf("/readyz %d: %s", code, body)
	}
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestServeDeadLetterTopicUnavailable (reliability issue, item 2): when the
// dead-letter topic refuses even a cut dead letter (here its
// max.message.bytes is set below any letter), the daemon stops consuming
// and says so on /readyz, in its log and in
// forestd_dead_letter_stream_down, instead of reporting ready while the
// dead letter's offset holds the partition. Once the topic takes letters
// again, the dead letter is written, consumption resumes and every row is
// scored.
func TestServeDeadLetterTopicUnavailable(t *testing.T) {
	t.Parallel()
	brokers, d := digitsDaemon(t, nil, "--output-format", "json", "--partitions", "1")
	setTopicConfig(t, brokers, "forestd.dlq", "max.message.bytes", "100")

	rows := digitsJSONRows(t, 4)
	kcatLines(t, brokers, featuresTopic, []string{"content-type=application/json"}, rows[:2])
	kcatProduce(t, brokers, featuresTopic, nil, []byte("\x00\x01 not a record"))
	waitCond(t, 60*time.Second, "/readyz reporting the dead-letter topic", func() bool {
		code, body := d.readyz()
		return code == 503 && strings.Contains(body, "dead letters cannot be written")
	})
	if v := d.metric("forestd_dead_letter_stream_down"); v != 1 {
		t.Fatalf("forestd_dead_letter_stream_down = %v", v)
	}
	if !strings.Contains(d.Log(), "dead-letter stream unavailable") {
		t.Fatal("no log line about the dead-letter stream")
	}
	// rows produced now are not consumed while the letter waits
	kcatLines(t, brokers, featuresTopic, []string{"content-type=application/json"}, rows[2:])
	time.Sleep(2 * time.Second)
	if n := len(predictionsJSON(t, kcatConsume(t, brokers, "forestd.predictions"))); n != 2 {
		t.Fatalf("%d predictions while the dead-letter topic is unavailable, want the 2 rows before the poison", n)
	}
	if v := d.metric("forestd_dead_letters_total"); v != 0 {
		t.Fatalf("forestd_dead_letters_total = %v for a letter not written", v)
	}

	setTopicConfig(t, brokers, "forestd.dlq", "max.message.bytes", "1048588")
	ps := waitPredictions(t, brokers, "forestd.predictions", 60*time.Second, func(ps []prediction) bool { return len(ps) >= 4 })
	if len(ps) != 4 {
		t.Fatalf("%d predictions for 4 good rows", len(ps))
	}
	d.waitCommitted(t, brokers, 30*time.Second)
	if dlq := kcatConsume(t, brokers, "forestd.dlq"); len(dlq) != 1 || dlq[0].Payload == nil || *dlq[0].Payload != "\x00\x01 not a record" {
		t.Fatalf("dead letters %v", dlq)
	}
	if code, body := d.readyz(); code != 200 {
		t.Fatalf("/readyz %d after recovery: %s", code, body)
	}
	if v := d.metric("forestd_dead_letters_total"); v != 1 {
		t.Fatalf("forestd_dead_letters_total = %v", v)
	}
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestServeMessageEdgeCases (reliability issue, item 8), with kcat:
//   - a JSON-lines message whose second row lacks a feature is a dead
//     letter, as a one-row message lacking it is (the row used to be scored
//     with NaN);
//   - a "Content-Type" header (any case) is honoured: one naming an
//     unsupported type quarantines a value that would sniff as JSON (it used
//     to be ignored and the value scored);
//   - a tombstone (kcat -K : -Z sends "key:" with a null value) and an empty value
//     get different reasons, and the dead-letter topic keeps the empty value
//     empty (it used to store it as null);
//   - POST /metrics is 405 (it used to be answered).
func TestServeMessageEdgeCases(t *testing.T) {
	t.Parallel()
	brokers, d := digitsDaemon(t, nil, "--output-format", "json", "--partitions", "1")
	rows := digitsJSONRows(t, 3)
	var m map[string]any
	if err := json.Unmarshal([]byte(rows[1]), &m); err != nil || m["pixel_3_4"] == nil {
		t.Fatalf("setup: row without pixel_3_4: %v", err)
	}
	delete(m, "pixel_3_4")
	lacking, _ := json.Marshal(m)
	oneRow := string(lacking)
	ragged := rows[0] + "\n" + oneRow + "\n"
	nd := []string{"content-type=application/x-ndjson"}
	kcatProduce(t, brokers, featuresTopic, nd, []byte(ragged))                                         // offset 0
	kcatProduce(t, brokers, featuresTopic, []string{"content-type=application/json"}, []byte(oneRow))  // 1
	kcatProduce(t, brokers, featuresTopic, []string{"Content-Type=text/csv"}, []byte(rows[2]))         // 2
	kcatLinesX(t, brokers, featuresTopic, []string{"-K", ":", "-Z"}, nil, []string{"tombstone:"})      // 3: null
	kcatLinesX(t, brokers, featuresTopic, []string{"-K", ":"}, nil, []string{"empty:"})                // 4: empty
	kcatProduce(t, brokers, featuresTopic, []string{"Content-Type=application/json"}, []byte(rows[0])) // 5: scored
	ps := waitPredictions(t, brokers, "forestd.predictions", 60*time.Second, func(ps []prediction) bool { return len(ps) >= 1 })
	d.waitCommitted(t, brokers, 30*time.Second)
	if len(ps) != 1 || !strings.HasSuffix(ps[0].Source, "/5") {
		t.Fatalf("predictions %+v, want one, for offset 5", ps)
	}
	dlq := kcatConsumeX(t, brokers, "forestd.dlq", []string{"-Z"})
	reasons := map[string]kmsg{}
	for _, m := range dlq {
		reasons[m.header(pipeline.HeaderSourceOffset)] = m
	}
	if len(dlq) != 5 {
		t.Fatalf("%d dead letters, want 5: %v", len(dlq), reasons)
	}
	for off, want := range map[string]string{
		"0": `JSON row 1 has no key "pixel_3_4"`,
		"1": "pixel_3_4",
		"2": `unsupported content-type "text/csv"`,
		"3": "tombstone",
		"4": "empty value",
	} {
		if r := reasons[off].header(pipeline.HeaderDLQReason); !strings.Contains(r, want) {
			t.Errorf("dead letter of offset %s: reason %q lacks %q", off, r, want)
		}
	}
	if p := reasons["3"].Payload; p != nil {
		t.Errorf("the tombstone's dead letter has a value %q, want null", *p)
	}
	if p := reasons["4"].Payload; p == nil || *p != "" {
		t.Errorf("the empty value's dead letter: %v, want an empty value", p)
	}
	// the ops endpoint: /metrics answers GET and HEAD only; the profiles are
	// served, the endpoint being on loopback
	resp, err := http.Post("http://"+d.ops+"/metrics", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(resp.Header.Get("Allow"), "GET") {
		t.Errorf("POST /metrics: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	resp, err = http.Get("http://" + d.ops + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /debug/pprof/ on loopback: %d", resp.StatusCode)
	}
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}
