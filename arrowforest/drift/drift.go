// Package drift tests whether the data a model scores still looks like the
// data it was trained on: two-sample energy tests (Székely and Rizzo,
// "Testing for equal distributions in high dimension", 2004; R
// energy::eqdist.e) between a reference and a current sample of Arrow
// records, one per feature and one joint over the features, with seeded
// permutation p-values and false alarms controlled across them (Holm by
// default). The statistics and permutations are dependence's
// (dependence.EnergyTest and friends, energy.go); this package turns
// Arrow columns into their inputs, so that the CLI, the daemon and the
// Benthos processors share one reading of the records (ARCHITECTURE.md,
// File map).
package drift

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/forestd/forestd/arrowforest/dependence"
)

// Defaults of Options.
const (
	DefaultAlpha = 0.05
	// DefaultMaxRows bounds the pooled rows of the joint eqdist.e
	// statistic (O(n²·d) once) and of the exact joint test (O(n²) memory
	// and time per permutation).
	DefaultMaxRows = 10000
	// DefaultDirections is the random directions of the joint test's
	// projected statistic (dependence.EnergyOptions.Directions).
	DefaultDirections = 64
	// DefaultMaxProjectedRows bounds the pooled rows of the projected
	// joint test, which holds 8d + 12K bytes a row (d columns, K
	// directions): about 170 MB at 10 features and 64 directions, where
	// every row of a 1M-row lake held 850 MB. It is above the daemon's
	// default window (drift.max_window_rows, 100,000, plus the 2,000-row
	// reference), whose tests it leaves unchanged.
	DefaultMaxProjectedRows = 200_000
	// maxJointLevels is the most categories a categorical feature may have
	// to enter the joint test (as one-hot columns, see Test).
	maxJointLevels = 64
)

// Options controls Test. The zero value of every field means its default.
type Options struct {
	// Features are the columns to test (default: every column of the
	// reference; those the current sample lacks are skipped and named in
	// the report). A named feature missing from either side is an error.
	Features []string
	// Alpha is the level of the family of tests (default 0.05).
	Alpha float64
	// Adjust controls false alarms across the features and the joint test
	// (default dependence.AdjustHolm).
	Adjust dependence.Adjust
	// Seed seeds the permutations (and the joint subsample).
	Seed uint64
	// MaxRows bounds the pooled rows of the joint statistic (and of the
	// exact joint test): default DefaultMaxRows, above it each sample
	// subsampled in proportion. Per-feature tests and the projected joint
	// test use every row.
	MaxRows int
	// Directions is the random directions of the projected joint test
	// (default DefaultDirections).
	Directions int
	// MaxProjectedRows bounds the pooled rows of the projected joint
	// test (default DefaultMaxProjectedRows): above it each sample is
	// subsampled in proportion, seeded by Seed, so that its memory is
	// bounded whatever the samples' size. The price is power: above the
	// cap the joint test has the power of a test of that many rows. On
	// the correlation case (TestPowerCorrelation: 0 → 0.8 between two of
	// 10 features, found by the joint test alone), over 20 data sets of
	// 3,000 + 3,000 rows at the defaults, it found 20 of 20 on every
	// row, 11 at a cap of 3,000, 6 at 2,000 and none at 1,000. The mean
	// shift and scale cases (TestPowerShift, TestPowerScale) are found by
	// the per-feature tests, which use every row whatever the cap.
	MaxProjectedRows int
	// Context, when set, stops Test: it is checked between features, in
	// the permutation loops and between the passes of the joint
	// statistic, and Test then returns an error wrapping context.Cause.
	Context context.Context
	// ExactJoint takes the joint p-value from permutations of eqdist.e
	// itself on the MaxRows rows (eqdist.etest's test, O(n²) per
	// permutation) instead of the projected statistic over every row.
	ExactJoint bool
	// Threads bounds the permutation workers (default GOMAXPROCS); the
	// report does not depend on it.
	Threads int
	// MaxPerms caps a test's permutations (default
	// dependence.DefaultMaxPermsAdjusted with an adjustment, else
	// dependence.DefaultMaxPerms).
	MaxPerms int
	// Perms, when positive, runs exactly that many permutations per test
	// instead of the sequential test.
	Perms int
	// NoJoint leaves the joint test out.
	NoJoint bool
}

