package dependence

import (
	"fmt"
	"math"
)

// Label is the response a test or search measures dependence on: classes
// (Y in 0..K−1) or numbers (Values). Classes take gCor_n (Definition 12)
// or dCor_n with the 0/1 label distance; numbers take dCor_n with the
// distance |y − y'| (Definitions 8–9), the only statistic of chapter 2
// defined for a numeric response besides Pearson's.
type Label struct {
	Y      []int32
	K      int
	Values []float64
}

// Classes is a class label: y in 0..k−1.
func Classes(y []int32, k int) Label { return Label{Y: y, K: k} }

// Numeric is a numeric label.
func Numeric(v []float64) Label { return Label{Values: v} }

// IsNumeric reports whether the label is numeric.
func (l Label) IsNumeric() bool { return l.Values != nil }

// Len is the number of rows.
func (l Label) Len() int {
	if l.IsNumeric() {
		return len(l.Values)
	}
	return len(l.Y)
}

// check validates the label against n rows: classes in 0..K−1 with K ≥ 2,
// or finite numbers.
func (l Label) check(n int) error {
	if l.Values != nil && l.Y != nil {
		return fmt.Errorf("dependence: a label is classes or numbers, not both")
	}
	if l.Len() != n {
		return fmt.Errorf("dependence: %d labels for columns of %d rows", l.Len(), n)
	}
	if l.IsNumeric() {
		for i, v := range l.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("dependence: numeric label of row %d is %v; labels must be finite", i, v)
			}
		}
		return nil
	}
	if l.K < 2 {
		return fmt.Errorf("dependence: a class label needs at least two classes, got %d", l.K)
	}
	for i, c := range l.Y {
		if c < 0 || int(c) >= l.K {
			return fmt.Errorf("dependence: label of row %d is class %d, want 0..%d", i, c, l.K-1)
		}
	}
	return nil
}

// pick returns the label at rows.
func (l Label) pick(rows []int) Label {
	if l.IsNumeric() {
		out := make([]float64, len(rows))
		for i, r := range rows {
			out[i] = l.Values[r]
		}
		return Label{Values: out}
	}
	return Label{Y: pickLabels(l.Y, rows), K: l.K}
}

// complete drops the rows with a NaN in x (complete cases) from x and the label.
func (l Label) complete(x [][]float64) ([][]float64, Label) {
	rows := completeRows(l.Len(), x)
	if rows == nil {
		return x, l
	}
	return pickCols(x, rows), l.pick(rows)
}
