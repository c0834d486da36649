package codec

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Kind is the JSON kind of a column's values.
type Kind uint8

// JSON kinds. A column takes the kind of its first non-null value unless
// JSONOptions.Kinds or JSONRows.AppendAll fixes it.
const (
	KindNull   Kind = iota // no value yet: null everywhere so far
	KindNumber             // float64 column
	KindString             // utf8 column
	KindBool               // bool column
)

func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindNumber:
		return "number"
	case KindString:
		return "string"
	case KindBool:
		return "bool"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// JSONOptions configure a JSONRows.
type JSONOptions struct {
	// Require names keys every object must have, e.g. the columns a model
	// reads: an object without one is an error naming it. A null value
	// counts as present (a missing value, NaN to a forest).
	Require []string
	// Kinds fixes the kind of the named columns before any row is read, so
	// that a value of another kind is an error in the row that holds it
	// whichever row comes first (without it the first row decides, and a
	// bad first row would make every good row after it an error). A
	// boolean in a KindNumber column is read as 1 or 0, as forestd reads a
	// boolean feature. KindNull entries are ignored.
	Kinds map[string]Kind
	// Single requires each appended value to hold exactly one object (one
	// message, one row).
	Single bool
	// Only, when not nil, lists the keys decoded into columns besides
	// those of Require and Kinds (a non-nil empty Only: those alone). The
	// value of any other key is skipped without becoming a column: it must
	// still be valid JSON, but it may be of any kind in any row, nested
	// objects and arrays included (a decoded column rejects those), and a
	// skipped key given twice in an object is not an error. Rows of one
	// value must carry the same decoded keys; skipped keys may differ.
	// JSONRows.Skipped reports which skipped keys the rows had.
	Only []string
	// Check, with Only, checks the keys Only skips as decoded keys are
	// checked — a flat value, one kind in the rows of a value, the same
	// keys in every row of a value, no key twice, a string Unicode text —
	// but keeps none of their values and gives them no column: the rows
	// accepted, and the errors of those refused, are those of a JSONRows
	// without Only, and only the record is narrower (the daemon's score
	// route decodes the columns its model reads and nothing else).
	Check bool
}

// JSONRows decodes JSON objects, from one value or from many (the messages
// of a batch), into the rows of one Arrow record. Each Append adds all the
// rows of its value or, on an error, none of them, so that one bad message
// is rejected alone while the others still make the record. Columns appear
// in the order of Require, then of Kinds' other keys (sorted), then as
// their keys first appear. Every object of one value (the rows of one
// message, JSON lines) must carry the same keys — a missing value is
// written null — so that a message means the same whether its rows come
// in one message or in several; a key one value lacks is null in the rows
// of the others.
// Numbers become float64, strings utf8, booleans bool; a column that is
// null everywhere is float64. A JSONRows is not safe for concurrent use.
type JSONRows struct {
	opts    JSONOptions
	cols    []*jsonColumn
	index   map[string]int
	only    map[string]bool // JSONOptions.Only; nil: every key is decoded
	skipped map[string]int  // skipped key → first row that has it
	major   map[string]Kind // kinds fixed by AppendAll, for columns to come
	require []int           // column of each required key
	order   []int           // columns of the keys of the last object, in order
	members []member        // the members of the last object, in order: their keys' reading
	first   []int           // the columns of the current value's first object
	fixed   int             // the columns of Require and Kinds, which Reset keeps
	rows    int
	size    int // bytes appended, for the sparsity bound
}

// member is the reading of the key of an object's i-th member last time
// (JSONRows.members): the objects of a stream mostly list the same keys in
// the same order, so the key is compared with it before any map lookup.
type member struct {
	name string
	ci   int // its column, or -1 for a key JSONOptions.Only skips
}

type jsonColumn struct {
	name   string
	ghost  bool // checked, not kept (JSONOptions.Check): rows alone, no values, no column
	kind   Kind // first non-null kind, or the fixed kind
	pinned bool // kind fixed by JSONOptions.Kinds
	voted  bool // kind fixed by AppendAll (the batch's majority)
	last   int  // last row that has the key (null or not); -1 before
	// the non-null cells: row index and value (only the slice of the
	// column's kind is used), so that sparse rows cost nothing per column
	rows []int32
	num  []float64
	str  []string
	bol  []bool
}

