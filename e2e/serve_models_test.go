package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// trainVersioned trains a small model on a testdata set with the given
// model version and returns its path and content ID.
func trainVersioned(t *testing.T, data, label string, version int64, seed int) (string, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "m.model")
	forestdJSON(t, "train", "--in", filepath.Join(dataDir, data), "--label", label, "--out", out, "--trees", "8",
		"--seed", strconv.Itoa(seed), "--model-version", strconv.FormatInt(version, 10))
	return out, forestdJSON(t, "inspect", "--model", out)["model_id"].(string)
}

// publishModel writes a model file to the model topic with kcat as one
// chunk whose key and headers claim keyVersion, whatever the model says.
func publishModel(t *testing.T, brokers, path, id string, keyVersion int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := strconv.FormatInt(keyVersion, 10)
	kcatProduceX(t, brokers, "forestd.models", []string{"-k", fmt.Sprintf("model/%s/%s/0", v, id)}, []string{
		"content-type=application/vnd.forestd.model-chunk", "forestd-model-id=" + id, "forestd-model-version=" + v,
		"forestd-chunk=0/1", "forestd-model-bytes=" + strconv.Itoa(len(data)),
	}, data)
}

// waitMetric waits until the daemon's metric reaches want.
func (d *daemon) waitMetric(name string, want float64, timeout time.Duration) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for d.metric(name) != want {
		if time.Now().After(deadline) {
			d.t.Fatalf("%s = %v after %v, want %v:\n%s", name, d.metric(name), timeout, want, tail(d.Log(), 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitMetricAtLeast waits until the daemon's metric is at least want.
func (d *daemon) waitMetricAtLeast(name string, want float64, timeout time.Duration) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for d.metric(name) < want {
		if time.Now().After(deadline) {
			d.t.Fatalf("%s = %v after %v, want at least %v:\n%s", name, d.metric(name), timeout, want, tail(d.Log(), 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeModelAdoption (reliability issue, item 5): a 4-feature iris
// model published on the model topic used to take over a digits daemon —
// its entry's key said version 30, its content version 1, and its ID
// sorted after the live one — and every digits message went to the dead
// letters. Now an entry whose key disagrees with its content is refused
// (version_mismatch), a correctly labelled model for other columns is
// refused (columns_changed), both are logged and counted, digits keep
// being scored by the live model, and a real newer digits model is
// adopted.
func TestServeModelAdoption(t *testing.T) {
	t.Parallel()
	needKcat(t)
	seed, _ := trainVersioned(t, "digits.parquet", "label", 1, 3)
	b := startBroker(t, "", t.TempDir())
	brokers := b.logField("broker listening", "addr", time.Second)
	d := startServe(t, brokers, "--model", seed, "--stages", "score", "--output-format", "json")
	d.waitReady(60 * time.Second)
	rows := digitsJSONRows(t, 4)
	json := []string{"content-type=application/json"}

	iris1, irisID1 := trainVersioned(t, "iris.parquet", "label", 1, 9)
	publishModel(t, brokers, iris1, irisID1, 30) // the key lies: content says version 1
	iris30, irisID30 := trainVersioned(t, "iris.parquet", "label", 30, 9)
	publishModel(t, brokers, iris30, irisID30, 30)
	d.waitMetric(`forestd_models_rejected_total{reason="version_mismatch"}`, 1, 30*time.Second)
	d.waitMetric(`forestd_models_rejected_total{reason="columns_changed"}`, 1, 30*time.Second)
	if v := d.metric("forestd_model_version"); v != 1 {
		t.Fatalf("model version %v after the iris models, want the seed's 1", v)
	}
	kcatLines(t, brokers, featuresTopic, json, rows[:2])
	ps := waitPredictions(t, brokers, "forestd.predictions", 60*time.Second, func(ps []prediction) bool { return len(ps) >= 2 })
	for _, p := range ps {
		if p.ModelVersion != 1 {
			t.Fatalf("a digits row scored by model version %d", p.ModelVersion)
		}
	}
	if n := d.metric("forestd_dead_letters_total"); n != 0 {
		t.Fatalf("%v dead letters: digits rows must score with the live model", n)
	}
	// a real newer digits model takes over
	v2, id2 := trainVersioned(t, "digits.parquet", "label", 2, 4)
	publishModel(t, brokers, v2, id2, 2)
	d.waitMetric("forestd_model_version", 2, 30*time.Second)
	kcatLines(t, brokers, featuresTopic, json, rows[2:])
	ps = waitPredictions(t, brokers, "forestd.predictions", 60*time.Second, func(ps []prediction) bool { return len(ps) >= 4 })
	got := 0
	for _, p := range ps {
		if p.ModelVersion == 2 {
			got++
		}
	}
	if got != 2 {
		t.Fatalf("%d rows scored by the new model version 2, want 2", got)
	}
	for _, want := range []string{`"reason":"version_mismatch"`, `"reason":"columns_changed"`} {
		if !containsLog(d.Log(), "model refused", want) {
			t.Fatalf("no log line %q:\n%s", want, tail(d.Log(), 30))
		}
	}
}

// TestServeRestartNoDowngrade (reliability issue, item 6): after a model
// entry whose key version disagrees with its content, a restarted daemon
// with --model used to keep the seed and ignore the real newer model on the
// topic (its catch-up kept the newest entry by key only). Now it adopts the
// newest model whose entry is true.
func TestServeRestartNoDowngrade(t *testing.T) {
	t.Parallel()
	needKcat(t)
	seed, _ := trainVersioned(t, "digits.parquet", "label", 1, 3)
	b := startBroker(t, "", t.TempDir())
	brokers := b.logField("broker listening", "addr", time.Second)
	// the first daemon creates the model topic (one partition) and adopts v5
	d := startServe(t, brokers, "--model", seed, "--stages", "score", "--output-format", "json")
	d.waitReady(60 * time.Second)
	v5, id5 := trainVersioned(t, "digits.parquet", "label", 5, 5)
	publishModel(t, brokers, v5, id5, 5)
	d.waitMetric("forestd_model_version", 5, 30*time.Second)
	bogus, bogusID := trainVersioned(t, "digits.parquet", "label", 1, 6)
	publishModel(t, brokers, bogus, bogusID, 30) // claims 30, is 1
	d.waitMetric(`forestd_models_rejected_total{reason="version_mismatch"}`, 1, 30*time.Second)
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("first daemon exit %d", code)
	}
	// the restart reads the topic: the lying entry sorts first by its key
	d = startServe(t, brokers, "--model", seed, "--stages", "score", "--output-format", "json")
	d.waitReady(60 * time.Second)
	d.waitMetric("forestd_model_version", 5, 30*time.Second)
	// it was offered the lying entry first (newest by key), refused it, and
	// went on to the true v5
	d.waitMetric(`forestd_models_rejected_total{reason="version_mismatch"}`, 1, 30*time.Second)
	kcatLines(t, brokers, featuresTopic, []string{"content-type=application/json"}, digitsJSONRows(t, 1))
	ps := waitPredictions(t, brokers, "forestd.predictions", 60*time.Second, func(ps []prediction) bool { return len(ps) >= 1 })
	if ps[0].ModelVersion != 5 {
		t.Fatalf("scored by model version %d after the restart, want 5 (the newest true entry)", ps[0].ModelVersion)
	}
}

// containsLog reports whether one line of the log has the message and all
// the fragments.
func containsLog(log, msg string, fragments ...string) bool {
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"msg":"`+msg+`"`) {
			continue
		}
		ok := true
		for _, f := range fragments {
			ok = ok && strings.Contains(line, f)
		}
		if ok {
			return true
		}
	}
	return false
}
