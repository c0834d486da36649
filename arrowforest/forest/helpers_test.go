package forest

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
)

// classFrame allocates a two-class frame of n rows with p zero features
// named prefix0, prefix1, … and the label column label.
func classFrame(n, p int, prefix, label string) *frame.Frame {
	f := &frame.Frame{NRows: n, Classes: []string{"0", "1"}, Task: frame.TaskClassification, LabelName: label}
	for j := 0; j < p; j++ {
		f.Names = append(f.Names, prefix+strconv.Itoa(j))
		f.Cols = append(f.Cols, make([]float32, n))
	}
	f.Y = make([]int32, n)
	return f
}

// trunkFrame draws Trunk data (Randomer paper, Methods): class ±, features
// N(±1/sqrt(j), 1). Kept local so engine tests do not depend on synth.
func trunkFrame(n, p int, seed uint64) *frame.Frame {
	rng := rand.New(rand.NewPCG(seed, 7))
	f := classFrame(n, p, "x", "label")
	for i := 0; i < n; i++ {
		y := rng.IntN(2)
		f.Y[i] = int32(y)
		s := 1.0
		if y == 1 {
			s = -1
		}
		for j := 0; j < p; j++ {
			f.Cols[j][i] = float32(s/math.Sqrt(float64(j+1)) + rng.NormFloat64())
		}
	}
	return f
}

func errorRate(pred []int32, y []int32) float64 {
	bad := 0
	for i := range y {
		if pred[i] != y[i] {
			bad++
		}
	}
	return float64(bad) / float64(len(y))
}

// trainCompiled trains a forest on fr and compiles it for scoring.
func trainCompiled(t testing.TB, fr *frame.Frame, p Params) (*Forest, *Compiled) {
	t.Helper()
	f, err := Train(fr, p, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

// threeClasses relabels fr (trunkFrame) in place to three classes: rows
// whose third feature exceeds 1 become class 2, so ĵ is a real choice.
func threeClasses(fr *frame.Frame) *frame.Frame {
	for i := range fr.Y {
		if fr.Cols[2][i] > 1 {
			fr.Y[i] = 2
		}
	}
	fr.Classes = []string{"0", "1", "2"}
	return fr
}

// oobFrames is Trunk (2,000 rows, 6 features) as two classes, with missing
// values at rate missing, as three classes and as regression: the frames
// of the out-of-bag tests.
func oobFrames(missing float64) map[string]*frame.Frame {
	two := trunkFrame(2000, 6, 5)
	if missing > 0 {
		withMissing(two, missing, 2)
	}
	return map[string]*frame.Frame{
		"two classes":   two,
		"three classes": threeClasses(trunkFrame(2000, 6, 5)),
		"regression":    regressionFrame(2000, 6, 5),
	}
}

// trainOOB trains 12 trees of fr's task's default parameters with opts.
func trainOOB(t *testing.T, fr *frame.Frame, opts TrainOptions) (*Forest, Params) {
	t.Helper()
	task := frame.TaskClassification
	if fr.YReg != nil {
		task = frame.TaskRegression
	}
	p := DefaultParams(task)
	p.Trees, p.Threads = 12, 2
	f, err := Train(fr, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f, p
}
