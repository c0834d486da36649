package forest

import (
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
)

// BenchmarkTune measures what --tune costs against untuned training at the
// same final tree count (500 trees, 2 threads, CPU seconds, robust to a
// busy machine): rf and sporf on trunk (n = 2,000, p = 50) and morf on a
// series of 100 steps (n = 1,000, bumpFrame), and on the MORF paper's
// circle and impulse (n = 1,000) and hvbars (n = 50), seed 1. It reports the tuned and
// untuned training per op and their ratio (target ≤ 5), and the ratio
// of the winner's own untuned forest to the default's: what the final
// forest costs whatever the search, so tuned/untuned − winner/untuned is
// about the search's share; and the search's own account of its work
// against the untuned forest's (Tuning.Work: at most the budget, 4, when
// the budget can be met), beside which tuned/untuned shows how the work
// model tracks CPU time.
//
//	go test ./arrowforest/forest -run '^$' -bench Tune -benchtime 1x
func BenchmarkTune(b *testing.B) {
	for _, c := range []struct {
		name string
		fr   *frame.Frame
		edit func(*Params)
	}{
		{"rf", trunkFrame(2000, 50, 1), func(*Params) {}},
		{"sporf", trunkFrame(2000, 50, 1), func(p *Params) { p.Forest = KindSPORF }},
		{"morf", bumpFrame(1000, 100, 1), func(p *Params) { p.Forest, p.Layout = KindMORF, "series" }},
		// the MORF paper's data sets of the --tune targets (morf.sh)
		{"morf-circle", synthFrame(b, synth.Circle, 1000), func(p *Params) { p.Forest, p.Layout = KindMORF, "cyclic" }},
		{"morf-impulse", synthFrame(b, synth.Impulse, 1000), func(p *Params) { p.Forest, p.Layout = KindMORF, "series" }},
		{"morf-hvbars50", synthFrame(b, synth.HVBars, 50), func(p *Params) { p.Forest, p.Layout, p.Height, p.Width = KindMORF, "grid", 28, 28 }},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := DefaultParams(frame.TaskClassification)
			p.Trees, p.Threads = 500, 2
			c.edit(&p)
			var untuned, tuned, winner, work float64
			for i := 0; i < b.N; i++ {
				cpu0 := cpuTime()
				if _, err := Train(c.fr, p, TrainOptions{}); err != nil {
					b.Fatal(err)
				}
				cpu1 := cpuTime()
				q := p
				q.Tune = true
				f, err := Train(c.fr, q, TrainOptions{})
				if err != nil {
					b.Fatal(err)
				}
				cpu2 := cpuTime()
				if tw := f.Tuning.Work; tw != nil {
					work += tw.Used / tw.Untuned
				}
				w := f.Params
				w.Tune = false
				if _, err := Train(c.fr, w, TrainOptions{}); err != nil {
					b.Fatal(err)
				}
				cpu3 := cpuTime()
				untuned += (cpu1 - cpu0).Seconds()
				tuned += (cpu2 - cpu1).Seconds()
				winner += (cpu3 - cpu2).Seconds()
			}
			n := float64(b.N)
			b.ReportMetric(untuned/n, "untuned-cpu-s")
			b.ReportMetric(tuned/n, "tuned-cpu-s")
			b.ReportMetric(tuned/untuned, "tuned/untuned")
			b.ReportMetric(winner/untuned, "winner/untuned")
			b.ReportMetric(work/n, "work-used/untuned")
		})
	}
}

// synthFrame draws n rows of a forestd gen data set (seed 1).
func synthFrame(b *testing.B, name string, n int) *frame.Frame {
	b.Helper()
	fr, err := synth.Generate(name, synth.Options{N: n, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	return fr
}
