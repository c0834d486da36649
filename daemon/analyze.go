package daemon

import (
	"context"
	"fmt"

	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/pipeline"
)

// analysisStages builds the stages of the training route that come before
// train: analyze (the dependence report of the window, published to the
// reports topic) and select (each labelled batch reduced to the selected
// and FDM-mapped columns, published to the selected topic). The features
// route gets a select stage too (see buildStages).
func (d *Daemon) analysisStages() ([]pipeline.Stage, error) {
	c := d.cfg
	if d.analyzer == nil {
		rows, every, err := parseSchedule("train.retrain_every", c.Train.RetrainEvery)
		if err != nil {
			return nil, err
		}
		task, err := c.trainTask()
		if err != nil {
			return nil, err
		}
		a, err := operators.NewAnalyzer(operators.AnalyzeOptions{Label: c.Train.Label, Task: task, Features: c.Train.Features,
			Exclude: c.Train.Exclude, Window: min(c.Train.Window, c.Train.AnalysisWindow), Kind: c.Train.WindowKind, Every: rows,
			EveryDuration: every, MinRows: min(c.Train.MinRows, c.Train.Window, c.Train.AnalysisWindow), Seed: c.Train.Seed})
		if err != nil {
			return nil, err
		}
		d.analyzer = a
		d.analyzeLoop = &analyzeLoop{Analyzer: a, Publish: d.publishReport, Metrics: d.dm, Logger: d.log, Status: d.status}
		if err := d.analyzeLoop.Init(); err != nil {
			return nil, err
		}
	}
	st := []pipeline.Stage{&analyzeStage{Analyzer: d.analyzer, Loop: d.analyzeLoop}}
	if c.Has(stageSelect) {
		st = append(st, &selectStage{Analyzer: d.analyzer, Passthrough: d.passthrough(), Metrics: d.dm})
	}
	return st, nil
}

func (d *Daemon) passthrough() []string {
	var p []string
	if d.cfg.Train.Label != "" {
		p = append(p, d.cfg.Train.Label)
	}
	if d.cfg.Key != "" {
		p = append(p, d.cfg.Key)
	}
	return p
}

// publishReport sends one dependence report to the reports topic.
func (d *Daemon) publishReport(ctx context.Context, an *operators.Analysis) error {
	rec, err := an.Report(nil)
	if err != nil {
		return err
	}
	defer rec.Release()
	return d.sink.Write(ctx, []pipeline.Output{{Stream: streamReports, Key: []byte(fmt.Sprint("analysis/", an.Seq)), Record: rec}})
}
