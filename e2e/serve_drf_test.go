package e2e

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// digitHalves are the pixel names of the upper (input) and lower
// (response) 8×4 halves of a digit (dRF paper §3.2.1).
func digitHalves() (upper, lower []string) {
	for r := 0; r < 8; r++ {
		for c := 0; c < 8; c++ {
			if r < 4 {
				upper = append(upper, fmt.Sprintf("pixel_%d_%d", r, c))
			} else {
				lower = append(lower, fmt.Sprintf("pixel_%d_%d", r, c))
			}
		}
	}
	return upper, lower
}

// readCSVColumns reads the named columns of a CSV file as float64.
func readCSVColumns(t *testing.T, path string, names []string) [][]float64 {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rows, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	idx := map[string]int{}
	for j, h := range rows[0] {
		idx[h] = j
	}
	out := make([][]float64, len(rows)-1)
	for i, r := range rows[1:] {
		for _, n := range names {
			j, ok := idx[n]
			if !ok {
				t.Fatalf("%s: no column %s", path, n)
			}
			v, err := strconv.ParseFloat(r[j], 64)
			if err != nil {
				t.Fatalf("%s row %d %s: %v", path, i, n, err)
			}
			out[i] = append(out[i], v)
		}
	}
	return out
}

// TestServeDRFModel: a distance random forest completing digits (the lower
// half from the upper half, dRF paper §3.2.1; 1,100 training rows, 20
// trees: a model above the 1 MiB message limit) seeds daemon A with
// --model; A publishes it on the model topic in chunks; replica B, started
// without a model, assembles it from the chunks, and scores rows produced
// with kcat into one column per lower-half pixel (named after its target)
// with the model's version and the message coordinates — the same values
// `forestd score` writes offline for the same rows.
func TestServeDRFModel(t *testing.T) {
	t.Parallel()
	needKcat(t)
	upper, lower := digitHalves()
	model := filepath.Join(t.TempDir(), "drf.model")
	forestdJSON(t, "train", "--in", filepath.Join(dataDir, "digits.parquet"), "--forest", "drf",
		"--label", strings.Join(lower, ","), "--features", strings.Join(upper, ","), "--max-rows", "1100",
		"--trees", "20", "--max-features", "5", "--isomap-k", "5", "--embed-dim", "25", "--seed", "3", "--out", model)
	if fi, err := os.Stat(model); err != nil || fi.Size() <= 1<<20 {
		t.Fatalf("drf model of %v bytes: the test needs one above 1 MiB (%v)", fi.Size(), err)
	}
	version := int64(forestdJSON(t, "inspect", "--model", model)["model_version"].(float64))

	brokers, bd := replicaFromChunkedModel(t, model, version)

	const n = 6
	kcatLines(t, brokers, featuresTopic, []string{"content-type=application/json"}, digitsJSONRows(t, n))
	var msgs []kmsg
	deadline := time.Now().Add(60 * time.Second)
	for rows := 0; rows < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d predictions after 60s; B's log:\n%s", rows, n, tail(bd.Log(), 3000))
		}
		time.Sleep(300 * time.Millisecond)
		msgs, rows = kcatConsume(t, brokers, "b.predictions"), 0
		for _, m := range msgs {
			if m.Payload != nil {
				rows += strings.Count(strings.TrimSpace(*m.Payload), "\n") + 1
			}
		}
	}
	offlinePath := filepath.Join(t.TempDir(), "offline.csv")
	forestdJSON(t, "score", "--model", model, "--in", filepath.Join(dataDir, "digits.arrows"), "--out", offlinePath)
	offline := readCSVColumns(t, offlinePath, lower)
	// messages spread over partitions: each prediction's source names its
	// input message, whose payload says which digit it is
	digitOf := map[string]int{}
	rowsJSON := digitsJSONRows(t, n)
	for _, m := range kcatConsume(t, brokers, featuresTopic) {
		src := fmt.Sprintf("%s/%d/%d", m.Topic, m.Partition, m.Offset)
		digitOf[src] = -1
		for d, js := range rowsJSON {
			if m.Payload != nil && *m.Payload == js {
				digitOf[src] = d
			}
		}
	}
	seen := map[int]bool{}
	for _, m := range msgs {
		for _, line := range strings.Split(strings.TrimSpace(*m.Payload), "\n") {
			var p map[string]any
			if err := json.Unmarshal([]byte(line), &p); err != nil {
				t.Fatalf("prediction line %q: %v", line, err)
			}
			if p["model_version"] != float64(version) || p["row"] != float64(0) {
				t.Fatalf("prediction %v: want model version %d, row 0", p, version)
			}
			if _, ok := p["prediction"]; ok {
				t.Fatalf("a drf prediction has a single prediction column: %v", p)
			}
			d, ok := digitOf[p["source"].(string)]
			if !ok || d < 0 || seen[d] {
				t.Fatalf("prediction for source %v (digit %d, seen %v)", p["source"], d, seen[d])
			}
			seen[d] = true
			for k, px := range lower {
				v, ok := p[px].(float64)
				if !ok || math.Abs(v-offline[d][k]) > 1e-9*math.Max(1, math.Abs(v)) {
					t.Fatalf("digit %d %s: daemon %v, forestd score %v", d, px, p[px], offline[d][k])
				}
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("predictions for %d of %d digits", len(seen), n)
	}
}
