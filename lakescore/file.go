package lakescore

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/internal/bufpool"
	"github.com/forestd/forestd/scoring"
)

// ScoreFile scores one Parquet file into one Parquet file, out, a row
// group at a time, with reading, scoring and writing overlapped
// (ARCHITECTURE.md, Data flow (batch commands)): a goroutine decodes row
// group g+1 while opts.Threads score row group g and another writes the
// predictions of g−1, so that no stage waits for the whole file and no
// core idles while one stage runs alone. Memory holds a few row groups,
// whose buffers are reused from one row group to the next (internal/bufpool;
// opts.Mem is not used), not the file. A Score call takes a row group,
// or small ones together up to 65,536 rows (callRows), rows numbered from
// opts.FirstRow across the file, and each row group's prediction record
// goes to the writer as after a whole read (one record per row group;
// the writer cuts its row groups every 131,072 rows), so out is byte for
// byte the file that reading the input whole, one Score call and
// files.WriteFile give (TestScoreFileSameBytes).
//
// check is given the input's schema (every column, as files.ReadFile
// reads it) before anything is scored and returns the predictions' schema
// or an error, which ScoreFile returns as it is; so are errors reading the
// input (they name it), and an error of Score is returned after the input
// path. out is written as files.WriteAtomic writes: whole or not at all,
// so an error or ctx ending leaves no file.
//
// load gives the model (and an error of its own, returned as it is); it
// is called while the first row group is decoded, so that a model's load
// and the file's first read overlap, and not at all when in is not one
// Parquet file with a row group or out is not named .parquet. Then, or
// when the model predicts several outputs (a predictor that reads every
// row of a Score call at once), handled is false, nothing is written, and
// the caller reads the input whole instead. load and check run on the
// caller's goroutine.
//
// maxBytes, when positive, is the memory the run may hold. A file whose
// largest row group, decoded, would exceed it inFlight times over is not
// handled either, so that the caller's whole read refuses it (that read
// holds at least as much) or, for a file of a few small row groups, fits.
func ScoreFile(ctx context.Context, load func() (*scoring.Model, error), in []string, out string, maxBytes int64, opts scoring.Options,
	check func(*arrow.Schema) (*arrow.Schema, error)) (rows int64, secs float64, handled bool, err error) {
	if len(in) != 1 || !strings.HasSuffix(strings.ToLower(out), ".parquet") {
		return 0, 0, false, nil
	}
	p, handled, err := scoreFile(ctx, load, in[0], out, maxBytes, opts, check, bufpool.New(runPoolMax, true))
	if p == nil {
		return 0, 0, handled, err
	}
	return p.rows, p.secs, handled, err
}

// scoreFile is ScoreFile of the one file in, with its buffers from pool;
// p is the run (nil: none).
func scoreFile(ctx context.Context, load func() (*scoring.Model, error), in, out string, maxBytes int64, opts scoring.Options,
	check func(*arrow.Schema) (*arrow.Schema, error), pool *bufpool.Pool) (p *filePipe, handled bool, err error) {
	fh, err := os.Open(in)
	if err != nil {
		return nil, false, nil
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, false, nil
	}
	if ft, err := files.DetectFormat(in); err != nil || ft != files.FormatParquet {
		return nil, false, nil // the whole read reports an error
	}
	pf, err := files.OpenParquet(in, fh, st.Size())
	if err != nil || pf.NumRowGroups() == 0 {
		return nil, false, nil
	}
	if maxBytes > 0 {
		cols := pf.ColumnNames()
		for g := range pf.NumRowGroups() {
			if inFlight*pf.RowGroupBytes(g, cols) > maxBytes {
				return nil, false, nil
			}
		}
	}
	opts.Mem = pool
	p = &filePipe{pf: pf, opts: opts}
	handled, err = p.run(ctx, load, out, check)
	return p, handled, err
}

// filePipe is one ScoreFile run.
type filePipe struct {
	pf    *files.ParquetFile
	m     *scoring.Model  // load's
	opts  scoring.Options // Mem: the run's bufpool.Pool
	rows  int64           // scored
	secs  float64         // in Score
	calls int             // of Score
}

// piece is a record on its way from one stage to the next, or the error
// that ends the run.
type piece struct {
	rec arrow.Record
	err error
}

