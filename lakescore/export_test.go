package lakescore

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/internal/bufpool"
	"github.com/forestd/forestd/scoring"
)

// DataFault exposes dataFault to the external tests.
var DataFault = dataFault

// Plan is what a run of m with opts sizes before reading: the rows per
// chunk, the memory it sets aside for scoring (chunks in flight and the
// scorers' blocks, the output writer's compressor) and the budget left
// to row groups in flight.
func Plan(m *scoring.Model, opts Options) (chunk, work, rowGroups int64, err error) {
	s, err := newScorer(m, "", opts)
	if err != nil {
		return 0, 0, 0, err
	}
	return s.chunk, s.work, s.lopts.MaxMemory, nil
}

// ScoreFilePool is ScoreFile of the one file in with a pool of its own,
// whose counts it returns: the bytes of buffers handed out, of those made
// rather than reused, and of those still out after the run; and the Score
// calls the run made.
func ScoreFilePool(m *scoring.Model, in, out string, opts scoring.Options, check func(*arrow.Schema) (*arrow.Schema, error)) (asked, made, live int64, calls int, err error) {
	p := bufpool.New(runPoolMax, true)
	fp, handled, err := scoreFile(context.Background(), func() (*scoring.Model, error) { return m, nil }, in, out, 0, opts, check, p)
	if !handled {
		return 0, 0, 0, 0, errors.New("not handled")
	}
	st := p.Stats()
	return st.Asked, st.Made, st.Live, fp.calls, err
}

// ScoreFileOverlap is ScoreFile of the one file in whose load returns m
// only once the run has taken buffers for its first row group (polled for
// up to 10 s), and says whether it had: the file was being read while the
// model loaded.
func ScoreFileOverlap(m *scoring.Model, in, out string, opts scoring.Options, check func(*arrow.Schema) (*arrow.Schema, error)) (overlapped bool, err error) {
	p := bufpool.New(runPoolMax, true)
	load := func() (*scoring.Model, error) {
		for end := time.Now().Add(10 * time.Second); p.Stats().Asked == 0 && time.Now().Before(end); {
			runtime.Gosched()
		}
		overlapped = p.Stats().Asked > 0
		return m, nil
	}
	_, _, err = scoreFile(context.Background(), load, in, out, 0, opts, check, p)
	return overlapped, err
}
