package cli

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/drift"
	"github.com/forestd/forestd/lakescore"
	"github.com/forestd/forestd/operators"
)

// runDrift is forestd drift: two-sample energy tests between a reference
// and a current sample, per feature and joint (arrowforest/drift; R
// energy::eqdist.e's statistic, seeded sequential permutation p-values,
// Holm across the family by default). It prints one JSON object and, with
// --out, writes one row per test as a table.
func runDrift(args []string, env Env) error {
	fs := newFlagSet("drift", "--reference PATH --current PATH [--features a,b] [--alpha A] [--adjust holm|bh|none] [--seed S] [--sample N] [--max-rows N] [--max-projected-rows N] [--directions K] [--exact-joint] [--perms N] [--threads T] [--out FILE]", env)
	var ref, cur, features listFlag
	features.split = true
	fs.Var(&ref, "reference", "reference sample: file, directory or glob (repeatable; Parquet, Arrow IPC, CSV; a glob is read as a lake)")
	fs.Var(&cur, "current", "current sample: file, directory or glob (repeatable)")
	fs.Var(&features, "features", "feature columns (comma-separated; default every column of the reference)")
	alpha := fs.Float64("alpha", drift.DefaultAlpha, "level of the family of tests (features and joint)")
	adjust := fs.String("adjust", string(dependence.AdjustHolm), "false-alarm control across the tests: holm, bh or none")
	seed := fs.Uint64("seed", 1, "random seed of the permutations, the projections and the samples")
	sample := fs.Int("sample", 0, "read each side as a lake (hive partitions, globs, --max-memory, --on-error) and test N rows sampled from it; 0 tests every row")
	lf := addLakeFlags(fs)
	maxRows := fs.Int("max-rows", drift.DefaultMaxRows, "pooled rows of the joint statistic (and of --exact-joint): a seeded subsample of each side in proportion above it")
	maxProj := fs.Int("max-projected-rows", drift.DefaultMaxProjectedRows, "pooled rows of the projected joint test (about 8·columns + 768 bytes each): a seeded subsample of each side in proportion above it")
	directions := fs.Int("directions", drift.DefaultDirections, "random directions of the joint test's projected statistic")
	exactJoint := fs.Bool("exact-joint", false, "joint p-value from permutations of eqdist.e itself on --max-rows rows (O(n²) per permutation) instead of the projected statistic over every row")
	perms := fs.Int("perms", 0, "run exactly N permutations per test (0: sequential, stops once the decision is settled)")
	threads := fs.Int("threads", runtime.NumCPU(), "worker threads (same report at any count)")
	out := fs.String("out", "", "also write one row per test (schemas.DriftReport, as in the JSON): .parquet, .arrow, .arrows, .csv or .csv.gz")
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
	case *maxRows < 2 || *maxProj < 2:
		return usagef("--max-rows and --max-projected-rows must be at least 2, got %d and %d", *maxRows, *maxProj)
	case *directions < 1:
		return usagef("--directions must be at least 1, got %d", *directions)
	case *sample < 0:
		return usagef("--sample must be 0 (every row) or positive, got %d", *sample)
	case *perms < 0:
		return usagef("--perms must be 0 (sequential) or positive, got %d", *perms)
	}
	adj, err := dependence.ParseAdjust(*adjust)
	if err != nil {
		return usagef("--adjust: %w", err)
	}
	if err := checkDataOut("--out", *out, false, append(append([]string{}, ref.vals...), cur.vals...)...); err != nil {
		return err
	}
	in := driftInput{lf: lf, n: *sample, seed: *seed, features: features.vals}
	refRecs, err := in.read(ref.vals)
	if err != nil {
		return fmt.Errorf("--reference: %w", err)
	}
	defer release(refRecs)
	curRecs, err := in.read(cur.vals)
	if err != nil {
		return fmt.Errorf("--current: %w", err)
	}
	defer release(curRecs)
	ctx, stop := interruptible() // SIGINT stops the test with one line
	rep, err := drift.Test(refRecs, curRecs, drift.Options{
		Features: features.vals, Alpha: *alpha, Adjust: adj, Seed: *seed, MaxRows: *maxRows, MaxProjectedRows: *maxProj,
		Directions: *directions, ExactJoint: *exactJoint, Perms: *perms, Threads: *threads, Context: ctx,
	})
	stop()
	if err != nil {
		return err
	}
	if *out != "" {
		if err := writeRecord(*out, operators.DriftRecord(rep, memory.DefaultAllocator)); err != nil {
			return fmt.Errorf("--out %s: %w", *out, err)
		}
	}
	return writeJSON(env.Stdout, rep)
}

// driftInput reads one side of forestd drift: files and directories whole
// (readRecords), or, with --sample N or a glob among the paths, as a lake
// (connectors/lake: listing, hive partitions, bounded memory, --on-error)
// of which N rows are sampled (every row without --sample). A lake's
// columns are its files' (partition columns only when --features names
// them).
type driftInput struct {
	lf       *lakeFlags
	n        int
	seed     uint64
	features []string
}

func (in driftInput) read(paths []string) ([]arrow.Record, error) {
	if in.n == 0 && !slices.ContainsFunc(paths, isGlob) {
		_, recs, err := readRecords(paths, nil)
		return recs, err
	}
	lopts, err := in.lf.options(0)
	if err != nil {
		return nil, err
	}
	defer in.lf.limitMemory()()
	_, recs, _, err := lakescore.SampleRecords(context.Background(), paths, "", in.features, len(in.features) > 0,
		lakescore.SampleOptions{N: in.n, Seed: in.seed, Lake: lopts})
	return recs, err
}

// isGlob reports whether p is a glob and no file of that name.
func isGlob(p string) bool {
	if !strings.ContainsAny(p, "*?[") {
		return false
	}
	_, err := os.Stat(p)
	return err != nil
}
