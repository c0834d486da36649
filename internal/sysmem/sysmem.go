// Package sysmem says how much memory this process may use: the memory
// the kernel reports available, or its cgroup's limit when lower. The
// command bounds training and whole-file scoring by it when no
// --max-memory is given (ARCHITECTURE.md, Command line).
package sysmem

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
)

// Available is what this process may use: MemAvailable of /proc/meminfo
// (which counts reclaimable caches), or the cgroup's limit (v2
// memory.max, v1 memory.limit_in_bytes) when lower; 0 when neither is
// known.
func Available() int64 {
	return available("/proc/meminfo", "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
}

func available(meminfo string, limits ...string) int64 {
	var avail int64
	if f, err := os.Open(meminfo); err == nil {
		avail = memAvailable(f)
		f.Close()
	}
	for _, p := range limits {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if lim, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && lim > 0 && (avail == 0 || lim < avail) {
			avail = lim
		}
	}
	return avail
}

// memAvailable reads MemAvailable (kB) from /proc/meminfo's text.
func memAvailable(r io.Reader) int64 {
	var avail int64
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			avail = kb << 10
		}
	}
	return avail
}
