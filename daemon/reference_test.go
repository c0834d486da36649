package daemon

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/forestd/forestd/internal/broker"
	"github.com/forestd/forestd/pipeline"
	"github.com/prometheus/client_golang/prometheus"
)

var updateReference = flag.Bool("update", false, "rewrite docs/reference-metrics.md from the metrics the daemon registers")

// metricDoc is one row of docs/reference-metrics.md.
type metricDoc struct {
	name, kind, labels, help string
}

// descPattern reads a prometheus.Desc's String(), which is the only place
// client_golang exposes a descriptor's name, help and variable labels.
var descPattern = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), unit: "[^"]*", constLabels: \{[^}]*\}, variableLabels: \{([^}]*)\}\}$`)

// daemonMetrics lists every metric the daemon registers besides the Go
// runtime's and the process's: each Collector field of pipeline.Metrics
// and of the daemon's own metrics, described by its Desc. It fails when
// the registry gathers a forestd_ metric that the fields do not describe,
// so that a metric registered some other way is not left out.
func daemonMetrics(t *testing.T) []metricDoc {
	t.Helper()
	pm := pipeline.NewMetrics()
	dm := newMetrics(pm.Registry, pm.Retries)
	drm := newDriftMetrics(pm.Registry)                                                          // stage drift's (drift.go)
	bm := newBrokerMetrics(pm.Registry, func() broker.LimitStats { return broker.LimitStats{} }) // the embedded broker's
	seen := map[string]metricDoc{}
	for _, s := range []any{pm, dm, drm, bm} {
		v := reflect.ValueOf(s).Elem()
		for i := 0; i < v.NumField(); i++ {
			c, ok := v.Field(i).Interface().(prometheus.Collector)
			if !ok || v.Field(i).Type() == reflect.TypeOf(pm.Registry) {
				continue
			}
			// the field's type: a CounterFunc's value has no kind in its name
			kind := strings.ToLower(v.Field(i).Type().String())
			switch {
			case strings.Contains(kind, "counter"):
				kind = "counter"
			case strings.Contains(kind, "gauge"):
				kind = "gauge"
			case strings.Contains(kind, "histogram"):
				kind = "histogram"
			default:
				t.Fatalf("%s.%s: a collector of type %T", v.Type(), v.Type().Field(i).Name, c)
			}
			ch := make(chan *prometheus.Desc, 4)
			c.Describe(ch)
			close(ch)
			for d := range ch {
				m := descPattern.FindStringSubmatch(d.String())
				if m == nil {
					t.Fatalf("cannot read %s", d)
				}
				name, err1 := strconv.Unquote(m[1])
				help, err2 := strconv.Unquote(m[2])
				if err1 != nil || err2 != nil {
					t.Fatalf("cannot read %s", d)
				}
				seen[name] = metricDoc{name, kind, m[3], help}
			}
		}
	}
	fams, err := pm.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "forestd_") && seen[f.GetName()].name == "" {
			t.Errorf("the registry has %s, which no metrics field describes", f.GetName())
		}
	}
	var docs []metricDoc
	for _, d := range seen {
		docs = append(docs, d)
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].name < docs[j].name })
	return docs
}

func referenceMetrics(t *testing.T) string {
	var b strings.Builder
	b.WriteString(`# Reference: the daemon's metrics

` + "`forestd serve`" + ` serves these on ` + "`/metrics`" + ` (Prometheus text format),
beside the Go runtime's ` + "`go_*`" + ` and the process's ` + "`process_*`" + `
metrics. [daemon.md](daemon.md) says what they show.

Generated from the metrics the daemon registers by
` + "`go test ./daemon -run TestReferenceMetrics -update`" + `;
` + "`TestReferenceMetrics`" + ` fails when this page and the code differ.

| metric | type | labels | meaning |
|---|---|---|---|
`)
	for _, d := range daemonMetrics(t) {
		labels := ""
		if d.labels != "" {
			labels = "`" + strings.ReplaceAll(d.labels, ",", "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.name, d.kind, labels, strings.ReplaceAll(d.help, "|", `\|`))
	}
	b.WriteString(`
The Redpanda Connect / Benthos processors report their own metrics through
Benthos (` + "`forestd_rows_scored`" + `, ` + "`forestd_model_version`" + ` and others):
see [benthos.md](benthos.md#forestd_score).
`)
	return b.String()
}

// TestReferenceMetrics: docs/reference-metrics.md lists every metric the
// daemon registers, with its type, labels and help (with -update:
// rewritten so).
func TestReferenceMetrics(t *testing.T) {
	want := referenceMetrics(t)
	path := filepath.Join("..", "docs", "reference-metrics.md")
	if *updateReference {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s differs from the metrics the daemon registers; run go test ./daemon -run TestReferenceMetrics -update", path)
	}
}