func (o Options) resolve() (Options, error) {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if !(o.Alpha > 0 && o.Alpha < 1) {
		return o, fmt.Errorf("drift: alpha %v outside (0, 1)", o.Alpha)
	}
	if o.Adjust == "" {
		o.Adjust = dependence.AdjustHolm
	}
	if _, err := dependence.ParseAdjust(string(o.Adjust)); err != nil {
		return o, fmt.Errorf("drift: %w", err)
	}
	if o.MaxRows == 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.Directions == 0 {
		o.Directions = DefaultDirections
	}
	if o.MaxProjectedRows == 0 {
		o.MaxProjectedRows = DefaultMaxProjectedRows
	}
	if o.MaxRows < 2 || o.MaxProjectedRows < 2 || o.Directions < 0 || o.Threads < 0 || o.MaxPerms < 0 || o.Perms < 0 {
		return o, fmt.Errorf("drift: max rows %d, max projected rows %d (want ≥ 2), directions %d, threads %d, max perms %d, perms %d (want ≥ 0)",
			o.MaxRows, o.MaxProjectedRows, o.Directions, o.Threads, o.MaxPerms, o.Perms)
	}
	if o.MaxPerms == 0 {
		o.MaxPerms = dependence.DefaultMaxPerms
		if o.Adjust != dependence.AdjustNone {
			o.MaxPerms = dependence.DefaultMaxPermsAdjusted
		}
	}
	return o, nil
}

// Feature is the test of one feature.
type Feature struct {
	Name string `json:"name"`
	// Kind is "numeric" (|x − x′|) or "categorical" (0/1 distance).
	Kind      string  `json:"kind"`
	Statistic float64 `json:"statistic"` // energy::eqdist.e
	PValue    float64 `json:"p_value"`
	PAdjusted float64 `json:"p_adjusted"`
	Drift     bool    `json:"drift"`
	// RefRows and CurRows are the non-missing values tested.
	RefRows int `json:"ref_rows"`
	CurRows int `json:"cur_rows"`
	Perms   int `json:"perms"`
}

// Joint is the test of the features together.
type Joint struct {
	Features []string `json:"features"`
	// Statistic is energy::eqdist.e of the features together (Euclidean)
	// on StatisticRows pooled rows: every complete row up to MaxRows,
	// else a seeded subsample.
	Statistic     float64 `json:"statistic"`
	StatisticRows int     `json:"statistic_rows"`
	// Method is how PValue was found: "projections" (a permutation test
	// of Projected over Rows pooled rows: every complete row up to
	// MaxProjectedRows, else a seeded subsample) or "exact"
	// (of Statistic itself, Rows = StatisticRows).
	Method string `json:"method"`
	// Projected is the random-projection statistic the "projections"
	// test permutes: C_p times the mean one-dimensional eqdist.e over
	// Directions seeded directions, an unbiased estimate of the
	// statistic over every row (Huang and Huo 2017).
	Projected  float64 `json:"projected,omitempty"`
	Directions int     `json:"directions,omitempty"`
	PValue     float64 `json:"p_value"`
	PAdjusted  float64 `json:"p_adjusted"`
	Drift      bool    `json:"drift"`
	// Rows is the pooled rows of the test that gave PValue.
	Rows  int `json:"rows"`
	Perms int `json:"perms"`
}

// Skipped is a feature left untested and why.
type Skipped struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Report is the outcome of Test.
type Report struct {
	Features []Feature `json:"features"`
	// Joint is nil when fewer than two features were tested or NoJoint.
	Joint   *Joint    `json:"joint"`
	Skipped []Skipped `json:"skipped,omitempty"`
	// Drift: any test of the family rejected.
	Drift   bool              `json:"drift"`
	Alpha   float64           `json:"alpha"`
	Adjust  dependence.Adjust `json:"adjust"`
	RefRows int               `json:"ref_rows"`
	CurRows int               `json:"cur_rows"`
}

