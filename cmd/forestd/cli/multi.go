package cli

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/manifold"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/schemas"
)

// eval and score of models with several outputs (forest.IsMultiOutput): a
// multi-output regression forest (--forest rf|sporf|morf|lfs with
// --label a,b,c) or a distance random forest (--forest drf). Both predict
// a vector per row and write one column per target.

// newMultiOutput returns what predicts f's outputs: its compiled form c,
// or for a drf forest a manifold.Predictor (which rebuilds the training
// distance matrix; setup is the seconds that took).
func newMultiOutput(f *forest.Forest, c *forest.Compiled, threads int) (mo forest.MultiOutput, setup float64, err error) {
	if f.Kind != forest.KindDRF {
		return c, 0, nil
	}
	t0 := time.Now()
	p, err := manifold.NewPredictor(f, threads)
	return p, time.Since(t0).Seconds(), err
}

// modelTargets names the outputs of a multi-output model.
func modelTargets(f *forest.Forest) []string {
	if f.DRF != nil {
		return f.DRF.Targets
	}
	return f.Targets
}

// evalMulti runs `forestd eval` for a model with several outputs: rmse is
// the root of the mean squared error over rows and outputs, mae the mean
// absolute error, and per_output the same per target. --label (default:
// the model's label columns) must give the model's targets.
func evalMulti(env Env, f *forest.Forest, meta model.Meta, c *forest.Compiled, modelPath string, paths []string, label string, threads int) error {
	if label == "" {
		label = f.LabelName
	}
	labels, err := labelColumns(label)
	if err != nil {
		return err
	}
	var fr *frame.Frame
	var targets []string
	var y []float64
	var skipped int
	if f.Kind == forest.KindDRF { // responses may be fixed-size list columns
		var resp *manifold.Responses
		if fr, resp, skipped, err = readDRFInput(paths, labels, nil, nil, f); err != nil {
			return err
		}
		targets, y = resp.Targets, resp.Y
	} else {
		opts := sourceOptions(f, "")
		if len(labels) > 1 {
			opts.Targets = labels
		} else {
			opts.Label = labels[0]
		}
		if fr, err = loadLabelled(paths, opts); err == nil {
			fr, err = f.FromSource(fr)
		}
		if err != nil {
			return err
		}
		targets, y, skipped = fr.Targets, fr.YReg, fr.SkippedLabels
	}
	if want := modelTargets(f); !slices.Equal(targets, want) {
		return fmt.Errorf("--label %s gives targets %v; the model predicts %v", label, targets, want)
	}
	mo, setup, err := newMultiOutput(f, c, threads)
	if err != nil {
		return err
	}
	t1 := time.Now()
	pred, err := mo.PredictValues(fr, threads)
	if err != nil {
		return err
	}
	secs := time.Since(t1).Seconds()
	q := len(targets)
	se, ae := make([]float64, q), make([]float64, q)
	for i := 0; i < fr.NRows; i++ {
		for r := 0; r < q; r++ {
			d := pred[i*q+r] - y[i*q+r]
			se[r] += d * d
			ae[r] += math.Abs(d)
		}
	}
	n := float64(fr.NRows)
	per := map[string]any{}
	var tse, tae float64
	for r, t := range targets {
		per[t] = map[string]float64{"rmse": math.Sqrt(se[r] / n), "mse": se[r] / n, "mae": ae[r] / n}
		tse += se[r]
		tae += ae[r]
	}
	nq := n * float64(q)
	return writeJSON(env.Stdout, map[string]any{
		"model": modelPath, "model_id": meta.ID, "rows": fr.NRows, "skipped_labels": skipped,
		"seconds": secs, "setup_seconds": setup, "rows_per_second": n / math.Max(secs, 1e-9),
		"rmse": math.Sqrt(tse / nq), "mse": tse / nq, "mae": tae / nq, "per_output": per,
	})
}

// scoreMulti runs `forestd score` for a model with several outputs: one
// float64 column per output, named after its target.
func scoreMulti(env Env, f *forest.Forest, meta model.Meta, c *forest.Compiled, modelPath string, paths, keep []string, out string, threads int) error {
	schema, recs, err := readRecords(paths, nil)
	if err != nil {
		return err
	}
	defer release(recs)
	fr, err := sourceFrame(f, schema, recs) // source.go: the model's mapping applied
	if err != nil {
		return err
	}
	spec := schemas.PredictionSpec{ModelID: meta.ID, ModelVersion: meta.Version}
	keepIdx, err := keepColumns(schema, keep, &spec)
	if err != nil {
		return err
	}
	targets := modelTargets(f)
	if err := schemas.CheckMultiNames(spec, targets); err != nil {
		return fmt.Errorf("--keep: %w", err)
	}
	t0 := time.Now()
	mo, _, err := newMultiOutput(f, c, threads)
	if err != nil {
		return err
	}
	pred, err := mo.PredictValues(fr, threads)
	if err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	src := sourceName(paths)
	var outRecs []arrow.Record
	defer release(outRecs)
	q := len(targets)
	row := 0
	for _, r := range recs {
		n := int(r.NumRows())
		var kept []arrow.Array
		for _, ix := range keepIdx {
			kept = append(kept, r.Column(ix))
		}
		rec, err := schemas.BuildMultiPredictions(memory.DefaultAllocator, spec, targets, src, int64(row), kept, pred[row*q:(row+n)*q])
		if err != nil {
			return err
		}
		outRecs = append(outRecs, rec)
		row += n
	}
	if err := files.WriteFile(out, schemas.MultiPredictions(spec, targets), outRecs, files.WriteOptions{}); err != nil {
		return err
	}
	return writeJSON(env.Stdout, map[string]any{
		"model": modelPath, "model_id": meta.ID, "rows": fr.NRows, "out": out, "seconds": secs,
		"rows_per_second": float64(fr.NRows) / math.Max(secs, 1e-9), "targets": targets,
	})
}
