package main

import (
	"math"
	"testing"
)

// TestMcNemar checks the exact McNemar p-value against R's binom.test:
//
//	Rscript -e 'options(digits=17); print(c(binom.test(115,183)$p.value,
//	  binom.test(36,99)$p.value, binom.test(3,3)$p.value, binom.test(10,20)$p.value))'
func TestMcNemar(t *testing.T) {
	for _, c := range []struct {
		b, c int
		want float64
	}{
		{115, 68, 0.00063278866212507126},
		{36, 63, 0.00863358694341794311},
		{3, 0, 0.25},
		{0, 3, 0.25},
		{10, 10, 1},
		{0, 0, 1},
	} {
		if got := mcnemar(c.b, c.c); math.Abs(got-c.want) > 1e-12*math.Max(1, c.want) {
			t.Errorf("mcnemar(%d, %d) = %.17g, R gives %.17g", c.b, c.c, got, c.want)
		}
	}
}
