package e2e

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/kafka"
	forestddaemon "github.com/forestd/forestd/daemon"
	"github.com/forestd/forestd/pipeline"
)

const featuresTopic = "forestd.features"

// digitsJSONRows renders the first n rows of digits.arrows as JSON objects
// (the features only).
func digitsJSONRows(t *testing.T, n int) []string {
	t.Helper()
	schema, recs, err := files.ReadFile(filepath.Join(dataDir, "digits.arrows"), files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var out []string
	for _, r := range recs { // the batches Arrow JS wrote, in order
		for i := 0; i < int(r.NumRows()) && len(out) < n; i++ {
			m := map[string]float64{}
			for j, f := range schema.Fields() {
				if f.Name == "label" {
					continue
				}
				m[f.Name] = r.Column(j).(*array.Float64).Value(i)
			}
			b, _ := json.Marshal(m)
			out = append(out, string(b))
		}
	}
	if len(out) < n {
		t.Fatalf("digits.arrows has %d rows, fewer than %d", len(out), n)
	}
	return out
}

// offlineScore scores a file with `forestd score` and returns the
// predicted class per row.
func offlineScore(t *testing.T, model, in string) []string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "p.csv")
	if code, _, errs := forestd(t, nil, "score", "--model", model, "--in", in, "--out", out); code != 0 {
		t.Fatalf("score: %s", errs)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for j, h := range rows[0] {
		if h == "prediction" {
			col = j
		}
	}
	var preds []string
	for _, r := range rows[1:] {
		preds = append(preds, r[col])
	}
	return preds
}

// TestServeKcatJSONAndArrow: rows produced with kcat as JSON (one object per
// message, and JSON lines) and the Arrow IPC stream digits.arrows written by
// Arrow JS come back as predictions — one per input row, with the seed
// model's version, the source coordinates of their message and the row
// within it, and the same classes as offline `forestd score`.
func TestServeKcatJSONAndArrow(t *testing.T) {
	t.Parallel()
	needKcat(t)
	model, version := trainModel(t, "digits.parquet", "label", 20)
	b := startBroker(t, "", t.TempDir())
	brokers := b.logField("broker listening", "addr", time.Second)
	d := startServe(t, brokers, "--model", model, "--stages", "score", "--output-format", "json")
	d.waitReady(60 * time.Second)

	rows := digitsJSONRows(t, 12)
	// 10 messages of one object each, in kcat's line mode
	kcatLines(t, brokers, featuresTopic, []string{"content-type=application/json"}, rows[:10])
	// one JSON-lines message of two rows, without a content-type (sniffed)
	kcatProduce(t, brokers, featuresTopic, nil, []byte(rows[10]+"\n"+rows[11]+"\n"))
	// the Arrow JS stream as one message, once with and once without a content-type
	arrows, err := os.ReadFile(filepath.Join(dataDir, "digits.arrows"))
	if err != nil {
		t.Fatal(err)
	}
	kcatProduce(t, brokers, featuresTopic, []string{"content-type=application/vnd.apache.arrow.stream"}, arrows)
	kcatProduce(t, brokers, featuresTopic, nil, arrows)

	in := kcatConsume(t, brokers, featuresTopic)
	if len(in) != 13 {
		t.Fatalf("%d input messages", len(in))
	}
	// rows expected per source message
	want := map[string]int{}
	big := map[string]bool{}
	for _, m := range in {
		src := fmt.Sprintf("%s/%d/%d", m.Topic, m.Partition, m.Offset)
		switch {
		case m.Payload != nil && strings.HasPrefix(*m.Payload, "{") && strings.Count(*m.Payload, "\n") == 2:
			want[src] = 2
		case m.Payload != nil && strings.HasPrefix(*m.Payload, "{"):
			want[src] = 1
		default:
			want[src] = 1797
			big[src] = true
		}
	}
	total := 0
	for _, n := range want {
		total += n
	}
	ps := waitPredictions(t, brokers, "forestd.predictions", 120*time.Second, func(ps []prediction) bool { return len(ps) >= total })
	if len(ps) != total {
		t.Fatalf("%d predictions for %d input rows", len(ps), total)
	}
	offline := offlineScore(t, model, filepath.Join(dataDir, "digits.arrows"))
	seen := map[string]map[int64]bool{}
	for _, p := range ps {
		if p.ModelVersion != version || p.ModelID == "" {
			t.Fatalf("prediction with model %q version %d, want version %d", p.ModelID, p.ModelVersion, version)
		}
		n, ok := want[p.Source]
		if !ok {
			t.Fatalf("prediction for unknown source %q", p.Source)
		}
		if p.Row < 0 || p.Row >= int64(n) {
			t.Fatalf("row %d of %s, which has %d rows", p.Row, p.Source, n)
		}
		if seen[p.Source] == nil {
			seen[p.Source] = map[int64]bool{}
		}
		if seen[p.Source][p.Row] {
			t.Fatalf("two predictions for %s row %d", p.Source, p.Row)
		}
		seen[p.Source][p.Row] = true
		if big[p.Source] && fmt.Sprint(p.Prediction) != offline[p.Row] {
			t.Fatalf("%s row %d: daemon predicts %v, forestd score %s", p.Source, p.Row, p.Prediction, offline[p.Row])
		}
	}
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM", code)
	}
	if !strings.Contains(d.Log(), "forestd serve stopped") {
		t.Fatal("no clean-stop log line")
	}
}

