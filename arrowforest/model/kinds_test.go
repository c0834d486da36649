package model

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

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

// TestBudgetReserve checks budgetAllocator's one refusal: negative sizes
// and growth beyond 16× the bytes read plus 1 MiB, by Allocate or by
// Reallocate, while shrinking is always allowed.
func TestBudgetReserve(t *testing.T) {
	read := int64(1000)
	a := &budgetAllocator{mem: memory.NewGoAllocator(), read: &read, out: map[*byte]int{}}
	defer a.freeAll()
	refused := func(f func()) (r bool) {
		defer func() { r = recover() == errBudget }()
		f()
		return false
	}
	limit := 16*int(read) + 1<<20
	b := a.Allocate(limit - 10)
	if refused(func() { b = a.Reallocate(limit, b) }) {
		t.Fatal("growth to the limit refused")
	}
	if !refused(func() { a.Allocate(1) }) {
		t.Error("allocation beyond the limit not refused")
	}
	if !refused(func() { a.Reallocate(limit+1, b) }) {
		t.Error("reallocation beyond the limit not refused")
	}
	if !refused(func() { a.Allocate(-1) }) || !refused(func() { a.Reallocate(-1, b) }) {
		t.Error("negative size not refused")
	}
	if refused(func() { b = a.Reallocate(10, b) }) {
		t.Error("shrinking refused")
	}
}
