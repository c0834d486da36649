package lakescore

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/lake"
)

// mapper is the lake writer loop that Run, RunWorker and Select share
// (ARCHITECTURE.md, Data flow (lakes)): scan a lake's files, transform
// each row group's rows on several goroutines, write the results in order
// into one output per input file (lake.OutputPath, a temporary name), and
// commit the file after its last row group or abandon it when it fails.
// Resuming (skipping inputs whose output is complete) is the caller's
// choice of files to scan.
type mapper struct {
	out     string
	threads int
	// chunk cuts a row group into transforms of at most that many rows,
	// each one row group of the output (0: a row group is transformed
	// whole).
	chunk int64
	// spec is the outputs' schema (nil: an output's schema is that of its
	// first record, and an empty input file is transformed too, to get it).
	spec  *arrow.Schema
	wopts files.WriteOptions
	// dry reads and counts rows; nothing is transformed or written.
	dry bool
	// apply transforms rows [r0, r1) of a batch into an output record
	// (nil: no rows to write, for an empty file). It runs on the loop's
	// goroutines concurrently.
	apply func(l *lake.Lake, b *lake.Batch, r0, r1 int64) (arrow.Record, error)
	// progress, when set, is called from the writer after each written
	// chunk (rows) and when a file is complete (last).
	progress func(rows int64, last bool)
}

type result struct {
	files int
	rows  int64
	peak  int64
	over  []lake.OverBudget
}

// chunkJob is a chunk of a batch on its way from its transform to the
// writer.
type chunkJob struct {
	b      *lake.Batch
	r0, r1 int64         // the chunk's rows in the batch
	final  bool          // the batch's last chunk: the writer releases the batch
	done   chan struct{} // closed when rec and err are set
	rec    arrow.Record  // nil for an error batch, an empty file or a dry run
	err    error         // the transform failed: the file is abandoned
}

// run scans files which of l and cuts every row group, as it is
// delivered, into chunks of at most m.chunk rows that m.threads
// goroutines transform concurrently (each chunk on one thread, so no core
// idles at the end of a chunk), while a writer goroutine writes them in
// order: reading (the lake's readers), transforming and writing overlap.
// Each chunk becomes one row group of its file's output, which is
// committed after the file's last chunk. At most 2·threads+1 chunks are in
// flight.
func (m *mapper) run(ctx context.Context, l *lake.Lake, which []int) (result, error) {
	var res result
	if len(which) == 0 {
		return res, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan *chunkJob, m.threads)
	ch := make(chan *chunkJob, m.threads)
	var wg sync.WaitGroup
	for range m.threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				c.rec, c.err = m.apply(l, c.b, c.r0, c.r1)
				if c.err != nil {
					c.err = fmt.Errorf("%s: %w", l.Files()[c.b.File].Path, c.err)
				}
				close(c.done)
			}
		}()
	}
	werr := make(chan error, 1)
	go func() { werr <- m.writeLoop(l, ch, &res, cancel) }()
	// queue hands a chunk to the transforms, then (in order) to the
	// writer, which releases the batch with its final chunk. A chunk the
	// writer never gets (the context ended) is abandoned: its record and
	// its batch are released once the transforms and the writer are done
	// with them (the batch's later chunks will never come).
	var abandoned []*chunkJob
	queue := func(c *chunkJob, transform bool) error {
		if !transform {
			close(c.done)
		} else {
			select {
			case jobs <- c:
			case <-ctx.Done():
				abandoned = append(abandoned, c)
				return ctx.Err()
			}
		}
		select {
		case ch <- c:
			return nil
		case <-ctx.Done():
			abandoned = append(abandoned, c)
			return ctx.Err()
		}
	}
	stats, err := l.Scan(ctx, which, func(b *lake.Batch) error {
		n := b.Rows()
		if b.Err != nil || m.dry || n == 0 {
			// an empty file is transformed only for its schema
			return queue(&chunkJob{b: b, final: true, done: make(chan struct{})}, b.Err == nil && !m.dry && m.spec == nil)
		}
		step := m.chunk
		if step <= 0 {
			step = n
		}
		for r0 := int64(0); r0 < n; r0 += step {
			r1 := min(n, r0+step)
			if err := queue(&chunkJob{b: b, r0: r0, r1: r1, final: r1 == n, done: make(chan struct{})}, true); err != nil {
				return err
			}
		}
		return nil
	})
	close(jobs)
	wg.Wait()
	close(ch)
	wErr := <-werr
	for _, c := range abandoned {
		if c.rec != nil {
			c.rec.Release()
		}
		c.b.Release()
	}
	res.peak, res.over = stats.PeakBytes, stats.OverBudget
	if wErr != nil {
		return res, wErr
	}
	return res, err
}

