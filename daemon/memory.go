package daemon

import (
	"fmt"
	"math"
	"runtime/debug"
	rtmetrics "runtime/metrics"
)

// memoryHighWater is the share of the Go runtime's memory limit at which a
// live heap makes the daemon not ready.
const memoryHighWater = 0.9

// memoryPressure is /readyz's memory check (ARCHITECTURE.md, The daemon's
// promises: bounded memory). It compares the heap the last collection
// found live (runtime/metrics /gc/heap/live:bytes) with the runtime's soft
// memory limit (pipeline.memory_limit, or GOMEMLIMIT). Total memory in use
// is no signal: under a limit the collector lets the heap grow to the
// limit by design, so a healthy daemon sits near it. A live heap near the
// limit is: the collector cannot get below it however often it runs (its
// CPU limiter caps it at half the CPU), the daemon slows and the next
// allocations may exceed the limit. Without a limit nothing is checked.
func memoryPressure() error {
	limit := debug.SetMemoryLimit(-1) // -1 reads the limit without changing it
	if limit <= 0 || limit == math.MaxInt64 {
		return nil
	}
	s := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 {
		return nil
	}
	return checkMemory(s[0].Value.Uint64(), limit)
}

func checkMemory(live uint64, limit int64) error {
	if float64(live) < memoryHighWater*float64(limit) {
		return nil
	}
	return fmt.Errorf("memory: live heap %d MiB is %.0f%% of the memory limit %d MiB (pipeline.memory_limit or GOMEMLIMIT)",
		live>>20, 100*float64(live)/float64(limit), limit>>20)
}
