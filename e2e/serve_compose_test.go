package e2e

import (
	"context"
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/kafka"
)

// xorRows generates `forestd gen xor2` data (dissertation Table 6.1 ii:
// the label is the product of the signs of three features, so no single
// feature or pair tells anything about it) and renders it as JSON lines
// with an id and two pure-noise features, n0 and n1, that the selection
// must drop. It returns the lines and the label of each id.
func xorRows(t *testing.T, n int, seed uint64, label bool) ([]string, map[int]string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "xor2.csv")
	if code, _, errs := forestd(t, nil, "gen", "xor2", "--n", strconv.Itoa(n), "--seed", strconv.FormatUint(seed, 10), "--out", out); code != 0 {
		t.Fatalf("gen xor2: %s", errs)
	}
	fh, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	recs, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(recs[0], ","); got != "x3a_0,x3a_1,x3a_2,y" {
		t.Fatalf("xor2 columns %s", got)
	}
	rng := rand.New(rand.NewPCG(seed, 17))
	var lines []string
	labels := map[int]string{}
	for i, r := range recs[1:] {
		id := int(seed)*100000 + i
		labels[id] = r[3]
		l := fmt.Sprintf(`{"id": %d, "x3a_0": %s, "x3a_1": %s, "x3a_2": %s, "n0": %.6f, "n1": %.6f`, id, r[0], r[1], r[2], rng.NormFloat64(), rng.NormFloat64())
		if label {
			l += fmt.Sprintf(`, "y": %s`, r[3])
		}
		lines = append(lines, l+"}")
	}
	return lines, labels
}

// ndjsonMessages groups lines into messages of per rows each.
func ndjsonMessages(lines []string, per int) [][]byte {
	var out [][]byte
	for lo := 0; lo < len(lines); lo += per {
		out = append(out, []byte(strings.Join(lines[lo:min(lo+per, len(lines))], "\n")+"\n"))
	}
	return out
}

// TestServeComposeSelectTrainScore: forestd serve --stages
// select,train,score on xor2 plus noise, fed by kcat. The select stage's
// analysis finds the XOR triple and drops the noise; train learns on the
// selected and FDM-mapped columns and publishes a model that carries the
// mapping (read back from forestd.models and decoded); score applies that
// mapping to raw held-out rows, and the predictions beat chance clearly.
func TestServeComposeSelectTrainScore(t *testing.T) {
	t.Parallel()
	needKcat(t)
	b := startBroker(t, "", t.TempDir())
	brokers := b.logField("broker listening", "addr", 20*time.Second)
	d := startServe(t, brokers, "--stages", "select,train,score", "--label", "y", "--exclude", "id", "--key", "id",
		"--window", "800", "--min-rows", "400", "--retrain-every", "800", "--trees", "60", "--output-format", "json")
	if d.logField("forestd serve started", "composed", 30*time.Second) != "true" {
		t.Fatal("select,train,score does not compose")
	}
	train, _ := xorRows(t, 800, 3, true)
	kcatProduce(t, brokers, "forestd.training", []string{"content-type=" + codec.ContentTypeNDJSON}, ndjsonMessages(train, 100)...)

	features := d.logField("model trained", "features", 60*time.Second)
	source := d.logField("model trained", "source_columns", time.Second)
	if source != "x3a_0,x3a_1,x3a_2" || !strings.HasPrefix(features, "fdm_g1_") || strings.Contains(features, "n0") {
		t.Fatalf("model trained on %q from %q; want the XOR triple's mapped columns, without the noise", features, source)
	}
	// the published model carries exactly that mapping
	bus, err := kafka.NewModelBus(kafka.ModelBusOptions{Client: kafka.ClientOptions{Brokers: []string{brokers}}, Topic: "forestd.models"})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var once sync.Once
	got := make(chan []byte, 1)
	go bus.Follow(ctx, func(ref kafka.ModelRef, data []byte) bool { once.Do(func() { got <- data; cancel() }); return true })
	var data []byte
	select {
	case data = <-got:
	case <-ctx.Done():
		t.Fatal("no model on forestd.models")
	}
	f, _, err := model.DecodeBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Mapping == nil || strings.Join(f.Features, ",") != features || !slices.Equal(f.Mapping.Names(), f.Features) ||
		strings.Join(f.Mapping.Inputs(), ",") != source {
		t.Fatalf("published model: features %v, mapping %+v", f.Features, f.Mapping)
	}

	// held-out rows, without labels, scored through the daemon
	test, labels := xorRows(t, 600, 8, false)
	kcatProduce(t, brokers, featuresTopic, []string{"content-type=" + codec.ContentTypeNDJSON}, ndjsonMessages(test, 100)...)
	ps := waitPredictions(t, brokers, "forestd.predictions", 60*time.Second, func(ps []prediction) bool { return len(ps) >= 600 })
	right := 0
	seen := map[int]bool{}
	for _, p := range ps {
		id := int(p.ID)
		want, ok := labels[id]
		if !ok || seen[id] {
			t.Fatalf("prediction for id %d (known %v, seen before %v)", id, ok, seen[id])
		}
		seen[id] = true
		if p.ModelVersion < 1 {
			t.Fatalf("prediction by model version %d", p.ModelVersion)
		}
		if fmt.Sprint(p.Prediction) == want {
			right++
		}
	}
	acc := float64(right) / float64(len(ps))
	t.Logf("held-out accuracy through select → train → score: %.4f (%d rows)", acc, len(ps))
	if len(ps) != 600 || acc < 0.8 {
		t.Fatalf("%d predictions, accuracy %.4f: want 600 and ≥ 0.8 (chance is 0.5)", len(ps), acc)
	}
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM", code)
	}
}
