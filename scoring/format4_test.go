package scoring_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/manifold"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/scoring"
)

// writeFormat4 rewrites testdata/format4 (see its README): only with the
// encoder of format version 4, which is how the files were made.
var writeFormat4 = flag.Bool("write-format4", false, "write testdata/format4 models and predictions with this build's encoder")

// scored is what Score wrote for every row: each output column after
// the source coordinates, strings as they are and numbers as the bits of
// their float64 value (float32 columns widened exactly).
type scored struct {
	Strings [][]string `json:"strings"`
	Bits    [][]uint64 `json:"bits"`
}

func scoreAll(t *testing.T, m *scoring.Model, raw *frame.Frame) scored {
	t.Helper()
	rec := raw.ToRecord(nil)
	defer rec.Release()
	out, err := m.Score([]arrow.Record{rec}, scoring.Options{Threads: 2, Probs: scoring.ProbsAll})
	if err != nil {
		t.Fatal(err)
	}
	var s scored
	for _, o := range out {
		defer o.Release()
		for c := 5; c < int(o.NumCols()); c++ {
			var strs []string
			var bits []uint64
			for i := 0; i < int(o.NumRows()); i++ {
				switch a := o.Column(c).(type) {
				case *array.String:
					strs = append(strs, a.Value(i))
				case *array.Float32:
					bits = append(bits, math.Float64bits(float64(a.Value(i))))
				case *array.Float64:
					bits = append(bits, math.Float64bits(a.Value(i)))
				default:
					t.Fatalf("column %s: type %s", o.Schema().Field(c).Name, a.DataType())
				}
			}
			if strs != nil {
				s.Strings = append(s.Strings, strs)
			}
			if bits != nil {
				s.Bits = append(s.Bits, bits)
			}
		}
	}
	if len(s.Strings)+len(s.Bits) == 0 {
		t.Fatal("no predictions")
	}
	return s
}

// formatVersionOf reads forestd.format_version of the model file at path.
func formatVersionOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return formatVersionOfBytes(t, b)
}

// formatVersionOfBytes reads forestd.format_version of a model.
func formatVersionOfBytes(t *testing.T, b []byte) string {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	v, _ := r.Schema().Metadata().GetValue(model.KeyFormatVersion)
	return v
}

func sameScores(t *testing.T, got, want scored) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("predictions differ from those stored with the format-4 model:\n got %.300s\nwant %.300s", g, w)
	}
}

// TestFormat4Models: a model file of format version 4 — one of every
// kind, written by the encoder of that version and kept in
// testdata/format4 — still loads and scores the kind's test rows into
// exactly the predictions that build made (stored beside it).
func TestFormat4Models(t *testing.T) {
	dir := filepath.Join("testdata", "format4")
	for _, kc := range kindCases(t) {
		t.Run(kc.name, func(t *testing.T) {
			path := filepath.Join(dir, kc.name+".model")
			pred := filepath.Join(dir, kc.name+".pred.json")
			if *writeFormat4 {
				if model.FormatVersion != 4 {
					t.Fatalf("this build writes format %d", model.FormatVersion)
				}
				if _, err := model.WriteFile(path, kc.f, model.Meta{Version: 1, CreatedBy: "forestd format-4 testdata"}); err != nil {
					t.Fatal(err)
				}
				m, err := scoring.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				b, err := json.Marshal(scoreAll(t, m, kc.test))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(pred, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m, err := scoring.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			// the format-4 encoder stamps the lowest version that holds
			// the model (1 to 4)
			if v := formatVersionOf(t, path); v < "1" || v > "4" || len(v) != 1 {
				t.Fatalf("stored model has format version %s, want 1 to 4", v)
			}
			b, err := os.ReadFile(pred)
			if err != nil {
				t.Fatal(err)
			}
			var want scored
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			sameScores(t, scoreAll(t, m, kc.test), want)
			// the same seed trains the same forest, whose model in
			// today's format scores the same predictions
			enc, err := scoring.Encode(kc.f, 1, "test")
			if err != nil {
				t.Fatal(err)
			}
			now, err := scoring.Decode(enc.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			sameScores(t, scoreAll(t, now, kc.test), want)
		})
	}
}

// TestCompactBytesAnyThreads: the same seed gives the same model bytes
// (format 5) whatever the training threads, for every kind Train grows:
// rf, sporf, morf, lfs, fdm (with landmark mappings, whose derived
// inputs are in the model), a multi-output regression forest and a drf
// (manifold.Train, whose embedding and back-scores are in the model).
func TestCompactBytesAnyThreads(t *testing.T) {
	tr, err := synth.Generate(synth.Trunk, synth.Options{N: 300, Seed: 1, P: 9})
	if err != nil {
		t.Fatal(err)
	}
	xtr, err := synth.Generate(synth.XOR3, synth.Options{N: 400, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	sw, tg, _, err := synth.GenerateMulti("swissroll", synth.Options{N: 300, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	var y []float64
	for i := range sw.NRows {
		y = append(y, tg[0][i], tg[1][i], tg[2][i])
	}
	targets := []string{"y0", "y1", "y2"}
	multi := &frame.Frame{Names: sw.Names, Cols: sw.Cols, NRows: sw.NRows}
	if err := multi.SetTargets(targets, y); err != nil {
		t.Fatal(err)
	}
	grow := func(fr *frame.Frame, set func(*forest.Params)) func(int) (*forest.Forest, error) {
		return func(threads int) (*forest.Forest, error) {
			p := forest.DefaultParams(fr.Task)
			p.Trees, p.Threads = 8, threads
			set(&p)
			return forest.Train(fr, p, forest.TrainOptions{})
		}
	}
	for _, kc := range []struct {
		name  string
		train func(threads int) (*forest.Forest, error)
	}{
		{"rf", grow(tr, func(*forest.Params) {})},
		{"sporf", grow(tr, func(p *forest.Params) { p.Forest, p.MeanDiff = forest.KindSPORF, true })},
		{"morf", grow(tr, func(p *forest.Params) {
			p.Forest, p.PatchHMax, p.PatchWMax, p.Width, p.Height, p.Layout = forest.KindMORF, 2, 2, 3, 3, "grid"
		})},
		{"lfs", grow(tr, func(p *forest.Params) {
			p.Forest, p.LFSSize, p.Width, p.Height, p.Layout = forest.KindLFS, 3, 3, 3, "grid"
		})},
		{"fdm", grow(xtr, func(p *forest.Params) {
			p.Forest, p.FDMMap, p.FDMGroups, p.FDMMarginal = forest.KindFDM, fdm.MapDRL, "1,2", "0"
		})},
		{"multi-output", grow(multi, func(*forest.Params) {})},
		{"drf", func(threads int) (*forest.Forest, error) {
			o := manifold.DefaultOptions()
			o.Trees, o.MaxFeatures, o.Threads, o.EmbedDim = 8, "3", threads, 2
			return manifold.Train(sw, y, targets, o)
		}},
	} {
		var first []byte
		for _, threads := range []int{1, 3} {
			f, err := kc.train(threads)
			if err != nil {
				t.Fatalf("%s: %v", kc.name, err)
			}
			m, err := scoring.Encode(f, 1, "test")
			if err != nil {
				t.Fatal(err)
			}
			if v := formatVersionOfBytes(t, m.Bytes()); v != "5" {
				t.Fatalf("%s: format version %s", kc.name, v)
			}
			if first == nil {
				first = m.Bytes()
			} else if !bytes.Equal(first, m.Bytes()) {
				t.Errorf("%s: %d threads give other bytes than 1", kc.name, threads)
			}
		}
	}
}
