package benthos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"gopkg.in/yaml.v3"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/operators"
)

// TestRegister: the four processors register into a fresh environment
// (the package's init does the same into the global one) and their specs
// show in it.
func TestRegister(t *testing.T) {
	env := service.NewEmptyEnvironment()
	if err := Register(env); err != nil {
		t.Fatal(err)
	}
	var names []string
	env.WalkProcessors(func(name string, _ *service.ConfigView) { names = append(names, name) })
	if strings.Join(names, ",") != "forestd_drift,forestd_score,forestd_select,forestd_train" {
		t.Fatalf("registered %v", names)
	}
}

// TestLintRules: configurations that cannot work are refused by the linter
// (what `forestd-benthos lint` runs) with a message naming the field, and
// the examples of the specs lint clean.
func TestLintRules(t *testing.T) {
	cases := []struct {
		yaml, want string
	}{
		{`forestd_score: {model: ""}`, "model: the path of a forestd model file is required"},
		{`forestd_score: {model: m, keep: [id, prob_1]}`, "keep: a kept column may not be named like a prediction column"},
		{`forestd_score: {model: m, keep: [id], result_field: id}`, "result_field: the predictions' key is also a keep column"},
		{`forestd_score: {model: m, reload_interval: 0s}`, "reload_interval must be a positive duration"},
		{`forestd_score: {model: m, reload_interval: soon}`, "reload_interval must be a positive duration"},
		{`forestd_score: {model: m, threads: -1}`, "threads must be 0"},
		{`forestd_score: {model: m, keep: [id, top2_prob]}`, "keep: a kept column may not be named like a prediction column (model_id, model_version, source, row, prediction, prob_*, top<i>_class, top<i>_prob)"},
		{`forestd_score: {model: m, keep: [top10_class]}`, "keep: a kept column may not be named like a prediction column"},
		{`forestd_score: {model: m, probs: top0}`, "probs must be auto, all, none or top<k> with k from 1"},
		{`forestd_score: {model: m, probs: Top5}`, "probs must be auto, all, none or top<k>"},
		{`forestd_score: {model: m, probs: some}`, "probs must be auto, all, none or top<k>"},
		{`forestd_score: {modle: m}`, "modle"},
		{`forestd_select: {mapping: ""}`, "mapping: the path"},
		{`forestd_select: {mapping: m, keep: [y], label: y}`, "label is already a kept column"},
		{`forestd_train: {label: y, model_path: m, window: 50}`, "min_rows must not exceed window"},
		{`forestd_train: {label: y, model_path: m, retrain_every: often}`, "retrain_every must be a positive row count"},
		{`forestd_train: {label: y, model_path: m, retrain_every: "0"}`, "retrain_every must be a positive row count"},
		{`forestd_train: {label: y, model_path: m, task: regression, criterion: gini}`, "gini and entropy are classification criteria"},
		{`forestd_train: {label: y, model_path: m, task: classification, criterion: mse}`, "mse is the regression criterion"},
		{`forestd_train: {label: "y0,y1", model_path: m, task: classification}`, "several labels are a multi-output regression target"},
		{`forestd_train: {label: y, model_path: m, features: [a, y]}`, "a label column is also listed as a feature"},
		{`forestd_train: {label: "a, y", model_path: m, exclude: [y]}`, "a label column is also excluded"},
		{`forestd_train: {label: y, model_path: m, lambda: 3}`, "lambda applies to forest: sporf only"},
		{`forestd_train: {label: y, model_path: m, forest: morf}`, "layout: forest morf needs the features' layout"},
		{`forestd_train: {label: y, model_path: m, forest: lfs}`, "lfs"},
		{`forestd_train: {label: y, model_path: m, layout: series}`, "layout applies to forest: morf only"},
		{`forestd_train: {label: y, model_path: m, bins: 300}`, "bins must be between 2 and 255"},
		{`forestd_train: {label: y, model_path: m, sample: subsample, sample_fraction: 1}`, "subsampling draws fewer rows"},
		{`forestd_train: {label: y, model_path: ""}`, "model_path: where to write the model is required"},
		{`forestd_train: {label: "", model_path: m}`, "label: a label column is required"},
		{`forestd_train: {label: y, model_path: m, max_features: bogus}`, "max_features must be sqrt, log2, all, a count from 1 or a fraction in (0, 1]"},
		{`forestd_train: {label: y, model_path: m, max_features: "0"}`, "max_features must be"},
		{`forestd_train: {label: y, model_path: m, max_features: 1.5}`, "max_features must be"},
		{`forestd_train: {label: y, model_path: m, max_features: 2000000}`, "max_features must be"},
		{`forestd_train: {label: y, model_path: m, forest: sporf, max_features: 65.5}`, "max_features must be"},
	}
	for _, c := range cases {
		err := service.NewStreamBuilder().AddProcessorYAML(c.yaml)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.yaml, err, c.want)
		}
	}
	for _, ok := range []string{
		`forestd_score: {model: m, keep: [id], reload_interval: 250ms, result_field: f}`,
		`forestd_score: {model: m, probs: top12, keep: [top_class, top0_prob]}`,
		`forestd_score: {model: m, probs: none}`,
		`forestd_score: {model: m, probs: all}`,
		`forestd_select: {mapping: m, keep: [id], label: y}`,
		`forestd_train: {label: y, model_path: m, retrain_every: 30s, forest: sporf, lambda: 2, task: regression, criterion: mse}`,
		`forestd_train: {label: "y0, y1", model_path: m, retrain_every: "5000", window: 10000, min_rows: 500}`,
		`forestd_train: {label: y, model_path: m, forest: morf, layout: 28x28, tune: true}`,
		`forestd_train: {label: y, model_path: m, max_features: 0.3}`,
		`forestd_train: {label: y, model_path: m, max_features: 12}`,
		`forestd_train: {label: y, model_path: m, max_features: log2}`,
		`forestd_train: {label: y, model_path: m, forest: sporf, max_features: 2.5}`,
	} {
		if err := service.NewStreamBuilder().AddProcessorYAML(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestConfigErrors: a configuration that lints clean but cannot start
// fails when the stream is built, with the file or option at fault.
func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.model")
	for _, c := range []struct{ yaml, want string }{
		{`forestd_score: {model: "` + missing + `"}`, "none.model"},
		{`forestd_select: {mapping: "` + missing + `"}`, "none.model"},
		{`forestd_select: {mapping: "examples/iris.model"}`, "iris.model"},
		{`forestd_score: {model: "examples/xor.fdm.json"}`, "xor.fdm.json"},
		{`forestd_train: {label: y, model_path: "` + missing + `", window_kind: count, window: 10, min_rows: 20}`, "minimum of 20 training rows"},
		// forest parameters are checked at start, naming the field
		{`forestd_train: {label: y, model_path: "` + missing + `", max_features: banana}`, `forestd_train: max_features: max features "banana"`},
		{`forestd_train: {label: y, model_path: "` + missing + `", min_leaf: 0}`, "forestd_train: min_leaf: min leaf must be at least 1"},
		{`forestd_train: {label: y, model_path: "` + missing + `", max_depth: -1}`, "forestd_train: max_depth: "},
		{`forestd_train: {label: y, model_path: "` + missing + `", features: [x1, x1]}`, "feature x1 listed twice"},
		{`forestd_train: {label: y, model_path: "` + missing + `", forest: morf, layout: 28}`, `forestd_train: layout "28": want series, cyclic or a grid WxH`},
		{`forestd_train: {label: y, model_path: "` + filepath.Join(dir, "nodir", "m.model") + `"}`, "its directory " + filepath.Join(dir, "nodir") + " does not exist"},
		{`forestd_train: {label: y, model_path: "` + dir + `"}`, "forestd_train: model_path: " + dir + ": not a regular file"},
	} {
		b := service.NewStreamBuilder()
		if err := b.SetLoggerYAML("level: off"); err != nil {
			t.Fatal(err)
		}
		b.DisableLinting()
		if err := b.AddInputYAML(`generate: {count: 1, interval: "", mapping: 'root = {}'}`); err != nil {
			t.Fatal(err)
		}
		if err := b.AddProcessorYAML(c.yaml); err != nil {
			t.Fatal(err)
		}
		if err := b.AddOutputYAML(`drop: {}`); err != nil {
			t.Fatal(err)
		}
		st, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = st.Run(ctx) // the processors are constructed when the stream starts
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.yaml, err, c.want)
		}
	}
	// without require_model a missing model is not a start error
	b := service.NewStreamBuilder()
	if err := b.AddProcessorYAML(`forestd_score: {model: "` + missing + `", require_model: false}`); err != nil {
		t.Fatal(err)
	}
	if err := b.AddOutputYAML(`drop: {}`); err != nil {
		t.Fatal(err)
	}
	if err := b.AddInputYAML(`generate: {count: 1, interval: "", mapping: 'root = {}'}`); err != nil {
		t.Fatal(err)
	}
	if err := b.SetLoggerYAML("level: off"); err != nil {
		t.Fatal(err)
	}
	st, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestMergeObject: the byte-level merge of prediction members into a JSON
