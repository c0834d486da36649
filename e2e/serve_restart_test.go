package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestServeRestartScoresWithTopicModel: a daemon seeded with --model v1
// trains v2, publishes it on forestd.models and stops; while it is down a
// backlog of feature messages arrives; the daemon is started again with the
// same flags (the seed file is still v1). It must score the backlog with
// v2, the newest model on the model topic, not with the seed: the consumer
// used to start while the model topic was still being read, so the first
// messages of the backlog were scored by the stale seed and the model
// versions of the prediction stream went 2 → 1 → 2 across the restart.
func TestServeRestartScoresWithTopicModel(t *testing.T) {
	t.Parallel()
	needKcat(t)
	seed, seedVersion := trainSyntheticModel(t, 4, 10)
	b := startBroker(t, "", t.TempDir())
	brokers := b.logField("broker listening", "addr", time.Second)
	args := []string{"--model", seed, "--stages", "train,score", "--output-format", "json", "--key", "id", "--label", "y",
		"--exclude", "id", "--retrain-every", "300", "--window", "2000", "--min-rows", "200", "--trees", "200"}
	a := startServe(t, brokers, args...)
	train := startLabelledProducer(t, brokers, "forestd.training", 100, 20*time.Millisecond)
	a.waitMetricAtLeast("forestd_models_trained_total", 1, 90*time.Second)
	train.stop()
	a.waitMetricAtLeast("forestd_models_published_total", 2, 30*time.Second) // the seed and a trained model
	live := int64(a.metric("forestd_model_version"))
	if live <= seedVersion {
		t.Fatalf("live model v%d after training, seed v%d", live, seedVersion)
	}
	if code := a.stop(20 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}

	const n = 3000
	lines := make([]string, n)
	for id := range lines {
		var b strings.Builder
		fmt.Fprintf(&b, `{"id": %d`, id)
		for j := 0; j < 4; j++ {
			fmt.Fprintf(&b, `, "f%d": %g`, j, float64((id*(j+3))%17)/4)
		}
		b.WriteString("}")
		lines[id] = b.String()
	}
	kcatLines(t, brokers, featuresTopic, []string{"content-type=application/json"}, lines)

	d := startServe(t, brokers, args...)
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	ps := waitAllPredicted(t, brokers, 120*time.Second, ids)
	checkAllPredicted(t, ids, ps)
	stale := map[int64]int{}
	for _, p := range ps {
		if p.ModelVersion < live {
			stale[p.ModelVersion]++
		}
	}
	if len(stale) > 0 {
		t.Fatalf("after the restart, rows were scored by models older than v%d, the newest on the model topic: %v (version → rows)", live, stale)
	}
	t.Logf("%d backlog rows scored after the restart, all by v%d or newer", n, live)
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}
