package dependence

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestEnergyContext: a context that is done stops each energy test —
// one column, categorical, the Euclidean statistic and the projected
// test — with an error wrapping context.Canceled.
func TestEnergyContext(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	ref, cur := energyCols(r, 3000, 4, 0), energyCols(r, 3000, 4, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	opt := EnergyOptions{Test: TestOptions{Seed: 1, MaxRows: 2000}, Threshold: 0.01, Context: ctx}
	codes := func(x []float64) []int32 {
		c := make([]int32, len(x))
		for i, v := range x {
			c[i] = int32(max(0, min(3, v+2)))
		}
		return c
	}
	for name, run := range map[string]func() error{
		"one column":  func() error { _, err := EnergyTest(ref[1], cur[1], opt); return err },
		"categorical": func() error { _, err := EnergyTestCat(codes(ref[1]), codes(cur[1]), 4, opt); return err },
		"statistic":   func() error { _, _, err := EnergyStatJoint(ref, cur, opt); return err },
		"exact joint": func() error { _, err := EnergyTestJoint(ref, cur, opt); return err },
		"projected": func() error {
			o := opt
			o.Directions = 64
			_, err := EnergyTestJoint(ref, cur, o)
			return err
		},
	} {
		if err := run(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", name, err)
		}
	}
}
