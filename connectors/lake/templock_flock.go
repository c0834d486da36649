//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package lake

import (
	"errors"
	"os"
	"syscall"
)

// TempLocks reports whether this platform's writers hold an advisory lock
// (flock(2)) on their temporary files while they write them, so that
// CleanTemps can tell the temporary file of a writer that is gone (killed,
// crashed, its machine restarted: the kernel released its lock) from one
// that is being written, by this process or any other.
const TempLocks = true

// lockTemp takes the writer's lock on a temporary file it has just
// created and checks that the file is still under its name. It returns
// false when a cleaner of another run got to the file first (it found it
// unlocked, took it for stale and removes it): the caller creates
// another. A file system without flock (ENOLCK, EOPNOTSUPP) leaves the
// file unlocked, as on a platform without locks; no cleaner can lock it
// either, so none removes it.
func lockTemp(fh *os.File) (bool, error) {
	if err := flock(fh, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil
		}
		return true, nil
	}
	return atName(fh), nil
}

// removeStale removes the temporary file at p if no process holds its
// lock: it opens the file, locks it without waiting, checks that the file
// it locked is still the one named p (not renamed into place meanwhile),
// removes it and then lets the lock go. It reports whether it removed it.
// A file it cannot open or lock for another reason than a held lock
// (another user's, a file system without locks) is left alone, or, with
// all, removed, as it was before writers locked their files.
func removeStale(p string, all bool) (bool, error) {
	fh, err := os.OpenFile(p, os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || !all { // committed or removed meanwhile
			return false, nil
		}
		return remove(p)
	}
	defer fh.Close()
	if err := flock(fh, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) || !all {
			return false, nil // held: its writer is alive
		}
		return remove(p)
	}
	if !atName(fh) {
		return false, nil
	}
	return remove(p)
}

// atName reports whether fh's file is the file its name now refers to.
func atName(fh *os.File) bool {
	a, err := fh.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(fh.Name())
	return err == nil && os.SameFile(a, b)
}

func flock(fh *os.File, how int) error {
	for {
		err := syscall.Flock(int(fh.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
