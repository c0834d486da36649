package lake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/files"
)

// Batch is one decoded row group of one file, delivered by Scan.
type Batch struct {
	// File indexes Lake.Files().
	File int
	// RowGroup is the row group in the file (-1 for the one empty batch
	// of a file without row groups).
	RowGroup int
	// FirstRow is the row of the file the batch starts at.
	FirstRow int64
	// Record holds the projected columns (Lake.Schema's names; a column
	// validated by Options.Check has this file's type). Nil when Err is
	// set. Release the batch, not the record.
	Record arrow.Record
	// Last marks the file's last batch: after it the file is complete.
	Last bool
	// Err, when set, says the file failed at this row group: no further
	// batches of the file follow. Under Skip the file has been added to
	// Skipped; under Fail Scan returns the error after this batch.
	Err error

	cost    int64
	budget  *budget
	release atomic.Bool
}

// Rows returns the rows of the batch (0 for an error batch).
func (b *Batch) Rows() int64 {
	if b.Record == nil {
		return 0
	}
	return b.Record.NumRows()
}

// Release releases the record and returns the batch's memory to the
// budget. It may be called from any goroutine, more than once.
func (b *Batch) Release() {
	if b == nil || b.release.Swap(true) {
		return
	}
	if b.Record != nil {
		b.Record.Release()
	}
	if b.budget != nil {
		b.budget.put(b.cost)
	}
}

// budget is a byte budget acquired in task order by one dispatcher and
// returned from any goroutine. A request larger than the whole budget is
// granted when nothing else is held.
type budget struct {
	mu   sync.Mutex
	cond *sync.Cond
	max  int64
	used int64
	peak int64
	done bool
}

