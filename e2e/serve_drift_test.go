package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/forestd/forestd/connectors/codec"
)

// driftRows is n JSON lines of four standard normal features x0..x3 (ids
// from id0), x2 moved by shift, and, when labelled, the class
// y = [x0 + x1 > 0]; missing writes x3 as null.
func driftRows(rng *rand.Rand, id0, n int, shift float64, labelled, missing bool) []byte {
	var b strings.Builder
	for i := range n {
		x := [4]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64() + shift, rng.NormFloat64()}
		x3 := fmt.Sprintf("%.6f", x[3])
		if missing {
			x3 = "null"
		}
		fmt.Fprintf(&b, `{"id": %d, "x0": %.6f, "x1": %.6f, "x2": %.6f, "x3": %s`, id0+i, x[0], x[1], x[2], x3)
		if labelled {
			y := 0
			if x[0]+x[1] > 0 {
				y = 1
			}
			fmt.Fprintf(&b, `, "y": %d`, y)
		}
		b.WriteString("}\n")
	}
	return []byte(b.String())
}

// driftReport is the part of a forestd.drift message the test reads.
type driftReport struct {
	Seq          int64  `json:"seq"`
	ModelVersion int64  `json:"model_version"`
	WindowRows   int    `json:"window_rows"`
	WindowLast   string `json:"window_last"`
	Drift        bool   `json:"drift"`
	Retrain      bool   `json:"retrain"`
	Error        string `json:"error"`
	Features     []struct {
		Name      string  `json:"name"`
		PValue    float64 `json:"p_value"`
		PAdjusted float64 `json:"p_adjusted"`
		Drift     bool    `json:"drift"`
	} `json:"features"`
	Skipped []struct {
		Name   string `json:"name"`
		Reason string `json:"reason"`
	} `json:"skipped"`
}

