package lakescore_test

import (
	"testing"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/internal/fixture"
	"github.com/forestd/forestd/lakescore"
	"github.com/forestd/forestd/scoring"
)

// TestPlanProbs: the memory a lake run sets aside for scoring is what
// Score holds for the probabilities Options.Probs keeps — with all the
// rows×K matrix of every chunk in flight, with top5 and none each row's
// ranks or class plus the scorers' blocks of rows × K — so that a model of
// 2,000 classes scores in chunks of 4,096 rows with all, where its
// rows×K matrices bound them, and of 131,072 (the largest) with top5 and
// none, where they did not grow past all's before, when every row was
// counted with every class's probability whatever the output kept.
func TestPlanProbs(t *testing.T) {
	const k, threads = 2000, 2
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 5, 2
	f, err := forest.Train(fixture.Classes(4000, 4, k, 1), p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := scoring.Encode(f, 1, "test")
	if err != nil {
		t.Fatal(err)
	}
	inflight := int64(2*threads + 1)
	chunks := map[scoring.Probs]int64{}
	for _, probs := range []scoring.Probs{scoring.ProbsAll, scoring.ProbsTop(5), scoring.ProbsNone, scoring.ProbsAuto} {
		chunk, work, rowGroups, err := lakescore.Plan(m, lakescore.Options{Probs: probs, Threads: threads, MaxMemory: 2 << 30})
		if err != nil {
			t.Fatal(err)
		}
		perRow, blocks, err := m.PredictionBytes(int(chunk), 1, probs)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-5s chunks of %6d rows, %4d MiB set aside for scoring (%3d MiB of it the blocks), %4d MiB for row groups",
			probs, chunk, work>>20, (threads*blocks)>>20, rowGroups>>20)
		if work < inflight*chunk*perRow+threads*blocks || blocks < int64(k*min(int(chunk), 1<<23/k))*8 {
			t.Errorf("%s: %d bytes set aside, Score holds %d per row of %d chunks of %d rows and %d per scorer", probs, work, perRow, inflight, chunk, blocks)
		}
		if probs == scoring.ProbsAll && work < inflight*chunk*4*k {
			t.Errorf("all: %d bytes set aside, less than the probability matrices of %d chunks of %d rows", work, inflight, chunk)
		}
		chunks[probs] = chunk
	}
	if chunks[scoring.ProbsAll] != 4096 || chunks[scoring.ProbsTop(5)] != 1<<17 || chunks[scoring.ProbsNone] != 1<<17 || chunks[scoring.ProbsAuto] != 1<<17 {
		t.Fatalf("chunk rows %v", chunks)
	}
}
