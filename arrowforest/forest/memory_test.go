package forest

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
)

// TestTrainMaxBytes (reliability issue, item 7): training refuses before
// any tree grows when the trees' bookkeeping alone exceeds the bound
// (--trees 100000000 used to grow to the machine's memory and be killed),
// stops after the first trees when the projected forest exceeds it, and
// changes nothing within it.
func TestTrainMaxBytes(t *testing.T) {
	fr := trunkFrame(500, 6, 1)
	p := DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 100_000_000, 2
	_, err := Train(fr, p, TrainOptions{MaxBytes: 1 << 30})
	if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "100000000 trees") || !strings.Contains(err.Error(), "before the first grows") {
		t.Fatalf("10^8 trees: %v", err)
	}
	// the bookkeeping fits, the projected nodes do not
	p.Trees = 200_000
	_, err = Train(fr, p, TrainOptions{MaxBytes: 256 << 20})
	if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "measured on") {
		t.Fatalf("2·10^5 trees in 256 MiB: %v", err)
	}
	// within the bound: the same forest as without one
	p.Trees = 20
	a, err := Train(fr, p, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Train(fr, p, TrainOptions{MaxBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Trees, b.Trees) {
		t.Fatal("a memory bound changed the trees")
	}
}