// TestServeDrift (issue 34): forestd serve --stages score,train,drift on
// the broker, fed by kcat one message of 200 rows at a time (each a drift
// test: drift.every 200 rows, a window of 400). The model trains on 1,000
// labelled rows and keeps them as its reference. 20 messages from the
// training distribution come first, then x2 moves by one standard
// deviation from message offset 20 on. The drift reports on forestd.drift
// (JSON, read with kcat) show no alarm before the shift in at least 95% of
// the windows, drift on x2 within two windows of the shift, and
// train.retrain_on: drift retrains once new labelled rows arrive; the
// status page shows the alarm and its feature in headless chromium; a
// window whose x3 is all null names x3 as skipped, the daemon unharmed.
func TestServeDrift(t *testing.T) {
	t.Parallel()
	needKcat(t)
	br := newBrowser(t)
	b := startBroker(t, "", t.TempDir())
	brokers := b.logField("broker listening", "addr", 20*time.Second)
	config := filepath.Join(t.TempDir(), "drift.yaml")
	if err := os.WriteFile(config, []byte(`
stages: [score, train, drift]
key: id
output_format: json
pipeline: {workers: 1}
train: {label: y, exclude: [id], window: 1000, min_rows: 500, retrain_every: "1000", trees: 20, retrain_on: drift}
drift: {window: "400", every: "200", min_rows: 200, alpha: 0.01}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startServe(t, brokers, "--config", config)
	t0 := time.Now()
	ndjson := []string{"content-type=" + codec.ContentTypeNDJSON}
	rng := rand.New(rand.NewPCG(34, 1))
	var train [][]byte
	for i := range 5 {
		train = append(train, driftRows(rng, 1_000_000+200*i, 200, 0, true, false))
	}
	kcatProduce(t, brokers, "forestd.training", ndjson, train...)
	waitCond(t, 90*time.Second, "a first model", func() bool { return d.metric("forestd_model_version") >= 1 })

	// one message of 200 rows at a time to partition 0 (offset k holds
	// rows 200k..200k+199), each waited for: its drift test
	const before, after = 20, 4
	produce := func(k int, shift float64, missing bool) {
		t.Helper()
		kcatProduceX(t, brokers, featuresTopic, []string{"-p", "0"}, ndjson, driftRows(rng, 200*k, 200, shift, false, missing))
		waitCond(t, 60*time.Second, fmt.Sprintf("the drift test after message %d", k), func() bool {
			return d.metric("forestd_drift_tests_total") >= float64(k+1)
		})
	}
	for k := range before {
		produce(k, 0, false)
	}
	for k := before; k < before+after; k++ {
		produce(k, 1, false)
	}
	t.Logf("%v: %d messages scored and tested", time.Since(t0).Round(time.Millisecond), before+after)
	// labels of the new traffic: the retrain drift asked for
	kcatProduce(t, brokers, "forestd.training", ndjson, driftRows(rng, 2_000_000, 300, 1, true, false))
	waitCond(t, 90*time.Second, "a retrain on drift", func() bool {
		return d.metric("forestd_models_trained_total") >= 2 && strings.Contains(d.Log(), `"on_drift":true`)
	})

	var reps []driftReport
	waitCond(t, 30*time.Second, "every drift report on forestd.drift", func() bool {
		reps = reps[:0]
		for _, m := range kcatConsume(t, brokers, "forestd.drift") {
			var r driftReport
			if m.Payload == nil || json.Unmarshal([]byte(*m.Payload), &r) != nil {
				t.Fatalf("drift message %+v is not a JSON report", m)
			}
			if m.header("content-type") != "application/json" {
				t.Fatalf("drift report with content-type %q", m.header("content-type"))
			}
			reps = append(reps, r)
		}
		return len(reps) >= before+after
	})
	preWindows, preAlarms, firstAlarm := 0, 0, -1
	for _, r := range reps {
		_, part, off := parseSource(t, r.WindowLast)
		if part != 0 || r.Error != "" {
			t.Fatalf("report %d: window through %s, error %q", r.Seq, r.WindowLast, r.Error)
		}
		if off < before {
			preWindows++
			if r.Drift {
				preAlarms++
			}
			continue
		}
		if r.Drift && firstAlarm < 0 {
			firstAlarm = int(off)
			moved := map[string]bool{}
			for _, f := range r.Features {
				moved[f.Name] = f.Drift
			}
			if !moved["x2"] || moved["x0"] || moved["x1"] || moved["x3"] || !r.Retrain {
				t.Fatalf("first alarm (window through offset %d): %+v", off, r)
			}
		}
	}
	t.Logf("before the shift: %d alarms in %d windows; first alarm with the window through offset %d (shift at %d)", preAlarms, preWindows, firstAlarm, before)
	if preWindows < before || float64(preAlarms) > 0.05*float64(preWindows) {
		t.Fatalf("before the shift: %d alarms in %d windows, want ≤ 5%%", preAlarms, preWindows)
	}
	// two windows of 400 rows after the shift: messages 20..23
	if firstAlarm < 0 || firstAlarm > before+3 {
		t.Fatalf("first alarm through offset %d, want one within two windows of the shift at %d", firstAlarm, before)
	}

	t.Logf("%v: retrained on drift, reports read", time.Since(t0).Round(time.Millisecond))
	// the status page shows the alarm and its feature, and the p-values over time
	br.run(t, 30*time.Second, chromedp.Navigate("http://"+d.ops+"/"), chromedp.WaitVisible("#drift-alarm"))
	var page struct {
		Info   string   `json:"info"`
		Alarm  string   `json:"alarm"`
		Rows   []string `json:"rows"`
		Series int      `json:"series"`
	}
	seen := ""
	waitCond(t, 30*time.Second, "the drift panel", func() bool {
		br.eval(t, `(() => ({info: document.getElementById('drift-info').textContent,
			alarm: document.getElementById('drift-alarm').textContent,
			rows: Array.from(document.querySelectorAll('#drift-features tbody tr')).map(r => r.textContent),
			series: document.querySelectorAll('#chart-drift svg polyline.series').length}))()`, &page)
		ok := strings.Contains(page.Alarm, "x2") && len(page.Rows) == 5 && page.Series >= 5
		if now := fmt.Sprintf("%+v", page); !ok && now != seen {
			t.Logf("drift panel so far: %s", now)
			seen = now
		}
		return ok
	})
	if !strings.HasPrefix(page.Rows[0], "x2") || !strings.Contains(page.Rows[0], "drift") || !strings.Contains(page.Info, "alarm") {
		t.Fatalf("drift panel: %+v", page)
	}
	if p := br.problems(); len(p) > 0 {
		t.Fatalf("the page logged errors: %q", p)
	}
	br.screenshot(t, "status-page-drift.png")

	t.Logf("%v: the status page shows the alarm", time.Since(t0).Round(time.Millisecond))
	// bad input: a window whose x3 is all null names x3 as skipped
	n := int(d.metric("forestd_drift_tests_total"))
	for k := range 2 {
		kcatProduceX(t, brokers, featuresTopic, []string{"-p", "0"}, ndjson, driftRows(rng, 10_000+200*k, 200, 0, false, true))
	}
	waitCond(t, 60*time.Second, "a drift test of the all-null window", func() bool {
		for _, m := range kcatConsume(t, brokers, "forestd.drift") {
			var r driftReport
			if json.Unmarshal([]byte(*m.Payload), &r) == nil && r.Seq > int64(n) && r.WindowRows == 400 {
				for _, s := range r.Skipped {
					if s.Name == "x3" && len(r.Features) == 3 {
						return true
					}
				}
			}
		}
		return false
	})
	t.Logf("%v: the all-null column named as skipped", time.Since(t0).Round(time.Millisecond))
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM", code)
	}
}