// NewJSONRows returns an empty JSONRows.
func NewJSONRows(opts JSONOptions) *JSONRows {
	b := &JSONRows{opts: opts, index: map[string]int{}}
	if opts.Only != nil {
		b.only = make(map[string]bool, len(opts.Only))
		for _, name := range opts.Only {
			b.only[name] = true
		}
	}
	for _, name := range opts.Require {
		b.require = append(b.require, b.column(name))
	}
	names := make([]string, 0, len(opts.Kinds))
	for name, k := range opts.Kinds {
		if k != KindNull {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		c := b.cols[b.column(name)]
		c.kind, c.pinned = opts.Kinds[name], true
	}
	b.fixed = len(b.cols)
	return b
}

// Reset empties b for the next batch, as NewJSONRows with its options
// would return it, but keeps the memory its columns took and the reading
// of the keys (JSONRows is meant to be reused, one batch after the other).
func (b *JSONRows) Reset() {
	for _, c := range b.cols[b.fixed:] {
		delete(b.index, c.name)
	}
	b.cols = b.cols[:b.fixed]
	for _, c := range b.cols {
		c.last, c.voted = -1, false
		if !c.pinned {
			c.kind = KindNull
		}
		c.rows, c.num, c.str, c.bol = c.rows[:0], c.num[:0], c.str[:0], c.bol[:0]
	}
	clear(b.skipped)
	b.major = nil
	b.members = b.members[:0]
	b.order = b.order[:0]
	b.rows, b.size = 0, 0
}

// column returns the index of the column named name, adding it.
func (b *JSONRows) column(name string) int {
	if ci, ok := b.index[name]; ok {
		return ci
	}
	b.index[name] = len(b.cols)
	c := &jsonColumn{name: name, last: -1}
	if k, ok := b.major[name]; ok {
		c.kind, c.voted = k, true
	}
	b.cols = append(b.cols, c)
	return len(b.cols) - 1
}

// Rows is the number of rows appended so far.
func (b *JSONRows) Rows() int { return b.rows }

// maxJSONCells bounds rows × columns of the decoded record relative to the
// bytes decoded, so that sparse rows (many keys, each in few rows) cannot
// amplify a small message into a huge record.
func maxJSONCells(n int) int { return max(1<<20, 8*n) }

// Append decodes the objects of value — one, or a sequence separated by
// whitespace (JSON lines) — and appends a row per object. It returns the
// rows added. A value of another kind than its column's (e.g. a string in
// a numeric column), a nested object or array in a decoded column (see
// JSONOptions.Only), invalid JSON anywhere, a duplicate key, a missing
// required key, anything but objects at the top level, or no object at
// all is an error naming the row (counted from 0 within value; none with
// JSONOptions.Single) and column; then nothing of value is appended.
func (b *JSONRows) Append(value []byte) (int, error) {
	start, ncols := b.rows, len(b.cols)
	if err := b.append(value, start); err != nil {
		b.rollback(start, ncols)
		b.members = b.members[:0] // may name columns or skipped keys rolled back
		if msg, ok := strings.CutPrefix(err.Error(), "JSON row 0"); ok && b.opts.Single {
			err = errors.New("JSON" + msg) // one object: no row to name
		}
		return 0, err
	}
	b.size += len(value)
	return b.rows - start, nil
}

// AppendAll appends each of values as Append does and returns their
// errors (nil for a value appended), after fixing the kind of each column
// that has none yet — neither from JSONOptions.Kinds nor from rows
// appended before — to the kind most of values give it, so that a value
// of another kind is the one in error wherever it comes (without
// AppendAll the first value decides). A value votes once for each kind it
// has in a column (null does not vote); ties go to the kind of the first
// value that gives it; a value that is not a sequence of flat JSON
// objects does not vote; keys JSONOptions.Only skips have no kind. A kind
// fixed so stays fixed for later appends; unlike one fixed by Kinds it
// takes no other kind (no boolean as a number). When Only leaves no
// column without a fixed kind, there is no vote: it is Append after
// Append.
func (b *JSONRows) AppendAll(values [][]byte) []error {
	if b.open() {
		b.vote(values)
	}
	errs := make([]error, len(values))
	for i, v := range values {
		_, errs[i] = b.Append(v)
	}
	return errs
}

// open reports whether a decoded column may have no kind yet.
func (b *JSONRows) open() bool {
	if b.only == nil || b.opts.Check {
		return true
	}
	for _, c := range b.cols {
		if c.kind == KindNull && !c.pinned {
			return true
		}
	}
	for name := range b.only {
		if _, ok := b.index[name]; !ok {
			return true
		}
	}
	return false
}

// kindTally counts the values giving each kind to one column.
type kindTally struct {
	n     [4]int // values per kind
	first [4]int // first value giving the kind
	last  [4]int // last value counted, so that each counts once (-1: none)
}

// vote fixes, in b.major and in the columns without a kind, the majority
// kind of values (see AppendAll).
func (b *JSONRows) vote(values [][]byte) {
	tally := map[string]*kindTally{}
	type cast struct {
		t *kindTally
		k Kind
	}
	var casts []cast
	for vi, v := range values {
		casts = casts[:0]
		ok := b.scanKinds(v, func(key []byte, k Kind) {
			if ci, ok := b.index[string(key)]; ok && (b.cols[ci].pinned || b.cols[ci].kind != KindNull) {
				return // fixed already
			}
			t := tally[string(key)]
			if t == nil {
				t = &kindTally{last: [4]int{-1, -1, -1, -1}}
				tally[string(key)] = t
			}
			casts = append(casts, cast{t, k})
		})
		if !ok {
			continue
		}
		for _, c := range casts {
			if t := c.t; t.last[c.k] != vi {
				t.last[c.k] = vi
				if t.n[c.k] == 0 {
					t.first[c.k] = vi
				}
				t.n[c.k]++
			}
		}
	}
	for name, t := range tally {
		best := KindNull
		for k := KindNumber; k <= KindBool; k++ {
			if t.n[k] > t.n[best] || t.n[k] > 0 && t.n[k] == t.n[best] && t.first[k] < t.first[best] {
				best = k
			}
		}
		if best == KindNull {
			continue
		}
		if b.major == nil {
			b.major = map[string]Kind{}
		}
		b.major[name] = best
		if ci, ok := b.index[name]; ok && b.cols[ci].kind == KindNull && !b.cols[ci].pinned {
			b.cols[ci].kind, b.cols[ci].voted = best, true
		}
	}
}

// scanKinds reads value, a sequence of flat objects, calling cast with the
// key and kind of each non-null member a column would decode; it reports
// whether value read as such a sequence.
func (b *JSONRows) scanKinds(value []byte, cast func(key []byte, k Kind)) bool {
	sc := jsonScanner{b: bytes.TrimPrefix(value, []byte("\xef\xbb\xbf"))}
	objects := 0
	for {
		sc.space()
		if sc.eof() {
			return objects > 0
		}
		if sc.peek() != '{' {
			return false
		}
		sc.i++
		objects++
		sc.space()
		if !sc.eof() && sc.peek() == '}' {
			sc.i++
			continue
		}
		for {
			sc.space()
			if sc.eof() || sc.peek() != '"' {
				return false
			}
			key, err := sc.str(false)
			if err != nil {
				return false
			}
			sc.space()
			if sc.eof() || sc.peek() != ':' {
				return false
			}
			sc.i++
			sc.space()
			_, decoded := b.index[string(key)]
			if decoded || b.only == nil || b.opts.Check || b.only[string(key)] {
				k, err := sc.kind()
				if err != nil {
					return false
				}
				if k != KindNull {
					cast(key, k)
				}
			} else if sc.skip(0) != nil {
				return false
			}
			sc.space()
			if sc.eof() {
				return false
			}
			if sc.peek() == '}' {
				sc.i++
				break
			}
			if sc.peek() != ',' {
				return false
			}
			sc.i++
		}
	}
}

func (b *JSONRows) append(value []byte, start int) error {
	sc := jsonScanner{b: bytes.TrimPrefix(value, []byte("\xef\xbb\xbf"))}
	cellLimit := maxJSONCells(b.size + len(value))
	first := b.first[:0] // the columns of the value's first object
	defer func() { b.first = first }()
	for {
		row := b.rows - start // within value, for errors
		sc.space()
		if sc.eof() {
			break
		}
		if c := sc.peek(); c != '{' {
			if what := sc.valueKind(); what != "" {
				return fmt.Errorf("JSON row %d: expected an object, found %s", row, what)
			}
			return fmt.Errorf("JSON row %d: %w", row, sc.invalid("looking for beginning of value"))
		}
		sc.i++
		if b.opts.Single && row == 1 {
			return errors.New("JSON: more than one object in the value; one object is one row here")
		}
		if b.rows == maxJSONRows {
			return fmt.Errorf("JSON: more than %d rows", maxJSONRows)
		}
		nkeys, err := b.object(&sc, row)
		if err != nil {
			return err
		}
		if row == 0 {
			first = append(first[:0], b.order[:nkeys]...)
			if len(sc.b) > 2*sc.i { // more rows to come: room for as many as the first one's size suggests
				for _, ci := range first {
					b.cols[ci].reserve(len(sc.b) / sc.i)
				}
			}
		} else if err := b.sameKeys(first, nkeys, row); err != nil {
			return err
		}
		for _, ci := range b.require {
			if b.cols[ci].last != b.rows {
				return fmt.Errorf("JSON row %d: no key %q", row, b.cols[ci].name)
			}
		}
		b.rows++
		if b.rows*max(len(b.cols), 1) > cellLimit {
			return fmt.Errorf("JSON: %d rows × %d columns is too sparse for %d bytes", b.rows, len(b.cols), b.size+len(value))
		}
	}
	if b.rows == start {
		return errors.New("JSON: no objects in the value")
	}
	return nil
}

// sameKeys checks that row b.rows, the row-th object of its value with
// nkeys keys (b.order[:nkeys]), has the keys of the value's first object.
func (b *JSONRows) sameKeys(first []int, nkeys, row int) error {
	for _, ci := range first {
		if b.cols[ci].last != b.rows {
			return fmt.Errorf("JSON row %d has no key %q, which row 0 has (every row of a message carries the same keys; write null for a missing value)", row, b.cols[ci].name)
		}
	}
	if nkeys != len(first) {
		for _, ci := range b.order[:nkeys] {
			if !slices.Contains(first, ci) {
				return fmt.Errorf("JSON row %d has key %q, which row 0 lacks (every row of a message carries the same keys; write null for a missing value)", row, b.cols[ci].name)
			}
		}
	}
	return nil
}

// object reads the members of one object (after its '{') into row b.rows
// and returns how many decoded keys it had (their columns: b.order[:n]);
// row numbers it within the value for errors.
func (b *JSONRows) object(sc *jsonScanner, row int) (int, error) {
	at := b.rows
	sc.space()
	if sc.eof() {
		return 0, fmt.Errorf("JSON row %d: unexpected EOF", row)
	}
	if sc.peek() == '}' {
		sc.i++
		return 0, nil
	}
	for k, mi := 0, 0; ; mi++ { // k: the decoded keys so far; mi: the members
		sc.space()
		if sc.eof() {
			return 0, fmt.Errorf("JSON row %d: unexpected EOF", row)
		}
		if sc.peek() != '"' {
			return 0, fmt.Errorf("JSON row %d: %w", row, sc.invalid("looking for beginning of object key string"))
		}
		key, err := sc.str(false)
		if err != nil {
			return 0, fmt.Errorf("JSON row %d: %w", row, err)
		}
		sc.space()
		if sc.eof() {
			return 0, fmt.Errorf("JSON row %d: unexpected EOF", row)
		}
		if sc.peek() != ':' {
			return 0, fmt.Errorf("JSON row %d: %w", row, sc.invalid("after object key"))
		}
		sc.i++
		sc.space()
		var ci int
		cached := mi < len(b.members) && b.members[mi].name == string(key)
		if cached {
			if ci = b.members[mi].ci; ci >= 0 {
				ci, err = b.lookup(key, k) // b.order's entry (the column's name is compared again)
			}
		} else {
			ci, err = b.lookup(key, k)
			m := member{name: string(key), ci: ci}
			if mi < len(b.members) {
				b.members[mi] = m
			} else if mi == len(b.members) {
				b.members = append(b.members, m)
			}
		}
		if err != nil {
			return 0, err
		}
		if ci < 0 {
			if err := sc.skip(0); err != nil {
				return 0, fmt.Errorf("JSON row %d, column %q: %w", row, key, err)
			}
			if !cached { // else an earlier row recorded it (a rollback empties the cache)
				if _, ok := b.skipped[string(key)]; !ok {
					if b.skipped == nil {
						b.skipped = map[string]int{}
					}
					b.skipped[string(key)] = at
				}
			}
		} else {
			if err := sc.value(b.cols[ci], at, row); err != nil {
				return 0, err
			}
			k++
		}
		sc.space()
		if sc.eof() {
			return 0, fmt.Errorf("JSON row %d: unexpected EOF", row)
		}
		switch sc.peek() {
		case ',':
			sc.i++
		case '}':
			sc.i++
			return k, nil
		default:
			return 0, fmt.Errorf("JSON row %d: %w", row, sc.invalid("after object key:value pair"))
		}
	}
}

// lookup returns the column of key, the k-th decoded key of its object,
// adding a column for a new key, or -1 for a key JSONOptions.Only skips
// (b.order is then unchanged). Objects of one stream mostly list their keys in
// the same order, so the column that followed the previous key last time
// is tried before the map.
func (b *JSONRows) lookup(key []byte, k int) (int, error) {
	if k < len(b.order) {
		if ci := b.order[k]; ci < len(b.cols) && b.cols[ci].name == string(key) {
			return ci, nil
		}
	}
	ci, ok := b.index[string(key)]
	if !ok {
		ghost := b.only != nil && !b.only[string(key)]
		if ghost && !b.opts.Check {
			return -1, nil
		}
		if len(b.cols) == maxJSONColumns {
			return 0, fmt.Errorf("JSON: more than %d columns", maxJSONColumns)
		}
		ci = b.column(string(key))
		b.cols[ci].ghost = ghost
	}
	if k < len(b.order) {
		b.order[k] = ci
	} else {
		b.order = append(b.order, ci)
	}
	return ci, nil
}

// rollback removes the rows from start on and the columns from ncols on.
func (b *JSONRows) rollback(start, ncols int) {
	for _, c := range b.cols[ncols:] {
		delete(b.index, c.name)
	}
	b.cols = b.cols[:ncols]
	for _, c := range b.cols {
		k := len(c.rows)
		for k > 0 && int(c.rows[k-1]) >= start {
			k--
		}
		if k < len(c.rows) {
			c.rows = c.rows[:k]
			switch {
			case c.ghost:
			case c.kind == KindNumber:
				c.num = c.num[:k]
			case c.kind == KindString:
				c.str = c.str[:k]
			case c.kind == KindBool:
				c.bol = c.bol[:k]
			}
		}
		if k == 0 && !c.pinned && !c.voted {
			c.kind = KindNull
		}
		if c.last >= start {
			c.last = -1
		}
	}
	for name, first := range b.skipped {
		if first >= start {
			delete(b.skipped, name)
		}
	}
	b.rows = start
}

// Skipped reports whether a row appended so far has the key name, which
// JSONOptions.Only skips (false for a decoded key).
func (b *JSONRows) Skipped(name string) bool {
	if ci, ok := b.index[name]; ok {
		return b.cols[ci].ghost && b.cols[ci].last >= 0
	}
	_, ok := b.skipped[name]
	return ok
}

// DecodeJSON decodes JSON objects — one, or a sequence separated by
// whitespace (JSON lines) — into one record with a row per object (a
// JSONRows without options, see Append for the errors).
func DecodeJSON(value []byte, mem memory.Allocator) (arrow.Record, error) {
	b := NewJSONRows(JSONOptions{})
	if _, err := b.Append(value); err != nil {
		return nil, err
	}
	return b.Record(mem), nil
}

// add adds a value of kind k (KindNull: null; num, str or bol holds it) of
// the column at builder row at (row within the value, for errors).
func (c *jsonColumn) add(k Kind, num float64, str string, bol bool, at, row int) error {
	if c.last == at {
		return fmt.Errorf("JSON row %d: duplicate key %q", row, c.name)
	}
	c.last = at
	if k == KindNull {
		return nil // stays null
	}
	if k == KindNumber && c.kind == KindNumber && !c.ghost {
		c.num = append(c.num, num)
		c.rows = append(c.rows, int32(at))
		return nil
	}
	switch {
	case c.kind == KindNull:
		c.kind = k
	case c.pinned && c.kind == KindNumber && k == KindBool:
		k, num = KindNumber, 0
		if bol {
			num = 1
		}
	case c.kind != k && c.pinned:
		return fmt.Errorf("JSON row %d, column %q: a %s where a %s is expected", row, c.name, k, c.kind)
	case c.kind != k && c.voted:
		return fmt.Errorf("JSON row %d, column %q: a %s where most values of the batch have a %s", row, c.name, k, c.kind)
	case c.kind != k:
		return fmt.Errorf("JSON row %d, column %q: a %s where earlier rows have a %s", row, c.name, k, c.kind)
	}
	switch {
	case c.ghost: // the row alone, for rollback and kinds
	case k == KindNumber:
		c.num = append(c.num, num)
	case k == KindString:
		c.str = append(c.str, str)
	case k == KindBool:
		c.bol = append(c.bol, bol)
	}
	c.rows = append(c.rows, int32(at))
	return nil
}

// reserve makes room for n more values of c's kind without growing.
func (c *jsonColumn) reserve(n int) {
	if n <= 0 || cap(c.rows)-len(c.rows) >= n {
		return
	}
	c.rows = slices.Grow(c.rows, n)
	switch {
	case c.ghost:
	case c.kind == KindNumber || c.kind == KindNull:
		c.num = slices.Grow(c.num, n)
	case c.kind == KindString:
		c.str = slices.Grow(c.str, n)
	case c.kind == KindBool:
		c.bol = slices.Grow(c.bol, n)
	}
}

// Record builds the record of every row appended so far (no rows: a
// record without rows). The caller releases it; b is unchanged.
func (b *JSONRows) Record(mem memory.Allocator) arrow.Record {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	rows := b.rows
	fields := make([]arrow.Field, 0, len(b.cols))
	arrs := make([]arrow.Array, 0, len(b.cols))
	for _, c := range b.cols {
		if c.ghost {
			continue
		}
		j := len(fields)
		fields, arrs = fields[:j+1], arrs[:j+1]
		var bld array.Builder
		// pad appends nulls up to row i
		next := 0
		pad := func(i int) {
			if i > next {
				bld.AppendNulls(i - next)
			}
			next = i + 1
		}
		switch c.kind {
		case KindString:
			sb := array.NewStringBuilder(mem)
			bld = sb
			for k, i := range c.rows {
				pad(int(i))
				sb.Append(c.str[k])
			}
			fields[j] = arrow.Field{Name: c.name, Type: arrow.BinaryTypes.String, Nullable: true}
		case KindBool:
			bb := array.NewBooleanBuilder(mem)
			bld = bb
			for k, i := range c.rows {
				pad(int(i))
				bb.Append(c.bol[k])
			}
			fields[j] = arrow.Field{Name: c.name, Type: arrow.FixedWidthTypes.Boolean, Nullable: true}
		default:
			fb := array.NewFloat64Builder(mem)
			bld = fb
			fields[j] = arrow.Field{Name: c.name, Type: arrow.PrimitiveTypes.Float64, Nullable: true}
			if len(c.rows) == rows { // no nulls: the values as they are
				fb.AppendValues(c.num, nil)
				arrs[j] = fb.NewArray()
				fb.Release()
				continue
			}
			fb.Reserve(rows)
			for k, i := range c.rows {
				pad(int(i))
				fb.UnsafeAppend(c.num[k])
			}
			fields[j] = arrow.Field{Name: c.name, Type: arrow.PrimitiveTypes.Float64, Nullable: true}
		}
		if rows > next {
			bld.AppendNulls(rows - next)
		}
		arrs[j] = bld.NewArray()
		bld.Release()
	}
	rec := array.NewRecord(arrow.NewSchema(fields, nil), arrs, int64(rows))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}