// TestServePoisonToDLQ: undecodable bytes, bad_schema.arrows (a valid
// stream without the model's pixel_7_7) and wrong-typed JSON all land in
// forestd.dlq with the reason in headers, while good traffic around them is
// scored (here with Arrow IPC output, decoded with arrow-go).
func TestServePoisonToDLQ(t *testing.T) {
	t.Parallel()
	brokers, d := digitsDaemon(t, nil, "--output-format", "arrow") // fixed: JSON in, Arrow out
	rows := digitsJSONRows(t, 6)
	badSchema, err := os.ReadFile(filepath.Join(dataDir, "bad_schema.arrows"))
	if err != nil {
		t.Fatal(err)
	}
	wrongType := strings.Replace(rows[0], `"pixel_0_1":`, `"pixel_0_1":"seven","x":`, 1)
	kcatLines(t, brokers, featuresTopic, []string{"content-type=application/json"}, rows[:3])
	kcatProduce(t, brokers, featuresTopic, nil, []byte("\x00\x01 not a record \xfe"))
	kcatProduce(t, brokers, featuresTopic, nil, badSchema)
	kcatLines(t, brokers, featuresTopic, []string{"content-type=application/json"}, []string{wrongType})
	kcatLines(t, brokers, featuresTopic, []string{"content-type=application/json"}, rows[3:])

	deadline := time.Now().Add(120 * time.Second)
	var dlq []kmsg
	for {
		dlq = kcatConsume(t, brokers, "forestd.dlq")
		if len(dlq) >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if len(dlq) != 3 {
		t.Fatalf("%d dead letters, want 3", len(dlq))
	}
	reasons := map[string]string{}
	for _, m := range dlq {
		if m.header(pipeline.HeaderSourceTopic) != featuresTopic || m.header(pipeline.HeaderSourceOffset) == "" {
			t.Fatalf("dead letter without source coordinates: %v", m.Headers)
		}
		reasons[m.header(pipeline.HeaderDLQStage)+": "+m.header(pipeline.HeaderDLQReason)] = m.header(pipeline.HeaderSourceOffset)
	}
	var all []string
	for r := range reasons {
		all = append(all, r)
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{"decode: no content-type header, and the value is neither", "pixel_7_7", "column pixel_0_1 is utf8"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no dead-letter reason mentions %q:\n%s", want, joined)
		}
	}
	// the six good rows were scored, in Arrow IPC
	msgs := kcatConsume(t, brokers, "forestd.predictions")
	if len(msgs) != 6 {
		t.Fatalf("%d prediction messages for 6 good rows", len(msgs))
	}
	for _, m := range msgs {
		if m.header(kafka.HeaderContentType) != codec.ContentTypeArrow || m.header(forestddaemon.HeaderModelVersion) == "" {
			t.Fatalf("prediction headers %v", m.Headers)
		}
	}
	if v := d.metric("forestd_dead_letters_total"); v != 3 {
		t.Fatalf("forestd_dead_letters_total = %v", v)
	}
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestServeKill9Cycles kills the daemon with SIGKILL at random moments
// after it has begun committing, ten times, while a producer keeps writing; a last daemon then catches up.
// Every produced row has at least one prediction (nothing lost), and no
// message committed before a kill was processed again after it
// (duplicates only within the uncommitted window).
func TestServeKill9Cycles(t *testing.T) {
	t.Parallel()
	needKcat(t)
	model, _ := trainSyntheticModel(t, 4, 10)
	b := startBroker(t, "", t.TempDir())
	brokers := b.logField("broker listening", "addr", time.Second)
	pr := startProducer(t, brokers, featuresTopic, 4, 5, 15*time.Millisecond)
	rng := rand.New(rand.NewPCG(5, 9))
	type kill struct {
		at        time.Time
		committed map[int32]int64
	}
	var kills []kill
	args := []string{"--model", model, "--stages", "score", "--output-format", "json", "--key", "id", "--session-timeout", "1s", "--commit-interval", "30ms"}
	for cycle := 0; cycle < 10; cycle++ {
		d := startServe(t, brokers, args...)
		// each daemon is killed at a random moment after its first commit:
		// killed before it (a loaded machine can take seconds to rejoin the
		// group while the previous member's session lapses), no daemon
		// might ever commit and the check below would test nothing.
		// Killing during a rejoin is TestServeDoubleKill9's case.
		d.waitMetricAtLeast("forestd_commits_total", 1, 60*time.Second)
		time.Sleep(time.Duration(rng.IntN(1200)) * time.Millisecond)
		d.kill()
		kills = append(kills, kill{at: time.Now(), committed: groupOffsets(t, brokers, "forestd", featuresTopic)})
	}
	pr.stop()
	ids := pr.ids()
	var committedAtLastKill int64
	for _, o := range kills[len(kills)-1].committed {
		committedAtLastKill += o
	}
	if committedAtLastKill == 0 {
		t.Fatal("no committed offsets observed at the kills: the check below would be vacuous")
	}
	d := startServe(t, brokers, args...)
	ps := waitAllPredicted(t, brokers, 120*time.Second, ids)
	dups := checkAllPredicted(t, ids, ps)
	// a prediction written after kill k must come from a message at or
	// after the offset committed when kill k happened
	violations := 0
	for _, p := range ps {
		_, part, off := parseSource(t, p.Source)
		for _, k := range kills {
			if p.Ts > k.at.UnixMilli() && off < k.committed[part] {
				violations++
				if violations < 5 {
					t.Errorf("%s scored again at %d after kill at %d although committed to %d", p.Source, p.Ts, k.at.UnixMilli(), k.committed[part])
				}
			}
		}
	}
	if violations > 0 {
		t.Fatalf("%d predictions re-processed committed messages", violations)
	}
	t.Logf("%d rows, %d predictions, %d duplicates across 10 kill -9 cycles", len(ids), len(ps), dups)
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// groupOffsets reads the group's committed offsets with kcat's
// consumer-group query (-Q is for timestamps; the committed offsets come
// from a Go admin request instead).
func groupOffsets(t *testing.T, brokers, group, topic string) map[int32]int64 {
	t.Helper()
	offs, err := kafka.CommittedOffsets(ctxT(t, 10*time.Second), kafka.ClientOptions{Brokers: []string{brokers}}, group, topic)
	if err != nil {
		t.Fatal(err)
	}
	return offs
}

// TestServeBrokerRestart kills the broker process (SIGKILL) under load and
// starts it again on the same port and data directory: the daemon and the
// producer recover by themselves and every row is predicted.
func TestServeBrokerRestart(t *testing.T) {
	t.Parallel()
	needKcat(t)
	model, _ := trainSyntheticModel(t, 4, 10)
	dataDir := t.TempDir()
	addr := freePort(t)
	b := startBroker(t, addr, dataDir)
	d := startServe(t, addr, "--model", model, "--stages", "score", "--output-format", "json", "--key", "id")
	d.waitReady(60 * time.Second)
	pr := startProducer(t, addr, featuresTopic, 4, 5, 20*time.Millisecond)
	time.Sleep(1500 * time.Millisecond)
	b.kill()
	time.Sleep(time.Second)
	startBroker(t, addr, dataDir)
	time.Sleep(3 * time.Second)
	pr.stop()
	ids := pr.ids()
	if len(ids) < 100 {
		t.Fatalf("only %d rows produced", len(ids))
	}
	ps := waitAllPredicted(t, addr, 120*time.Second, ids)
	dups := checkAllPredicted(t, ids, ps)
	if d.metric("forestd_commit_errors_total")+d.metric("forestd_retries_total") == 0 && d.metric("forestd_group_generations_total") < 2 {
		t.Fatal("the daemon saw no failed commit, retry or rebalance: the broker outage did not reach it")
	}
	t.Logf("%d rows, %d predictions (%d duplicates) across a broker restart; commit errors %v, retries %v, generations %v",
		len(ids), len(ps), dups, d.metric("forestd_commit_errors_total"), d.metric("forestd_retries_total"), d.metric("forestd_group_generations_total"))
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestServeTwoDaemonsOneGroup: two daemons in one group split the four
// partitions; killing one moves its partitions to the other, and every row
// is predicted.
func TestServeTwoDaemonsOneGroup(t *testing.T) {
	t.Parallel()
	needKcat(t)
	model, _ := trainSyntheticModel(t, 4, 10)
	b := startBroker(t, "", t.TempDir())
	brokers := b.logField("broker listening", "addr", time.Second)
	args := []string{"--model", model, "--stages", "score", "--output-format", "json", "--key", "id", "--session-timeout", "1s"}
	d1 := startServe(t, brokers, args...)
	d2 := startServe(t, brokers, args...)
	d1.waitReady(60 * time.Second)
	d2.waitReady(60 * time.Second)
	pr := startProducer(t, brokers, featuresTopic, 4, 5, 20*time.Millisecond)
	waitCond(t, 90*time.Second, "the partitions split 2 + 2", func() bool {
		return d1.metric("forestd_assigned_partitions") == 2 && d2.metric("forestd_assigned_partitions") == 2
	})
	waitCond(t, 90*time.Second, "both daemons scoring", func() bool {
		return d1.metric("forestd_rows_out_total") > 0 && d2.metric("forestd_rows_out_total") > 0
	})
	d1.kill()
	waitCond(t, 90*time.Second, "the survivor owning all four partitions", func() bool {
		return d2.metric("forestd_assigned_partitions") == 4
	})
	time.Sleep(time.Second)
	pr.stop()
	ids := pr.ids()
	ps := waitAllPredicted(t, brokers, 120*time.Second, ids)
	checkAllPredicted(t, ids, ps)
	if code := d2.stop(20 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func waitCond(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestServeHotSwapMonotonic trains and scores in one daemon while labelled
// and unlabelled rows stream in: several models are trained and
// hot-swapped mid-stream, every row is predicted (no gap), and within each
// source partition the model versions never decrease with the offset.
func TestServeHotSwapMonotonic(t *testing.T) {
	t.Parallel()
	needKcat(t)
	b := startBroker(t, "", t.TempDir())
	brokers := b.logField("broker listening", "addr", time.Second)
	d := startServe(t, brokers, "--stages", "train,score", "--output-format", "json", "--key", "id", "--label", "y",
		"--exclude", "id", "--retrain-every", "300", "--window", "2000", "--min-rows", "200", "--trees", "10")
	train := startLabelledProducer(t, brokers, "forestd.training", 50, 25*time.Millisecond)
	score := startProducer(t, brokers, featuresTopic, 4, 10, 20*time.Millisecond)
	waitCond(t, 90*time.Second, "four model versions", func() bool { return d.metric("forestd_model_version") >= 4 })
	score.stop()
	train.stop()
	ids := score.ids()
	ps := waitAllPredicted(t, brokers, 120*time.Second, ids)
	checkAllPredicted(t, ids, ps)
	type key struct {
		part int32
		off  int64
	}
	ver := map[key]int64{}
	versions := map[int64]bool{}
	for _, p := range ps {
		_, part, off := parseSource(t, p.Source)
		k := key{part, off}
		if v, ok := ver[k]; ok && v != p.ModelVersion {
			t.Fatalf("message %s scored by two versions (%d and %d)", p.Source, v, p.ModelVersion)
		}
		ver[k] = p.ModelVersion
		versions[p.ModelVersion] = true
	}
	keys := make([]key, 0, len(ver))
	for k := range ver {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].part != keys[j].part {
			return keys[i].part < keys[j].part
		}
		return keys[i].off < keys[j].off
	})
	for i := 1; i < len(keys); i++ {
		a, b := keys[i-1], keys[i]
		if a.part == b.part && ver[b] < ver[a] {
			t.Fatalf("partition %d: offset %d scored by v%d after offset %d by v%d", a.part, b.off, ver[b], a.off, ver[a])
		}
	}
	if len(versions) < 2 {
		t.Fatalf("the stream saw %d model versions; no hot swap happened mid-stream", len(versions))
	}
	// the models and importances were published
	if n := len(kcatConsume(t, brokers, "forestd.importances")); n < 4 {
		t.Fatalf("%d importance messages for ≥ 4 models", n)
	}
	t.Logf("%d rows scored by %d model versions", len(ids), len(versions))
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// startLabelledProducer writes labelled rows (features like the
// producer's, label y = id mod 2) as Arrow IPC messages.
func startLabelledProducer(t *testing.T, brokers, topic string, rowsPer int, interval time.Duration) *producer {
	t.Helper()
	sink, err := kafka.NewSink(kafka.SinkOptions{Client: kafka.ClientOptions{Brokers: []string{brokers}}, Topics: map[string]string{"t": topic}})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	pr := &producer{done: make(chan struct{})}
	pr.cancel = func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}
	go func() {
		defer close(pr.done)
		defer sink.Close()
		next := 0
		for {
			select {
			case <-stop:
				return
			case <-time.After(interval):
			}
			rec := labelledRecord(next, rowsPer)
			next += rowsPer
			err := sink.Write(ctxT(t, 10*time.Second), []pipeline.Output{{Stream: "t", Record: rec}})
			rec.Release()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(pr.stop)
	return pr
}

func labelledRecord(first, n int) arrow.Record {
	mem := memory.DefaultAllocator
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}
	bs := []array.Builder{array.NewInt64Builder(mem)}
	for j := 0; j < 4; j++ {
		fields = append(fields, arrow.Field{Name: "f" + strconv.Itoa(j), Type: arrow.PrimitiveTypes.Float64})
		bs = append(bs, array.NewFloat64Builder(mem))
	}
	fields = append(fields, arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Int64})
	bs = append(bs, array.NewInt64Builder(mem))
	for i := 0; i < n; i++ {
		id := first + i
		bs[0].(*array.Int64Builder).Append(int64(id))
		for j := 0; j < 4; j++ {
			bs[j+1].(*array.Float64Builder).Append(float64((id*(j+3))%17) / 4)
		}
		bs[5].(*array.Int64Builder).Append(int64(id % 2))
	}
	cols := make([]arrow.Array, len(bs))
	for i, b := range bs {
		cols[i] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecord(arrow.NewSchema(fields, nil), cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// replicaFromChunkedModel starts a broker, daemon A seeded with model (in
// group a) and replica B without a model (group b, JSON predictions to
// b.predictions); it returns once B is ready, after checking that B scores
// with the model's version and that the model crossed forestd.models in at
// least two chunks. The caller's model must exceed the 1 MiB message limit.
func replicaFromChunkedModel(t *testing.T, model string, version int64) (brokers string, bd *daemon) {
	t.Helper()
	b := startBroker(t, "", t.TempDir())
	brokers = b.logField("broker listening", "addr", time.Second)
	a := startServe(t, brokers, "--model", model, "--stages", "score", "--group", "a")
	a.waitReady(60 * time.Second)
	bd = startServe(t, brokers, "--stages", "score", "--group", "b", "--output-format", "json", "--topic", "predictions=b.predictions")
	bd.waitReady(60 * time.Second)
	if v := bd.metric("forestd_model_version"); v != float64(version) {
		t.Fatalf("replica B scores with model version %v, want %d", v, version)
	}
	chunks := 0
	for _, m := range kcatConsume(t, brokers, "forestd.models") {
		if m.header("forestd-chunk") != "" {
			chunks++
		}
	}
	if chunks < 2 {
		t.Fatalf("the model travelled in %d chunks", chunks)
	}
	return brokers, bd
}

// TestServeReplicaAdoptsPublishedModel: daemon A is seeded with a model
// larger than the broker's 1 MiB message limit and publishes it, chunked,
// on forestd.models; daemon B, started without a model in another group,
// reassembles it from the topic, becomes ready and scores with it.
func TestServeReplicaAdoptsPublishedModel(t *testing.T) {
	t.Parallel()
	needKcat(t)
	model, version := trainModel(t, "digits.parquet", "label", 150)
	if fi, err := os.Stat(model); err != nil || fi.Size() <= 1<<20 {
		t.Fatalf("model of %v bytes: the test needs one above 1 MiB (%v)", fi.Size(), err)
	}
	brokers, _ := replicaFromChunkedModel(t, model, version)
	kcatLines(t, brokers, featuresTopic, []string{"content-type=application/json"}, digitsJSONRows(t, 3))
	ps := waitPredictions(t, brokers, "b.predictions", 30*time.Second, func(ps []prediction) bool { return len(ps) >= 3 })
	for _, p := range ps {
		if p.ModelVersion != version {
			t.Fatalf("B predicted with version %d", p.ModelVersion)
		}
	}
}

// TestServeModelOnlyJSON is the newcomer's first session: `forestd serve
// --model M` and nothing else, 300 JSON rows sent with kcat (no
// content-type header, one object per message, as kcat -l sends a file)
// come back as 300 JSON predictions — the output follows the input, the
// daemon runs no train stage waiting for a label nobody named, and its
// log says once at start that predictions carry no row key without --key.
func TestServeModelOnlyJSON(t *testing.T) {
	needKcat(t)
	model, version := trainModel(t, "digits.parquet", "label", 10)
	b := startBroker(t, "", t.TempDir())
	brokers := b.logField("broker listening", "addr", time.Second)
	d := startServe(t, brokers, "--model", model)
	d.waitReady(60 * time.Second)
	if stages := d.logField("forestd serve started", "stages", time.Second); stages != "score" {
		t.Fatalf("serve --model runs stages %q, want score", stages)
	}
	kcatLines(t, brokers, featuresTopic, nil, digitsJSONRows(t, 300))
	ps := waitPredictions(t, brokers, "forestd.predictions", 120*time.Second, func(ps []prediction) bool { return len(ps) >= 300 })
	if len(ps) != 300 {
		t.Fatalf("%d predictions for 300 rows", len(ps))
	}
	for _, p := range ps {
		if p.ModelVersion != version || p.Prediction == nil {
			t.Fatalf("prediction %+v, want model version %d and a class", p, version)
		}
	}
	for _, m := range kcatConsume(t, brokers, "forestd.predictions") {
		if ct := m.header("content-type"); ct != "application/x-ndjson" {
			t.Fatalf("prediction message with content-type %q, want JSON lines", ct)
		}
	}
	if n := strings.Count(d.Log(), "predictions carry no row key"); n != 1 {
		t.Fatalf("the no-row-key note logged %d times, want once:\n%s", n, tail(d.Log(), 2000))
	}
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM", code)
	}
}