// run loads the model while the first row group is read, then reads,
// scores and writes on three goroutines joined by unbuffered channels: at
// most one row group waits at each hand-over, so the run holds about a
// call's row groups and one more, and their prediction records. handled
// is false when the model predicts several outputs.
func (p *filePipe) run(ctx context.Context, load func() (*scoring.Model, error), out string, check func(*arrow.Schema) (*arrow.Schema, error)) (handled bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{}) // the reader and the scorer have returned
	// send hands x on, or releases it when the run has ended.
	send := func(ch chan<- piece, x piece) bool {
		select {
		case ch <- x:
			return true
		case <-ctx.Done():
			if x.rec != nil {
				x.rec.Release()
			}
			return false
		}
	}
	drain := func(ch <-chan piece) {
		for x := range ch {
			if x.rec != nil {
				x.rec.Release()
			}
		}
	}
	read := make(chan piece)
	go func() {
		defer close(read)
		for g := range p.pf.NumRowGroups() {
			rec, err := p.pf.ReadRowGroup(g, nil, p.opts.Mem)
			if !send(read, piece{rec, err}) || err != nil {
				return
			}
		}
	}()
	if p.m, err = load(); err != nil || p.m.Targets() != nil {
		cancel()
		drain(read)
		return err != nil, err
	}
	first, ok := <-read
	if !ok { // ctx ended before the first row group
		return true, fmt.Errorf("%s: not written: %w", out, context.Cause(ctx))
	}
	var outSchema *arrow.Schema
	if first.err == nil {
		outSchema, first.err = check(first.rec.Schema())
	}
	if first.err != nil {
		if first.rec != nil {
			first.rec.Release()
		}
		cancel()
		drain(read)
		return true, first.err
	}
	scored := make(chan piece)
	var failed error // the reader's or Score's, returned as it is
	go func() {
		defer close(done)
		defer close(scored)
		defer drain(read)                // after an error or the end of the run
		pending, closed := &first, false // a piece received and not yet taken
		for !closed {
			// a call's row groups: until they hold callRows rows or the
			// input ends (a read error ends the run)
			var call []arrow.Record
			for n := int64(0); n < callRows; {
				if pending == nil {
					x, ok := <-read
					if !ok {
						closed = true
						break
					}
					pending = &x
				}
				if pending.err != nil {
					failed = pending.err
					cancel()
					releaseAll(call)
					return
				}
				call, n = append(call, pending.rec), n+pending.rec.NumRows()
				pending = nil
			}
			preds, err := p.score(call)
			if err != nil {
				failed = err
				cancel()
				return
			}
			for i, r := range preds {
				if !send(scored, piece{rec: r}) { // which released r
					releaseAll(preds[i+1:])
					return
				}
			}
		}
	}()
	err = files.WriteAtomic(ctx, out, func(w io.Writer) error {
		pw, err := files.NewParquetWriter(w, outSchema, files.WriteOptions{})
		if err != nil {
			return err
		}
		for x := range scored {
			err := pw.Write(x.rec)
			x.rec.Release()
			if err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err // the scorer failed, or the caller's ctx ended
		}
		return pw.Close()
	})
	cancel()
	drain(scored)
	<-done
	if failed != nil {
		return true, failed
	}
	return true, err
}

// callRows is the fewest rows of a Score call, as scoring joins records
// into passes of the forest (its segmentRows): a file of small row groups
// is scored several row groups a call, so that every thread has blocks of
// rows to walk.
const callRows = 1 << 16

// inFlight bounds, in decoded row groups, what a run holds at once: one
// read ahead, one scored with its feature frame, and the predictions of
// one being written, each at most a row group's size.
const inFlight = 4

// runPoolMax is the largest buffer a run's pool keeps: a 131,072-row
// column of float64 is 1 MiB, so 64 MiB holds any column of a row group
// a Parquet writer cuts at the default sizes.
const runPoolMax = 64 << 20

// score scores recs (none: nothing), which it releases, into their
// prediction records.
func (p *filePipe) score(recs []arrow.Record) ([]arrow.Record, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	defer releaseAll(recs)
	o := p.opts
	o.FirstRow += p.rows
	t0 := time.Now()
	preds, err := p.m.Score(recs, o)
	p.secs += time.Since(t0).Seconds()
	p.calls++
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.pf.Name(), err)
	}
	for _, r := range recs {
		p.rows += r.NumRows()
	}
	return preds, nil
}

// releaseAll releases every record of recs.
func releaseAll(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}
