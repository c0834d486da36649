package dependence

import (
	"slices"
	"sync"
)

// Prefix triangles (issue 30): a bottom-up search tests the triples
// (a, b, c) in order of a, then b, then c (search.go, bottomUp), so up to
// p − 2 candidates in a row share their first two columns, and each
// candidate's screen (prune.go) sweeps the O(m_s²) distances of the same
// screen rows (pairPass). The Euclidean distance of a set (Definitions 8
// and 12) is √(Σ_col (x_i − x_j)²) summed column by column, so the sum
// over all columns but the last — the set's prefix — is the same for every
// set with that prefix, to the bit. A search keeps it, packed like the
// float32 triangle (row i at i(i−1)/2), as float64: a candidate then adds
// one column and takes the square root (extRow) instead of summing every
// column, with exactly the statistics of the full sweep
// (TestPrefixSameStatistics, TestPrefixSearchTests).
//
// A prefix is built at its first request. The cache holds at most maxBuilt
// triangles (one per thread and one more: a search's prefetch works on
// consecutive candidates, so mostly on one or two prefixes) within
// 1/prefixShare of TestOptions.MaxCacheBytes, least recently used first
// out; a triangle a test is still reading is never dropped, so the bound
// holds while tests run, and without room a test sweeps as before. Only
// the screens use it: the few candidates the screen passes to the full
// test on the set rows share a prefix with about one other, and there a
// prefix costs more than it saves.

// prefixShare: the prefix cache holds at most 1/prefixShare of
// TestOptions.MaxCacheBytes (the set tests' float32 triangles take the
// rest, search.go's prefetch).
const prefixShare = 16

// prefixKey names a prefix: its features and its rows (m: the candidate
// screen of m rows, prune.go).
type prefixKey struct {
	feats string
	rows  int
}

type prefixEntry struct {
	key   prefixKey
	bytes int64
	users int // tests reading tri
	once  sync.Once
	tri   []float64
}

// prefixCache holds at most maxBuilt prefix triangles within max bytes.
type prefixCache struct {
	mu       sync.Mutex
	max      int64
	maxBuilt int
	used     int64
	built    int
	free     []float64 // a dropped triangle's memory, for the next build
	entries  map[prefixKey]*prefixEntry
	lru      []*prefixEntry // least recently used first
	hits     int            // requests answered by a triangle (tests)
}

func newPrefixCache(max int64, maxBuilt int) *prefixCache {
	return &prefixCache{max: max, maxBuilt: maxBuilt, entries: map[prefixKey]*prefixEntry{}}
}

// get returns the entry of key with its triangle (built by build in the
// buffer it is given, of bytes bytes), or nil when there is no room. A
// non-nil entry must be given back to release.
func (c *prefixCache) get(key prefixKey, bytes int64, build func(buf []float64) []float64) *prefixEntry {
	if c == nil || bytes > c.max {
		return nil
	}
	c.mu.Lock()
	var buf []float64
	e := c.entries[key]
	if e == nil {
		if !c.reserve(bytes) {
			c.mu.Unlock()
			return nil
		}
		e = &prefixEntry{key: key, bytes: bytes}
		c.entries[key] = e
		c.built++
		buf, c.free = c.free, nil
	} else {
		c.lru = slices.DeleteFunc(c.lru, func(o *prefixEntry) bool { return o == e })
	}
	c.lru = append(c.lru, e)
	e.users++
	c.hits++
	c.mu.Unlock()
	e.once.Do(func() { e.tri = build(buf) })
	return e
}

// reserve makes room for one more triangle of bytes, dropping the least
// recently used ones no test reads (under mu).
func (c *prefixCache) reserve(bytes int64) bool {
	full := func() bool { return c.used+bytes > c.max || c.built >= c.maxBuilt }
	for i := 0; full() && i < len(c.lru); {
		if o := c.lru[i]; o.users == 0 {
			c.used -= o.bytes
			c.built--
			if cap(o.tri) > cap(c.free) {
				c.free = o.tri
			}
			delete(c.entries, o.key)
			c.lru = slices.Delete(c.lru, i, i+1)
			continue
		}
		i++
	}
	if full() {
		return false
	}
	c.used += bytes
	return true
}

// release gives back an entry get returned (nil is ignored).
func (c *prefixCache) release(e *prefixEntry) {
	if e == nil {
		return
	}
	c.mu.Lock()
	e.users--
	c.mu.Unlock()
}

// prefixTri returns the packed triangle of sqDistRow over the columns x of
// n rows (in buf when it is long enough): entry i(i−1)/2 + j is row i's
// squared distance to row j < i.
func prefixTri(x [][]float64, n int, buf []float64) []float64 {
	var t []float64
	if m := n * (n - 1) / 2; cap(buf) >= m {
		t = buf[:m]
	} else {
		t = make([]float64, m)
	}
	off := 0
	for i := 1; i < n; i++ {
		sqDistRow(x, i, t[off:off+i])
		off += i
	}
	return t
}

// prefix returns the prefix entry of the sorted set feats on rows (nil:
// every row) of the search, tag naming the rows (prefixKey), or nil. x is
// the set's complete columns on those rows: a set that lost rows to
// missing values, or that rescaled would scale, takes no prefix.
func (d *data) prefix(feats, rows []int, tag int, x [][]float64) *prefixEntry {
	n := len(rows)
	if rows == nil {
		n = d.lab.Len()
	}
	if d.pre == nil || len(feats) < 2 || len(x) != len(feats) || len(x[0]) != n || d.projects(n) || !unscaled(x) {
		return nil
	}
	head := feats[:len(feats)-1]
	key := prefixKey{feats: setKey("", head), rows: tag}
	return d.pre.get(key, int64(n)*int64(n-1)/2*8, func(buf []float64) []float64 {
		return prefixTri(x[:len(head)], n, buf)
	})
}

// preBytes is the most the prefix cache holds (0 without one).
func (d *data) preBytes() int64 {
	if d.pre == nil {
		return 0
	}
	return d.pre.max
}

// triangle is the entry's triangle (nil for a nil entry).
func (e *prefixEntry) triangle() []float64 {
	if e == nil {
		return nil
	}
	return e.tri
}