// ErrEmpty is returned when a sample has no rows.
var ErrEmpty = errors.New("drift: empty sample")

// column is one feature read from both samples: numeric values (NaN
// missing) or category codes (−1 missing) shared by both sides.
type column struct {
	name     string
	cat      bool
	num      [2][]float64
	codes    [2][]int32
	levels   int
	present  [2]int
	skipNote string
}

// Test runs the energy tests of equal distributions between the records
// ref and cur: one per feature (numeric features with |x − x′| in
// O(n log n), categorical ones — strings, dictionaries — with the 0/1
// distance) and one joint over the tested features with the Euclidean
// distance of energy::eqdist.e, where a categorical feature enters as
// one-hot columns scaled by 1/√2 (so that it adds the 0/1 distance to the
// squared distance). The joint Statistic is eqdist.e's on up to MaxRows
// rows; its p-value, by default, is the permutation test of the
// random-projection statistic over every row up to MaxProjectedRows
// (Joint.Projected, Directions directions: O(K·n) per permutation), or
// with ExactJoint of
// the statistic itself. Every test is a sequential permutation test
// (dependence.SeqExceed) at the smallest threshold of the family,
// Alpha/m, and the family's p-values are adjusted by Adjust. Bad input
// never panics: a feature missing from one side or with no value on one
// side is skipped and named in Report.Skipped; an empty sample, or a
// named feature that is absent, is an error.
func Test(ref, cur []arrow.Record, opt Options) (Report, error) {
	o, err := opt.resolve()
	if err != nil {
		return Report{}, err
	}
	rep := Report{Alpha: o.Alpha, Adjust: o.Adjust, Features: []Feature{}}
	for _, r := range ref {
		rep.RefRows += int(r.NumRows())
	}
	for _, r := range cur {
		rep.CurRows += int(r.NumRows())
	}
	if rep.RefRows == 0 {
		return rep, fmt.Errorf("%w: the reference has no rows", ErrEmpty)
	}
	if rep.CurRows == 0 {
		return rep, fmt.Errorf("%w: the current sample has no rows", ErrEmpty)
	}
	names := o.Features
	if len(names) == 0 {
		names = fieldNames(ref[0].Schema())
	}
	var cols []*column
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			return rep, fmt.Errorf("drift: feature %q named twice", name)
		}
		seen[name] = true
		c, err := readColumn(name, ref, cur, len(o.Features) > 0)
		if err != nil {
			return rep, err
		}
		if c.skipNote != "" {
			rep.Skipped = append(rep.Skipped, Skipped{Name: name, Reason: c.skipNote})
			continue
		}
		cols = append(cols, c)
	}
	if len(o.Features) == 0 {
		// columns only the current sample has
		for _, name := range fieldNames(cur[0].Schema()) {
			if !seen[name] {
				rep.Skipped = append(rep.Skipped, Skipped{Name: name, Reason: "missing from the reference"})
			}
		}
	}
	if len(cols) == 0 {
		var why []string
		for _, sk := range rep.Skipped {
			why = append(why, fmt.Sprintf("%q %s", sk.Name, sk.Reason))
		}
		return rep, fmt.Errorf("drift: no feature to test (skipped: %s)", strings.Join(why, "; "))
	}
	joint := !o.NoJoint && len(cols) >= 2
	m := len(cols)
	if joint {
		m++
	}
	eo := dependence.EnergyOptions{Test: dependence.TestOptions{
		Seed: o.Seed, Threads: o.Threads, MaxPerms: o.MaxPerms, Perms: o.Perms, MaxRows: o.MaxRows,
	}, MaxProjectedRows: o.MaxProjectedRows, Context: o.Context}
	if o.Perms == 0 {
		eo.Threshold = o.Alpha
		if o.Adjust != dependence.AdjustNone {
			eo.Threshold = o.Alpha / float64(m)
		}
	}
	p := make([]float64, 0, m)
	for _, c := range cols {
		if err := stopped(o.Context); err != nil {
			return rep, err
		}
		eo.ID = nameID(c.name)
		var res dependence.TestResult
		f := Feature{Name: c.name, Kind: "numeric", RefRows: c.present[0], CurRows: c.present[1]}
		if c.cat {
			f.Kind = "categorical"
			res, err = dependence.EnergyTestCat(c.codes[0], c.codes[1], c.levels, eo)
		} else {
			res, err = dependence.EnergyTest(c.num[0], c.num[1], eo)
		}
		if err != nil {
			return rep, fmt.Errorf("drift: feature %q: %w", c.name, err)
		}
		f.Statistic, f.PValue, f.Perms = res.Statistic, res.PValue, res.N
		rep.Features = append(rep.Features, f)
		p = append(p, res.PValue)
	}
	if joint {
		if err := stopped(o.Context); err != nil {
			return rep, err
		}
		jr, err := jointTest(cols, eo, o)
		if err != nil {
			return rep, err
		}
		rep.Joint = &jr
		p = append(p, jr.PValue)
	}
	rej, adj, err := dependence.AdjustPValues(p, o.Adjust, o.Alpha)
	if err != nil {
		return rep, err
	}
	for i := range rep.Features {
		rep.Features[i].PAdjusted, rep.Features[i].Drift = adj[i], rej[i]
	}
	if joint {
		rep.Joint.PAdjusted, rep.Joint.Drift = adj[m-1], rej[m-1]
	}
	rep.Drift = slices.Contains(rej, true)
	return rep, nil
}