// object keeps the message's text and handles empty objects, whitespace
// and a result field; what it cannot merge it refuses.
func TestMergeObject(t *testing.T) {
	for _, c := range []struct{ orig, field, want string }{
		{`{"a":1}`, "", `{"a":1,"p":2}`},
		{`{ "a" : 1 } ` + "\n", "", `{ "a" : 1 ,"p":2}`},
		{`{}`, "", `{"p":2}`},
		{" { \n } ", "", " { \n \"p\":2}"},
		{`{"a":1}`, "out", `{"a":1,"out":{"p":2}}`},
		{`{"a":"}"}`, "r\"q", `{"a":"}","r\"q":{"p":2}}`},
	} {
		got, ok := mergeObject([]byte(c.orig), []byte(`{"p":2}`), c.field)
		if !ok || string(got) != c.want {
			t.Errorf("%q %q: %q %v, want %q", c.orig, c.field, got, ok, c.want)
		}
	}
	for _, bad := range []string{``, `[1]`, `  `, `}`} {
		if got, ok := mergeObject([]byte(bad), []byte(`{"p":2}`), ""); ok {
			t.Errorf("%q merged into %q", bad, got)
		}
	}
}

// TestLintMaxFeatures: the linter accepts exactly the max_features values
// forest's parser accepts before seeing the data (forest.Params.Check, as
// forestd_train checks them at start), for each kind: names, counts from
// 1, fractions in (0, 1], up to 64 for the oblique kinds. (A count above
// the features is refused at training; above 2^20, which no data set
// reaches, the linter refuses it already.)
func TestLintMaxFeatures(t *testing.T) {
	values := []string{"", "sqrt", "auto", "log2", "all", "bogus", "SQRT", "0", "-1", "+7", "1", "7", "007", "1048576",
		"0.5", "1.0", "1e-3", ".25", "1.5", "64", "64.0", "65.5", "0.0", "-0.5", "NaN", "Inf", " 7", "7 ", "0x1p-2"}
	for _, kind := range []string{"rf", "sporf", "morf"} {
		for _, v := range values {
			p := forest.DefaultParams(frame.TaskAuto)
			p.Forest, p.MaxFeatures = forest.Kind(kind), v
			layout := ""
			if kind == "morf" {
				layout = ", layout: series"
				if err := p.SetLayout("series"); err != nil {
					t.Fatal(err)
				}
			}
			parsed := operators.TrainOptions{Params: p}.CheckParams() == nil
			yaml := fmt.Sprintf("forestd_train: {label: y, model_path: m, forest: %s%s, max_features: %q}", kind, layout, v)
			err := service.NewStreamBuilder().AddProcessorYAML(yaml)
			if linted := err == nil; linted != parsed {
				t.Errorf("forest %s, max_features %q: lint %v, forest's check accepts: %v", kind, v, err, parsed)
			}
		}
	}
}

// TestExamplesListenOnLoopback: every shipped example sets Benthos' HTTP
// server to a loopback address or disables it (Benthos' default listens
// on 0.0.0.0:4195, every interface).
func TestExamplesListenOnLoopback(t *testing.T) {
	paths, _ := filepath.Glob("examples/*.yaml")
	if len(paths) == 0 {
		t.Fatal("no examples")
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			HTTP *struct {
				Address string `yaml:"address"`
				Enabled *bool  `yaml:"enabled"`
			} `yaml:"http"`
		}
		if err := yaml.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		switch {
		case c.HTTP == nil:
			t.Errorf("%s: no http section: Benthos listens on 0.0.0.0:4195", p)
		case c.HTTP.Enabled != nil && !*c.HTTP.Enabled:
		case !strings.HasPrefix(c.HTTP.Address, "127.0.0.1:") && !strings.HasPrefix(c.HTTP.Address, "localhost:"):
			t.Errorf("%s: http.address %q is not loopback", p, c.HTTP.Address)
		}
	}
}
