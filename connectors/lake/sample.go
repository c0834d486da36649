package lake

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// SampleMode chooses how Sample draws rows.
type SampleMode int

const (
	// Reservoir draws a uniform random sample of the rows.
	Reservoir SampleMode = iota
	// Stratified draws from each label value (stratum) in proportion to
	// its share of the rows.
	Stratified
)

// ParseSampleMode parses "reservoir" or "stratified".
func ParseSampleMode(s string) (SampleMode, error) {
	switch s {
	case "reservoir":
		return Reservoir, nil
	case "stratified":
		return Stratified, nil
	}
	return Reservoir, fmt.Errorf("sample mode %q: want reservoir or stratified", s)
}

func (m SampleMode) String() string {
	if m == Stratified {
		return "stratified"
	}
	return "reservoir"
}

// SampleOptions configures Sample.
type SampleOptions struct {
	// N is the number of rows to draw (at most the rows available).
	N int
	// Mode is Reservoir or Stratified.
	Mode SampleMode
	// Seed fixes the draw: the same lake, options and seed give the same
	// rows at any number of readers.
	Seed uint64
	// Label names a projected column: rows where it is null (or NaN) are
	// never drawn, and its values are the strata. Required for
	// Stratified; optional for Reservoir.
	Label string
}

// Stratum reports one label value's rows.
type Stratum struct {
	Label      string `json:"label"`
	Population int64  `json:"population"`
	Sampled    int    `json:"sampled"`
}

// SampleReport says what Sample drew from.
type SampleReport struct {
	Mode       string    `json:"mode"`
	Seed       uint64    `json:"seed"`
	Requested  int       `json:"requested"`
	Rows       int       `json:"rows"`        // rows drawn
	Population int64     `json:"population"`  // rows eligible to be drawn
	NullLabels int64     `json:"null_labels"` // rows never drawn: null or NaN label
	Files      int       `json:"files"`       // files read to the end
	Skipped    []Skipped `json:"skipped"`
	Strata     []Stratum `json:"strata,omitempty"`
}

// Sample draws opts.N rows from the lake's usable files while holding at
// most about 4·N rows (those drawn so far, the candidates of the file being
// read, and rows not yet compacted away) plus the batches in flight, and
// returns them as
// records of the projected columns, in lake order (file, then row), with
// a report of what it drew from. The caller releases the records.
//
// Reservoir sampling is done as priority sampling with equal weights
// (Efraimidis & Spirakis, "Weighted random sampling with a reservoir",
// Inf. Proc. Letters 97(5), 2006, with all weights 1; equivalent to
// Vitter's Algorithm R, ACM TOMS 11(1), 1985): every row gets a
// pseudo-random 64-bit key from (seed, the file's path below its root, the
// row's index in the file), and the N rows with the smallest keys are
// kept; the keys are i.i.d. uniform, so every N-subset is equally likely.
// Because a row's key does not depend on when it is read, the sample does
// not depend on the order in which concurrent readers finish.
//
// Stratified sampling first counts each label value's rows n_h (a scan of
// the label column alone) and allocates the quotas by Hamilton's
// largest-remainder method: stratum h gets ⌊N·n_h/n⌋, raised to one row
// when N is at least the number of strata (so no class is left out), and
// the total is then corrected to N from the largest remainders (ties by
// label); each stratum then keeps its quota of smallest keys as above.
//
// Files that fail while being read are skipped or fail the run as for
// Scan; a file's rows join the sample only once it has been read to the
// end, so the sample equals that of the lake without the failed file.
func (l *Lake) Sample(ctx context.Context, opts SampleOptions) (*arrow.Schema, []arrow.Record, SampleReport, error) {
	rep := SampleReport{Mode: opts.Mode.String(), Seed: opts.Seed, Requested: opts.N}
	if opts.N < 1 {
		return nil, nil, rep, fmt.Errorf("lake: sample size %d must be positive", opts.N)
	}
	labelCol := -1
	if opts.Label != "" {
		labelCol = slices.Index(l.cols, opts.Label)
		if labelCol < 0 {
			return nil, nil, rep, fmt.Errorf("lake: sample label %s is not a projected column", opts.Label)
		}
	}
	if opts.Mode == Stratified && labelCol < 0 {
		return nil, nil, rep, errors.New("lake: stratified sampling needs a label column")
	}
	if opts.Mode == Stratified {
		if dt := l.schema.Field(labelCol).Type; arrow.IsFloating(dt.ID()) {
			return nil, nil, rep, fmt.Errorf("lake: stratified sampling needs a categorical label; %s is %s", opts.Label, dt)
		}
	}

	s := &sampler{l: l, labelCol: labelCol, seed: opts.Seed, strata: map[string]int{}}
	if opts.Mode == Stratified {
		counts, err := l.countLabels(ctx, opts.Label)
		if err != nil {
			return nil, nil, rep, err
		}
		s.setQuotas(counts, opts.N)
	} else {
		s.quota = []int{opts.N}
	}
	s.heaps = make([]keyHeap, len(s.quota))
	s.cur = make([]keyHeap, len(s.quota))
	_, err := l.Scan(ctx, nil, func(b *Batch) error {
		defer b.Release()
		if b.Err != nil {
			s.dropFile()
			return nil
		}
		if b.Last {
			rep.Files++
		}
		return s.add(b)
	})
	if err != nil {
		s.release()
		return nil, nil, rep, err
	}
	recs, err := s.finish()
	if err != nil {
		return nil, nil, rep, err
	}
	for _, r := range recs {
		rep.Rows += int(r.NumRows())
	}
	rep.Population, rep.NullLabels = s.population, s.nullLabels
	if opts.Mode == Stratified {
		for h, name := range s.names {
			rep.Strata = append(rep.Strata, Stratum{Label: name, Population: s.counts[h], Sampled: s.sampled[h]})
		}
	}
	rep.Skipped = l.Skipped()
	if rep.Skipped == nil {
		rep.Skipped = []Skipped{}
	}
	return l.schema, recs, rep, nil
}

