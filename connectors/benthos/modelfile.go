package benthos

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/scoring"
)

// modelFile keeps the model of one file current: it polls the file and
// offers every model it can load to an operators.Current, which installs
// it only when it is newer (scoring.Model.Newer), so versions only move
// forward. A file that does not decode — half written in place, truncated,
// corrupt — fails model.DecodeBytes' checksum and is tried again at the next
// poll while the current model keeps scoring.
type modelFile struct {
	path    string
	cur     *operators.Current
	threads int
	// check, when set, refuses a model that loads but does not fit the
	// processor's settings (forestd_score: a result_field that names one of
	// its columns); a refused model is an error like a file that does not
	// decode, so the current model keeps scoring.
	check func(*scoring.Model) error
	// onEvent reports what a poll did: a swap (m installed), a model that
	// is not newer (m refused), or an error loading the file.
	onEvent func(m *scoring.Model, installed bool, err error)

	mu    sync.Mutex
	last  os.FileInfo // the file last loaded
	stop  chan struct{}
	done  chan struct{}
	close sync.Once
}

func newModelFile(path string, threads int, check func(*scoring.Model) error, onEvent func(*scoring.Model, bool, error)) *modelFile {
	cur := operators.NewCurrent()
	// the model file is the user's to replace: a model for other columns
	// takes over (the daemon refuses those from its model topic)
	cur.AllowColumnChange = true
	return &modelFile{path: path, cur: cur, threads: threads, check: check, onEvent: onEvent}
}

// poll loads the file if it changed since the last load (another inode,
// size or modification time) and offers the model. It reports whether it
// installed a model.
func (w *modelFile) poll() (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fi, err := os.Stat(w.path)
	if err != nil {
		return false, err
	}
	if w.last != nil && os.SameFile(w.last, fi) && fi.Size() == w.last.Size() && fi.ModTime().Equal(w.last.ModTime()) {
		return false, nil
	}
	m, err := scoring.Load(w.path, scoring.LoadOptions{NoBytes: true}) // the processors never publish it
	if err == nil && w.check != nil {
		err = w.check(m)
	}
	if err == nil {
		err = m.Prepare(w.threads) // a drf predictor's one-off work, off the scoring path
	}
	if err != nil {
		w.onEvent(nil, false, err)
		return false, err
	}
	w.last = fi
	installed := w.cur.Offer(m) == nil // refused: the live model or an older one
	w.onEvent(m, installed, nil)
	return installed, nil
}

// watch polls every interval until close.
func (w *modelFile) watch(every time.Duration) {
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				_, _ = w.poll() // errors are reported through onEvent
			}
		}
	}()
}

// stopWatching stops the polling; Benthos closes a processor once per
// pipeline thread, so it may be called more than once.
func (w *modelFile) stopWatching() {
	w.close.Do(func() {
		if w.stop != nil {
			close(w.stop)
			<-w.done
		}
	})
}

// writeFileAtomic writes data to path with forestd's one file writer
// (files.WriteAtomic: a temporary file in the same directory, synced and
// renamed over path), so a reader sees the old file or the new one, never
// part of it.
func writeFileAtomic(path string, data []byte) error {
	err := files.WriteAtomic(context.Background(), path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return fmt.Errorf("writing model %w", err)
	}
	return nil
}
