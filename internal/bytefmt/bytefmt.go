// Package bytefmt writes byte counts for error messages and help texts,
// and reads them from flags (--max-memory 2GiB); the forest trainer and
// the command share it.
package bytefmt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Format writes a byte count with a binary unit (KiB, MiB, GiB, TiB).
func Format(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	v, u := float64(b), 0
	for v >= unit && u < 4 {
		v /= unit
		u++
	}
	return fmt.Sprintf("%.1f %s", v, [...]string{"B", "KiB", "MiB", "GiB", "TiB"}[u])
}

// Parse reads a positive byte count written as 65536, 512MiB, 2GiB, 100MB
// or 1.5G (K/M/G/T and KiB/MiB/GiB/TiB are binary multiples, KB/MB/GB/TB
// decimal; case and spaces around it do not matter), below 2⁶² bytes.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRightFunc(t, func(r rune) bool { return r < '0' || r > '9' && r != '.' })
	unit := strings.ToLower(strings.TrimSpace(t[len(num):]))
	mult := map[string]float64{
		"": 1, "b": 1,
		"k": 1 << 10, "ki": 1 << 10, "kib": 1 << 10, "kb": 1e3,
		"m": 1 << 20, "mi": 1 << 20, "mib": 1 << 20, "mb": 1e6,
		"g": 1 << 30, "gi": 1 << 30, "gib": 1 << 30, "gb": 1e9,
		"t": 1 << 40, "ti": 1 << 40, "tib": 1 << 40, "tb": 1e12,
	}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v <= 0 || math.IsInf(v*mult, 0) || v*mult >= 1<<62 {
		return 0, fmt.Errorf("%q: want a positive size like 512MiB, 2GiB or 100000000", s)
	}
	return int64(v * mult), nil
}
