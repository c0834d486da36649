// Package bytefmt writes byte counts for error messages and help texts; the
// forest trainer and the command share it.
package bytefmt

import "fmt"

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