// countLabels counts the rows of every label value (one scan of the label
// column alone).
func (l *Lake) countLabels(ctx context.Context, label string) (map[string]int64, error) {
	ll := l.reproject([]string{label})
	counts := map[string]int64{}
	_, err := ll.Scan(ctx, nil, func(b *Batch) error {
		defer b.Release()
		if b.Err != nil {
			return nil
		}
		col := b.Record.Column(0)
		for i := 0; i < col.Len(); i++ {
			if v, ok := labelKey(col, i); ok {
				counts[v]++
			}
		}
		return nil
	})
	// Files skipped while counting are skipped for the sample too.
	l.mu.Lock()
	l.skipped = append(l.skipped, ll.skipped[len(l.skipped):]...)
	l.mu.Unlock()
	return counts, err
}

// reproject returns a lake over the same files with another projection
// (the byte estimates stay those of the full projection, an upper bound).
func (l *Lake) reproject(cols []string) *Lake {
	ll := &Lake{opts: l.opts, keys: l.keys, files: l.files, skipped: slices.Clone(l.skipped)}
	ll.cols = cols
	ll.part = make([]int, len(cols))
	fields := make([]arrow.Field, len(cols))
	for k, c := range cols {
		ll.part[k] = slices.Index(l.keys, c)
		fields[k] = l.schema.Field(slices.Index(l.cols, c))
	}
	ll.schema = arrow.NewSchema(fields, nil)
	return ll
}

// labelKey returns the stratum name of row i of a label column; ok is
// false for a null or NaN.
func labelKey(a arrow.Array, i int) (string, bool) {
	if a.IsNull(i) {
		return "", false
	}
	switch c := a.(type) {
	case *array.String:
		return c.Value(i), true
	case *array.Binary:
		return string(c.Value(i)), true
	case *array.Boolean:
		return strconv.FormatBool(c.Value(i)), true
	case *array.Float32:
		v := float64(c.Value(i))
		return strconv.FormatFloat(v, 'g', -1, 32), !math.IsNaN(v)
	case *array.Float64:
		v := c.Value(i)
		return strconv.FormatFloat(v, 'g', -1, 64), !math.IsNaN(v)
	}
	return a.ValueStr(i), true
}

// rowKey is the sampling key of row `row` of the file at rel.
func rowKey(seed, fileHash uint64, row int64) uint64 {
	return splitmix(splitmix(seed^fileHash) + uint64(row))
}

// splitmix is the SplitMix64 finaliser (Steele, Lea & Flood, OOPSLA 2014).
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func pathHash(rel string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(rel))
	return h.Sum64()
}

// entry is a held row: its key, its chunk and its position in the chunk.
type entry struct {
	key   uint64
	chunk int
	pos   int32
}