func newBudget(max int64) *budget {
	b := &budget{max: max}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// get waits until n bytes fit (or nothing is held) and takes them; it
// returns false if the budget was closed while waiting.
func (b *budget) get(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for !b.done && b.used > 0 && b.used+n > b.max {
		b.cond.Wait()
	}
	if b.done {
		return false
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	return true
}

func (b *budget) put(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

func (b *budget) close() {
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
	b.cond.Broadcast()
}

// ScanStats reports on a finished scan.
type ScanStats struct {
	// PeakBytes is the largest budget in use at once (decoded row groups
	// plus RowBytes per row, as estimated).
	PeakBytes int64
	// OverBudget lists the row groups whose estimate alone exceeds
	// Options.MaxMemory: each was decoded alone, and the scan's memory
	// went past the budget by its excess.
	OverBudget []OverBudget
}

// OverBudget is a row group larger than the memory budget.
type OverBudget struct {
	File     string `json:"file"`
	RowGroup int    `json:"row_group"`
	// Bytes is the row group's estimate (see Options.MaxMemory).
	Bytes int64 `json:"bytes"`
}

type task struct {
	seq      int
	file     int // index into l.files
	rg       int
	firstRow int64
	last     bool
	cost     int64
}

type result struct {
	task
	rec arrow.Record
	err error
}

// openFile is a file shared by the tasks reading its row groups.
type openFile struct {
	once    sync.Once
	pf      *files.ParquetFile
	fh      *os.File
	err     error
	pending atomic.Int64
}

// Scan decodes the row groups of the files which (indices into Files; nil
// means every file) and calls fn with one Batch per row group, in file
// order and row-group order, from the calling goroutine. Row groups are
// decoded ahead by Options.Readers goroutines, several files and row
// groups at once, as far as the memory budget allows: a batch's bytes are
// held until it is released, so fn (or whoever it hands batches to) must
// Release every batch. A file without row groups yields one empty batch.
//
// A file that fails while decoding yields a batch with Err set and no more
// batches; under Skip it is recorded in Skipped and the scan goes on,
// under Fail Scan returns the error. An error from fn, or ctx ending,
// stops the scan and is returned; batches not yet delivered are released.
func (l *Lake) Scan(ctx context.Context, which []int, fn func(*Batch) error) (ScanStats, error) {
	if which == nil {
		which = make([]int, len(l.files))
		for i := range which {
			which[i] = i
		}
	}
	var tasks []task
	var over []OverBudget
	handles := make(map[int]*openFile, len(which))
	cols := l.fileColumns()
	for _, fi := range which {
		if fi < 0 || fi >= len(l.files) {
			return ScanStats{}, fmt.Errorf("lake: no file %d", fi)
		}
		if _, dup := handles[fi]; dup {
			return ScanStats{}, fmt.Errorf("lake: file %d scanned twice", fi)
		}
		f := l.files[fi]
		h := &openFile{}
		handles[fi] = h
		if len(f.RowGroups) == 0 {
			tasks = append(tasks, task{seq: len(tasks), file: fi, rg: -1, last: true})
			h.pending.Add(1)
			continue
		}
		var row int64
		for g, n := range f.RowGroups {
			cost := l.estimate(f, g)
			if cost > l.opts.MaxMemory {
				over = append(over, OverBudget{File: f.Path, RowGroup: g, Bytes: cost})
			}
			tasks = append(tasks, task{seq: len(tasks), file: fi, rg: g, firstRow: row, last: g == len(f.RowGroups)-1,
				cost: cost})
			row += n
		}
		h.pending.Add(int64(len(f.RowGroups)))
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	bud := newBudget(l.opts.MaxMemory)
	stop := context.AfterFunc(ctx, bud.close)
	defer stop()

	work := make(chan task, l.opts.Readers)
	results := make(chan result, l.opts.Readers)
	var wg sync.WaitGroup
	// Dispatcher: take budget in task order, so the next batch to deliver
	// never waits behind later ones.
	go func() {
		defer close(work)
		for _, t := range tasks {
			if !bud.get(t.cost) {
				return
			}
			select {
			case work <- t:
			case <-ctx.Done():
				bud.put(t.cost)
				return
			}
		}
	}()
	for range l.opts.Readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				rec, err := l.decode(handles[t.file], t, cols)
				select {
				case results <- result{task: t, rec: rec, err: err}:
				case <-ctx.Done():
					if rec != nil {
						rec.Release()
					}
					bud.put(t.cost)
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(results)
	}()

	pending := map[int]result{}
	failed := map[int]bool{}
	next := 0
	var runErr error
	drop := func(r result) {
		if r.rec != nil {
			r.rec.Release()
		}
		bud.put(r.cost)
	}
	for r := range results {
		if runErr != nil {
			drop(r)
			continue
		}
		pending[r.seq] = r
		for {
			r, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if failed[r.file] {
				drop(r)
				continue
			}
			b := &Batch{File: r.file, RowGroup: r.rg, FirstRow: r.firstRow, Record: r.rec, Last: r.last,
				cost: r.cost, budget: bud}
			if r.err != nil {
				failed[r.file] = true
				b.Err = r.err
				if b.Record != nil {
					b.Record.Release()
					b.Record = nil
				}
				if l.opts.OnError == Skip {
					l.skip(l.files[r.file].Path, r.err)
				} else {
					runErr = &FileError{File: l.files[r.file].Path, Err: r.err}
				}
			}
			if err := fn(b); err != nil && runErr == nil {
				runErr = err
			}
			if runErr != nil {
				cancel()
				bud.close()
				break
			}
		}
	}
	for _, r := range pending {
		drop(r)
	}
	if runErr == nil && next < len(tasks) {
		runErr = ctx.Err()
		if runErr == nil {
			runErr = errors.New("lake: scan ended early")
		}
	}
	for _, h := range handles {
		if h.fh != nil && h.pending.Load() > 0 {
			h.fh.Close()
		}
	}
	bud.mu.Lock()
	stats := ScanStats{PeakBytes: bud.peak, OverBudget: over}
	bud.mu.Unlock()
	return stats, runErr
}

// fileColumns returns the projected columns read from the files.
func (l *Lake) fileColumns() []string {
	var out []string
	for k, c := range l.cols {
		if l.part[k] < 0 {
			out = append(out, c)
		}
	}
	return out
}

// estimate is the budget of row group g of f: the footer-based estimate
// of its decoded file columns (made at Open), the partition columns and
// the consumer's RowBytes per row.
func (l *Lake) estimate(f Planned, g int) int64 {
	n := f.RowGroups[g]
	b := f.bytes[g]
	for _, p := range l.part {
		if p >= 0 {
			b += 4*(n+1) + n*int64(len(f.Partitions[p].Value)) + n/8
		}
	}
	return b + n*l.opts.RowBytes
}

// decode reads one task's row group and adds the partition columns.
func (l *Lake) decode(h *openFile, t task, cols []string) (arrow.Record, error) {
	f := l.files[t.file]
	defer func() {
		if h.pending.Add(-1) == 0 && h.fh != nil {
			h.fh.Close()
		}
	}()
	h.once.Do(func() {
		h.pf, h.fh, h.err = openParquet(f.Path)
		if h.err == nil && !sameRowGroups(h.pf, f.RowGroups) {
			h.err = fmt.Errorf("%s: the file changed since the lake was opened (row groups differ)", f.Path)
		}
	})
	if h.err != nil {
		return nil, h.err
	}
	var (
		frec arrow.Record
		err  error
	)
	if t.rg < 0 {
		frec, err = l.emptyRecord(h.pf, cols)
	} else {
		frec, err = h.pf.ReadRowGroup(t.rg, cols, l.opts.Mem)
	}
	if err != nil {
		return nil, err
	}
	defer frec.Release()
	return l.assemble(f, frec), nil
}

func sameRowGroups(pf *files.ParquetFile, rows []int64) bool {
	if pf.NumRowGroups() != len(rows) {
		return false
	}
	for g, n := range rows {
		if pf.RowGroupRows(g) != n {
			return false
		}
	}
	return true
}

// emptyRecord builds a 0-row record of the file's projected columns.
func (l *Lake) emptyRecord(pf *files.ParquetFile, cols []string) (arrow.Record, error) {
	arrs := make([]arrow.Array, len(cols))
	fields := make([]arrow.Field, len(cols))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for k, c := range cols {
		dt, err := pf.ColumnType(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pf.Name(), err)
		}
		fields[k] = arrow.Field{Name: c, Type: dt, Nullable: true}
		arrs[k] = array.MakeArrayOfNull(l.opts.Mem, dt, 0)
	}
	return array.NewRecord(arrow.NewSchema(fields, nil), arrs, 0), nil
}

// assemble puts the file columns and the partition columns in projection
// order, every field nullable.
func (l *Lake) assemble(f Planned, frec arrow.Record) arrow.Record {
	n := frec.NumRows()
	fields := make([]arrow.Field, len(l.cols))
	arrs := make([]arrow.Array, len(l.cols))
	var owned []arrow.Array
	defer func() {
		for _, a := range owned {
			a.Release()
		}
	}()
	j := 0
	for k, c := range l.cols {
		if p := l.part[k]; p >= 0 {
			a := constString(l.opts.Mem, f.Partitions[p], int(n))
			owned = append(owned, a)
			arrs[k] = a
			fields[k] = arrow.Field{Name: c, Type: arrow.BinaryTypes.String, Nullable: true}
			continue
		}
		arrs[k] = frec.Column(j)
		fields[k] = arrow.Field{Name: c, Type: frec.Schema().Field(j).Type, Nullable: true}
		j++
	}
	return array.NewRecord(arrow.NewSchema(fields, nil), arrs, n)
}

// constString returns n copies of a partition value (or n nulls).
func constString(mem memory.Allocator, p Partition, n int) arrow.Array {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	if p.Null {
		b.AppendNulls(n)
		return b.NewArray()
	}
	b.Reserve(n)
	b.ReserveData(n * len(p.Value))
	for i := 0; i < n; i++ {
		b.Append(p.Value)
	}
	return b.NewArray()
}