// writeLoop writes the transformed chunks in order: one output per file,
// committed after the file's last chunk and abandoned when the file fails
// (a read error, already recorded by the lake, or a transform error, which
// is recorded here, or ends the run under lake.Fail). A write error ends
// the run. A batch is released with its final chunk, never earlier: a
// transform may still be slicing it.
func (m *mapper) writeLoop(l *lake.Lake, ch <-chan *chunkJob, res *result, cancel func()) error {
	var (
		w       *lake.FileWriter
		wFile   = -1
		dropped = -1
		runErr  error
		pending int64 // rows written of the current file, counted once it is complete
	)
	abort := func() {
		pending = 0
		if w != nil {
			w.Abort()
			w, wFile = nil, -1
		}
	}
	defer abort()
	for c := range ch {
		<-c.done
		b := c.b
		release := func() {
			if c.rec != nil {
				c.rec.Release()
			}
			if c.final {
				b.Release()
			}
		}
		switch {
		case runErr != nil || b.File == dropped:
			release()
			continue
		case b.Err != nil:
			abort()
			dropped = b.File
			release()
			continue
		case c.err != nil:
			abort()
			dropped = b.File
			release()
			if l.OnError() == lake.Fail {
				runErr = c.err
				cancel()
				continue
			}
			l.AddSkipped(l.Files()[b.File].Path, c.err)
			continue
		}
		var rows int64
		if c.rec != nil {
			rows = c.rec.NumRows()
		} else if m.dry {
			rows = b.Rows()
		}
		if !m.dry {
			if err := m.write(l, &w, &wFile, b, c.rec); err != nil {
				runErr = err
				cancel()
				release()
				continue
			}
		}
		release()
		pending += rows
		last := c.final && b.Last
		if last {
			if !m.dry {
				if err := w.Commit(); err != nil {
					runErr = err
					cancel()
					continue
				}
				w, wFile = nil, -1
			}
			// a file's rows count once it is complete: rows of a file
			// abandoned midway (a corrupt row group) are in no output
			res.files++
			res.rows += pending
			pending = 0
		}
		if m.progress != nil {
			m.progress(rows, last)
		}
	}
	return runErr
}

// write appends rec to the output of b's file, creating it with the
// mapper's schema (or rec's) at the file's first chunk.
func (m *mapper) write(l *lake.Lake, w **lake.FileWriter, wFile *int, b *lake.Batch, rec arrow.Record) error {
	if *w == nil || *wFile != b.File {
		if *w != nil {
			(*w).Abort()
		}
		spec := m.spec
		if spec == nil && rec != nil {
			spec = rec.Schema()
		}
		if spec == nil {
			return fmt.Errorf("%s: no output schema", l.Files()[b.File].Path)
		}
		nw, err := lake.Create(lake.OutputPath(m.out, l.Files()[b.File].File), spec, m.wopts)
		if err != nil {
			return err
		}
		*w, *wFile = nw, b.File
	}
	if rec == nil { // an empty file: an output without rows
		return nil
	}
	return (*w).Write(rec)
}