// jointTest builds the joint test's columns: numeric features as they
// are, categorical ones as one-hot columns of 1/√2 (a category missing →
// NaN, the row left out); categorical features of more than
// maxJointLevels categories stay out of it.
func jointTest(cols []*column, eo dependence.EnergyOptions, o Options) (Joint, error) {
	var x [2][][]float64
	var names []string
	h := 1 / math.Sqrt2
	for _, c := range cols {
		if !c.cat {
			names = append(names, c.name)
			for s := range 2 {
				x[s] = append(x[s], c.num[s])
			}
			continue
		}
		if c.levels > maxJointLevels {
			continue
		}
		names = append(names, c.name)
		for l := range c.levels {
			for s := range 2 {
				v := make([]float64, len(c.codes[s]))
				for i, code := range c.codes[s] {
					switch {
					case code < 0:
						v[i] = math.NaN()
					case int(code) == l:
						v[i] = h
					}
				}
				x[s] = append(x[s], v)
			}
		}
	}
	j := Joint{Features: names}
	if len(names) == 0 {
		return j, errors.New("drift: joint test: no feature to test")
	}
	eo.ID = nameID("\x00joint")
	var err error
	if j.Statistic, j.StatisticRows, err = dependence.EnergyStatJoint(x[0], x[1], eo); err != nil {
		return j, fmt.Errorf("drift: joint test of %v: %w", names, err)
	}
	j.Method = "exact"
	if !o.ExactJoint {
		j.Method, j.Directions = "projections", o.Directions
		eo.Directions = o.Directions
	}
	res, err := dependence.EnergyTestJoint(x[0], x[1], eo)
	if err != nil {
		return j, fmt.Errorf("drift: joint test of %v: %w", names, err)
	}
	if !o.ExactJoint {
		j.Projected = res.Statistic
	}
	j.PValue, j.Rows, j.Perms = res.PValue, res.Rows, res.N
	return j, nil
}

// stopped is Test's error once ctx (when set) is done, else nil.
func stopped(ctx context.Context) error {
	if ctx == nil || ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("drift: stopped: %w", context.Cause(ctx))
}

// nameID is a test's identity for its permutation stream: the feature
// name hashed, so that a feature's p-value does not depend on the others.
func nameID(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

func fieldNames(s *arrow.Schema) []string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return names
}

