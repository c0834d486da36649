package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/connectors/files"
)

// machineMemory is what this process may use: the memory the kernel
// reports available (MemAvailable, which counts reclaimable caches), or
// the cgroup's limit when lower; 0 when neither is known.
func machineMemory() int64 {
	var avail int64
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				avail = kb << 10
			}
		}
		f.Close()
	}
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
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

// memoryBound is the bound a command's work must fit: --max-memory when
// given, else the machine's available memory (0: unknown, no bound).
func memoryBound(flagSet bool, flagValue int64) (bound int64, what string) {
	if flagSet {
		return flagValue, "--max-memory"
	}
	return machineMemory(), "this machine's available memory; --max-memory sets another bound"
}

// memoryErr turns a forest.ErrMemory error into one line naming the flags
// that size the work and the bound.
func memoryErr(err error, trees int, bound string) error {
	if !errors.Is(err, forest.ErrMemory) {
		return err
	}
	msg := strings.TrimPrefix(err.Error(), forest.ErrMemory.Error()+": ")
	return fmt.Errorf("--trees %d: %s, the bound being %s: train fewer or smaller trees (--trees, --max-depth, --min-leaf) or on fewer rows", trees, msg, bound)
}

// scoreBytes estimates what `forestd score` into one file holds at once
// for the given inputs: their decoded columns (Parquet: the uncompressed
// size its footer gives; Arrow IPC: the file; CSV: twice the text, eight
// times a gzip), then about as much again for the feature frame and the
// prediction records.
func scoreBytes(paths []string) int64 {
	list, err := files.ListFiles(paths)
	if err != nil {
		return 0 // the read reports it
	}
	var in int64
	for _, p := range list {
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		low := strings.ToLower(p)
		switch {
		case strings.HasSuffix(low, ".parquet") || strings.HasSuffix(low, ".pq"):
			fh, err := os.Open(p)
			if err != nil {
				continue
			}
			if pf, err := files.OpenParquet(p, fh, st.Size()); err == nil {
				cols := pf.ColumnNames()
				for g := 0; g < pf.NumRowGroups(); g++ {
					in += pf.RowGroupBytes(g, cols)
				}
			} else {
				in += st.Size()
			}
			fh.Close()
		case strings.HasSuffix(low, ".csv.gz"):
			in += 8 * st.Size()
		case strings.HasSuffix(low, ".csv"):
			in += 2 * st.Size()
		default:
			in += st.Size()
		}
	}
	return 2 * in
}