// less orders entries by key, then by lake order (chunks are created in
// delivery order), so ties cannot make the result depend on anything else.
func (a entry) less(b entry) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	if a.chunk != b.chunk {
		return a.chunk < b.chunk
	}
	return a.pos < b.pos
}

// keyHeap is a max-heap of the held entries of one stratum.
type keyHeap []entry

func (h keyHeap) Len() int           { return len(h) }
func (h keyHeap) Less(i, j int) bool { return h[j].less(h[i]) }
func (h keyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keyHeap) Push(x any)        { *h = append(*h, x.(entry)) }
func (h *keyHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// chunk is the rows of one batch that were drawn, compacted.
type chunk struct {
	file  int
	rec   arrow.Record
	alive []bool
}

// sampler keeps, per stratum, the quota of smallest keys of the completed
// files (heaps) and of the file being read (cur). A file's rows join the
// heaps only when the file has been read to the end, so a file that fails
// halfway leaves no trace. A row is kept in cur only if it beats both the
// heaps' and cur's largest key, so at most twice the quota is alive.
type sampler struct {
	l          *Lake
	labelCol   int
	seed       uint64
	quota      []int
	names      []string
	counts     []int64
	sampled    []int
	strata     map[string]int
	heaps      []keyHeap // completed files
	cur        []keyHeap // the file being read
	chunks     []*chunk
	held       int // rows in chunks, alive or not
	population int64
	nullLabels int64
	filePop    int64 // the current file's eligible rows so far
	fileNull   int64
}

func (s *sampler) total() int {
	t := 0
	for _, q := range s.quota {
		t += q
	}
	return t
}

func (s *sampler) kill(e entry) { s.chunks[e.chunk].alive[e.pos] = false }

// setQuotas allocates n rows to the strata in proportion to their counts
// n_h: ⌊n·n_h/n_total⌋ each, raised to one row when n is at least the
// number of strata, then corrected to sum to n by the largest remainders
// (Hamilton's method).
func (s *sampler) setQuotas(counts map[string]int64, n int) {
	for name := range counts {
		s.names = append(s.names, name)
	}
	sort.Strings(s.names)
	var total int64
	for _, name := range s.names {
		total += counts[name]
	}
	s.quota = make([]int, len(s.names))
	s.counts = make([]int64, len(s.names))
	for h, name := range s.names {
		s.strata[name] = h
		s.counts[h] = counts[name]
	}
	if int64(n) >= total {
		for h := range s.quota {
			s.quota[h] = int(s.counts[h])
		}
		return
	}
	exact := make([]float64, len(s.names))
	given := 0
	for h := range s.names {
		exact[h] = float64(n) * float64(s.counts[h]) / float64(total)
		s.quota[h] = int(exact[h])
		if n >= len(s.names) && s.quota[h] == 0 {
			s.quota[h] = 1 // every stratum is represented when there is room
		}
		given += s.quota[h]
	}
	// Too many (the one-row minimum): take from the most over-allocated
	// strata; too few: give to the largest remainders. Ties go to the
	// first label.
	for given > n {
		best := -1
		for h := range s.quota {
			if s.quota[h] > 1 && (best < 0 || float64(s.quota[h])-exact[h] > float64(s.quota[best])-exact[best]) {
				best = h
			}
		}
		s.quota[best]--
		given--
	}
	for given < n {
		best := -1
		for h := range s.quota {
			if int64(s.quota[h]) < s.counts[h] && (best < 0 || exact[h]-float64(s.quota[h]) > exact[best]-float64(s.quota[best])) {
				best = h
			}
		}
		s.quota[best]++
		given++
	}
}

// beats reports whether e would enter a full-or-not heap of quota q.
func beats(h keyHeap, q int, e entry) bool {
	return h.Len() < q || (q > 0 && e.less(h[0]))
}

// add offers the rows of a batch of the current file.
func (s *sampler) add(b *Batch) error {
	rec := b.Record
	n := int(rec.NumRows())
	fh := pathHash(s.l.files[b.File].Rel)
	var label arrow.Array
	if s.labelCol >= 0 {
		label = rec.Column(s.labelCol)
	}
	ci := len(s.chunks)
	c := &chunk{file: b.File}
	s.chunks = append(s.chunks, c)
	var take []int32
	for i := 0; i < n; i++ {
		h := 0
		if label != nil {
			v, ok := labelKey(label, i)
			if !ok {
				s.fileNull++
				continue
			}
			if len(s.strata) > 0 {
				var known bool
				if h, known = s.strata[v]; !known {
					return fmt.Errorf("lake: %s: label value %q appeared after the labels were counted", s.l.files[b.File].Path, v)
				}
			}
		}
		s.filePop++
		e := entry{key: rowKey(s.seed, fh, b.FirstRow+int64(i)), chunk: ci, pos: int32(len(take))}
		q := s.quota[h]
		if !beats(s.heaps[h], q, e) || !beats(s.cur[h], q, e) {
			continue
		}
		if s.cur[h].Len() < q {
			heap.Push(&s.cur[h], e)
		} else {
			s.kill(s.cur[h][0])
			s.cur[h][0] = e
			heap.Fix(&s.cur[h], 0)
		}
		take = append(take, int32(i))
		c.alive = append(c.alive, true)
	}
	if len(take) == 0 {
		s.chunks = s.chunks[:ci]
	} else {
		r, err := takeRecord(s.l.opts.Mem, rec, take)
		if err != nil {
			return fmt.Errorf("lake: %s: %w", s.l.files[b.File].Path, err)
		}
		c.rec = r
		s.held += len(take)
	}
	if b.Last {
		s.commitFile()
	}
	if s.held > 4*s.total()+4096 {
		return s.compact()
	}
	return nil
}

// commitFile merges the current file's candidates into the heaps.
func (s *sampler) commitFile() {
	for h := range s.cur {
		for _, e := range s.cur[h] {
			q := s.quota[h]
			switch {
			case s.heaps[h].Len() < q:
				heap.Push(&s.heaps[h], e)
			case e.less(s.heaps[h][0]):
				s.kill(s.heaps[h][0])
				s.heaps[h][0] = e
				heap.Fix(&s.heaps[h], 0)
			default:
				s.kill(e)
			}
		}
		s.cur[h] = s.cur[h][:0]
	}
	s.population += s.filePop
	s.nullLabels += s.fileNull
	s.filePop, s.fileNull = 0, 0
}

// dropFile forgets everything drawn from a file that failed.
func (s *sampler) dropFile() {
	for h := range s.cur {
		for _, e := range s.cur[h] {
			s.kill(e)
		}
		s.cur[h] = s.cur[h][:0]
	}
	s.filePop, s.fileNull = 0, 0
}

// compact rebuilds the chunks with their alive rows only and re-points
// the heap entries.
func (s *sampler) compact() error {
	newIdx := make([]int, len(s.chunks))
	newPos := make([][]int32, len(s.chunks))
	var kept []*chunk
	held := 0
	for ci, c := range s.chunks {
		var take []int32
		pos := make([]int32, len(c.alive))
		for q, a := range c.alive {
			if a {
				pos[q] = int32(len(take))
				take = append(take, int32(q))
			}
		}
		newIdx[ci] = -1
		if len(take) == 0 {
			c.rec.Release()
			continue
		}
		if len(take) < len(c.alive) {
			r, err := takeRecord(s.l.opts.Mem, c.rec, take)
			if err != nil {
				return fmt.Errorf("lake: compacting the sample: %w", err)
			}
			c.rec.Release()
			c.rec = r
			c.alive = c.alive[:len(take)]
			for q := range c.alive {
				c.alive[q] = true
			}
		}
		newIdx[ci] = len(kept)
		newPos[ci] = pos
		kept = append(kept, c)
		held += len(take)
	}
	for _, hs := range [][]keyHeap{s.heaps, s.cur} {
		for h := range hs {
			for i, e := range hs[h] {
				hs[h][i].chunk = newIdx[e.chunk]
				hs[h][i].pos = newPos[e.chunk][e.pos]
			}
		}
	}
	s.chunks, s.held = kept, held
	return nil
}

// finish returns the alive rows of every chunk, in lake order.
func (s *sampler) finish() ([]arrow.Record, error) {
	if err := s.compact(); err != nil {
		s.release()
		return nil, err
	}
	s.sampled = make([]int, len(s.quota))
	for h := range s.heaps {
		s.sampled[h] = s.heaps[h].Len()
	}
	out := make([]arrow.Record, 0, len(s.chunks))
	for _, c := range s.chunks {
		out = append(out, c.rec)
	}
	s.chunks = nil
	return out, nil
}

func (s *sampler) release() {
	for _, c := range s.chunks {
		if c.rec != nil {
			c.rec.Release()
		}
	}
	s.chunks = nil
}