// readColumn reads feature name from both samples. A column absent from
// one side is an error when named (strict) and a skip otherwise; so is a
// type this package cannot test. A side with no value skips the feature.
func readColumn(name string, ref, cur []arrow.Record, strict bool) (*column, error) {
	c := &column{name: name}
	var kinds [2]string
	dict := map[string]int32{}
	for s, recs := range [2][]arrow.Record{ref, cur} {
		side := [2]string{"reference", "current sample"}[s]
		for _, r := range recs {
			idx := r.Schema().FieldIndices(name)
			if len(idx) == 0 {
				if strict {
					return nil, fmt.Errorf("drift: feature %q: missing from the %s", name, side)
				}
				c.skipNote = "missing from the " + side
				return c, nil
			}
			if len(idx) > 1 {
				return nil, fmt.Errorf("drift: feature %q: %d columns of that name in the %s", name, len(idx), side)
			}
			kind, err := appendColumn(c, s, r.Column(idx[0]), dict)
			if err != nil {
				if strict {
					return nil, fmt.Errorf("drift: feature %q in the %s: %w", name, side, err)
				}
				c.skipNote = err.Error()
				return c, nil
			}
			if kinds[s] == "" {
				kinds[s] = kind
			}
			if kinds[s] != kind || (kinds[1-s] != "" && kinds[1-s] != kind) {
				return nil, fmt.Errorf("drift: feature %q: numeric on one side and categorical on the other", name)
			}
		}
	}
	c.cat = kinds[0] == "categorical"
	c.levels = len(dict)
	for s := range 2 {
		if c.present[s] == 0 {
			c.skipNote = "no value in the " + [2]string{"reference", "current sample"}[s]
		}
	}
	return c, nil
}

// appendColumn appends one Arrow column to side s of c and returns its
// kind: "numeric" (integers, floats, booleans as 0/1) or "categorical"
// (strings, string dictionaries; codes from dict, shared by both sides).
func appendColumn(c *column, s int, a arrow.Array, dict map[string]int32) (string, error) {
	n := a.Len()
	num := func(get func(i int) float64) string {
		for i := range n {
			v := math.NaN()
			if a.IsValid(i) {
				v = get(i)
			}
			if !math.IsNaN(v) {
				c.present[s]++
			}
			c.num[s] = append(c.num[s], v)
		}
		return "numeric"
	}
	cat := func(get func(i int) string) string {
		for i := range n {
			code := int32(-1)
			if a.IsValid(i) {
				v := get(i)
				var ok bool
				if code, ok = dict[v]; !ok {
					code = int32(len(dict))
					dict[v] = code
				}
				c.present[s]++
			}
			c.codes[s] = append(c.codes[s], code)
		}
		return "categorical"
	}
	switch a := a.(type) {
	case *array.Float64:
		return num(func(i int) float64 { return a.Value(i) }), nil
	case *array.Float32:
		return num(func(i int) float64 { return float64(a.Value(i)) }), nil
	case *array.Int64:
		return num(func(i int) float64 { return float64(a.Value(i)) }), nil
	case *array.Int32:
		return num(func(i int) float64 { return float64(a.Value(i)) }), nil
	case *array.Int16:
		return num(func(i int) float64 { return float64(a.Value(i)) }), nil
	case *array.Int8:
		return num(func(i int) float64 { return float64(a.Value(i)) }), nil
	case *array.Uint64:
		return num(func(i int) float64 { return float64(a.Value(i)) }), nil
	case *array.Uint32:
		return num(func(i int) float64 { return float64(a.Value(i)) }), nil
	case *array.Uint16:
		return num(func(i int) float64 { return float64(a.Value(i)) }), nil
	case *array.Uint8:
		return num(func(i int) float64 { return float64(a.Value(i)) }), nil
	case *array.Boolean:
		return num(func(i int) float64 {
			if a.Value(i) {
				return 1
			}
			return 0
		}), nil
	case *array.String:
		return cat(a.Value), nil
	case *array.LargeString:
		return cat(a.Value), nil
	case *array.Dictionary:
		if d, ok := a.Dictionary().(*array.String); ok {
			return cat(func(i int) string { return d.Value(a.GetValueIndex(i)) }), nil
		}
		return "", fmt.Errorf("dictionary of %s is not supported", a.Dictionary().DataType())
	}
	return "", fmt.Errorf("type %s is not supported (want numbers, booleans or strings)", a.DataType())
}
