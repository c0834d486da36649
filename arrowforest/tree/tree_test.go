package tree

import "testing"

func validStump() *Tree {
	return &Tree{
		Left: []int32{1, -1, -1}, Right: []int32{2, -1, -1},
		Threshold: []float32{0.5, 0, 0}, MissingLeft: []bool{true, false, false}, Count: []float32{4, 2, 2},
		AtomStart: []int32{0, 1, 1, 1}, AtomFeature: []int32{0}, AtomWeight: []float32{1},
		LeafStart: []int32{0, 0, 1, 2}, LeafClass: []int32{0, 1}, LeafValue: []float64{1, 1},
	}
}

// TestValidateRejects: every structural defect a corrupt model could carry
// is an error, never an out-of-range access.
func TestValidateRejects(t *testing.T) {
	if err := validStump().Validate(1, 2); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*Tree){
		"offsets up then down": func(t *Tree) { t.AtomStart = []int32{0, 100, 5, 1} },
		"leaf offsets down":    func(t *Tree) { t.LeafStart = []int32{0, 2, 1, 2} },
		"child before parent":  func(t *Tree) { t.Left[0] = 0 },
		"child out of range":   func(t *Tree) { t.Right[0] = 9 },
		"feature out of range": func(t *Tree) { t.AtomFeature[0] = 3 },
		"class out of range":   func(t *Tree) { t.LeafClass[1] = 2 },
		"short arrays":         func(t *Tree) { t.Count = t.Count[:2] },
		"leaf with atom": func(t *Tree) {
			t.AtomStart = []int32{0, 1, 2, 2}
			t.AtomFeature = []int32{0, 0}
			t.AtomWeight = []float32{1, 1}
		},
		"empty leaf":    func(t *Tree) { t.LeafStart = []int32{0, 0, 0, 2} },
		"same children": func(t *Tree) { t.Right[0] = 1 },
		"no nodes":      func(t *Tree) { *t = Tree{} },
	}
	for name, mod := range bad {
		tr := validStump()
		mod(tr)
		if err := tr.Validate(1, 2); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
