//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package lake

import "os"

// TempLocks reports whether this platform's writers hold an advisory lock
// on their temporary files while they write them. Here they do not:
// CleanTemps cannot tell a stale temporary file from one being written, so
// it removes them only when told that the caller is the only writer.
const TempLocks = false

// lockTemp does nothing: there are no locks.
func lockTemp(*os.File) (bool, error) { return true, nil }

// removeStale removes the temporary file at p with all, and keeps it
// without.
func removeStale(p string, all bool) (bool, error) {
	if !all {
		return false, nil
	}
	return remove(p)
}
