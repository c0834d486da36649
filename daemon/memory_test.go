package daemon

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestCheckMemory(t *testing.T) {
	if err := checkMemory(800<<20, 1<<30); err != nil {
		t.Errorf("78%% of the limit: %v", err)
	}
	err := checkMemory(950<<20, 1<<30)
	if err == nil || !strings.Contains(err.Error(), "live heap 950 MiB is 93% of the memory limit 1024 MiB") {
		t.Errorf("93%% of the limit: %v", err)
	}
}

// TestMemoryPressure: with a limit below the live heap, the check fails;
// without a limit it passes. (The limit is process-wide: restored at the
// end, and the test does not run in parallel.)
func TestMemoryPressure(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	keep := make([]byte, 32<<20)
	for i := range keep {
		keep[i] = byte(i)
	}
	runtime.GC()
	debug.SetMemoryLimit(16 << 20)
	if err := memoryPressure(); err == nil {
		t.Error("live heap above the limit reported ready")
	}
	debug.SetMemoryLimit(1 << 40)
	if err := memoryPressure(); err != nil {
		t.Errorf("a 1 TiB limit: %v", err)
	}
	runtime.KeepAlive(keep)
}
