package model

import "testing"

// TestColumnKinds checks the invariant kind.elem relies on: every node
// column's kind is one of the four element kinds, alone or as a list.
func TestColumnKinds(t *testing.T) {
	known := map[kind]bool{kInt32: true, kFloat32: true, kFloat64: true, kBool: true}
	for _, c := range nodeColumns {
		if !known[c.kind&^listFlag] || c.kind&^(listFlag|0x0f) != 0 {
			t.Errorf("column %s: unknown kind %#x", c.name, uint8(c.kind))
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("elem of an unknown kind did not panic")
		}
	}()
	kind(0x07).elem()
}
