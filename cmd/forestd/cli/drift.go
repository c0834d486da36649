package cli

import (
	"fmt"
	"runtime"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/drift"
	"github.com/forestd/forestd/connectors/files"
)

// runDrift is forestd drift: two-sample energy tests between a reference
// and a current sample, per feature and joint (arrowforest/drift; R
// energy::eqdist.e's statistic, seeded sequential permutation p-values,
// Holm across the family by default). It prints one JSON object and, with
// --out, writes one row per test as a table.
func runDrift(args []string, env Env) error {
	fs := newFlagSet("drift", "--reference PATH --current PATH [--features a,b] [--alpha A] [--adjust holm|bh|none] [--seed S] [--max-rows N] [--perms N] [--threads T] [--out FILE]", env)
	var ref, cur, features listFlag
	features.split = true
	fs.Var(&ref, "reference", "reference sample: file or directory (repeatable; Parquet, Arrow IPC, CSV)")
	fs.Var(&cur, "current", "current sample: file or directory (repeatable)")
	fs.Var(&features, "features", "feature columns (comma-separated; default every column of the reference)")
	alpha := fs.Float64("alpha", drift.DefaultAlpha, "level of the family of tests (features and joint)")
	adjust := fs.String("adjust", string(dependence.AdjustHolm), "false-alarm control across the tests: holm, bh or none")
	seed := fs.Uint64("seed", 1, "random seed of the permutations and of the joint subsample")
	maxRows := fs.Int("max-rows", drift.DefaultMaxRows, "pooled rows of the joint test (a seeded subsample of each side in proportion)")
	perms := fs.Int("perms", 0, "run exactly N permutations per test (0: sequential, stops once the decision is settled)")
	threads := fs.Int("threads", runtime.NumCPU(), "worker threads (same report at any count)")
	out := fs.String("out", "", "also write one row per test: .parquet, .arrow, .arrows, .csv or .csv.gz")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q: give the samples with --reference and --current", pos[0])
	}
	switch {
	case len(ref.vals) == 0:
		return usagef("--reference is required")
	case len(cur.vals) == 0:
		return usagef("--current is required")
	case !(*alpha > 0 && *alpha < 1):
		return usagef("--alpha must be in (0, 1), got %v", *alpha)
	case *maxRows < 2:
		return usagef("--max-rows must be at least 2, got %d", *maxRows)
	case *perms < 0:
		return usagef("--perms must be 0 (sequential) or positive, got %d", *perms)
	case *threads < 1:
		return checkThreads(*threads)
	}
	adj, err := dependence.ParseAdjust(*adjust)
	if err != nil {
		return usagef("--adjust: %w", err)
	}
	if err := checkDataOut("--out", *out, false, append(append([]string{}, ref.vals...), cur.vals...)...); err != nil {
		return err
	}
	_, refRecs, err := readRecords(ref.vals, nil)
	if err != nil {
		return fmt.Errorf("--reference: %w", err)
	}
	defer release(refRecs)
	_, curRecs, err := readRecords(cur.vals, nil)
	if err != nil {
		return fmt.Errorf("--current: %w", err)
	}
	defer release(curRecs)
	rep, err := drift.Test(refRecs, curRecs, drift.Options{
		Features: features.vals, Alpha: *alpha, Adjust: adj, Seed: *seed,
		MaxRows: *maxRows, Perms: *perms, Threads: *threads,
	})
	if err != nil {
		return err
	}
	if *out != "" {
		schema, rec := driftTable(rep)
		defer rec.Release()
		if err := writeData(*out, schema, []arrow.Record{rec}, files.WriteOptions{}); err != nil {
			return fmt.Errorf("--out %s: %w", *out, err)
		}
	}
	return writeJSON(env.Stdout, rep)
}

// driftTable is the report as one row per test (the joint test's name is
// "(joint)").
func driftTable(rep drift.Report) (*arrow.Schema, arrow.Record) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "test", Type: arrow.BinaryTypes.String},
		{Name: "kind", Type: arrow.BinaryTypes.String},
		{Name: "statistic", Type: arrow.PrimitiveTypes.Float64},
		{Name: "p_value", Type: arrow.PrimitiveTypes.Float64},
		{Name: "p_adjusted", Type: arrow.PrimitiveTypes.Float64},
		{Name: "drift", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	add := func(name, kind string, s, p, pa float64, d bool) {
		b.Field(0).(*array.StringBuilder).Append(name)
		b.Field(1).(*array.StringBuilder).Append(kind)
		b.Field(2).(*array.Float64Builder).Append(s)
		b.Field(3).(*array.Float64Builder).Append(p)
		b.Field(4).(*array.Float64Builder).Append(pa)
		b.Field(5).(*array.BooleanBuilder).Append(d)
	}
	for _, f := range rep.Features {
		add(f.Name, f.Kind, f.Statistic, f.PValue, f.PAdjusted, f.Drift)
	}
	if j := rep.Joint; j != nil {
		add("(joint)", "joint", j.Statistic, j.PValue, j.PAdjusted, j.Drift)
	}
	return schema, b.NewRecord()
}
