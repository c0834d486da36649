package cli

import (
	"strings"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/synth"
)

func runGen(args []string, env Env) error {
	fs := newFlagSet("gen", "NAME --n N --seed S --out FILE [--p P]\n\nNAME is one of: "+strings.Join(synth.Names(), ", "), env)
	n := fs.Int("n", 1000, "number of rows")
	seed := fs.Uint64("seed", 1, "random seed")
	p := fs.Int("p", 0, "dimension for trunk and parity (0 = the data set's default)")
	out := fs.String("out", "", "output file: .parquet, .arrow, .arrows, .csv or .csv.gz")
	clean := fs.Bool("clean", false, "swissroll: also write the noise-free responses y0_true..y2_true")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want exactly one data set name (one of %s), got %d", strings.Join(synth.Names(), ", "), len(pos))
	}
	if *out == "" {
		return usagef("--out is required")
	}
	if err := checkDataOut("--out", *out, false); err != nil {
		return err
	}
	if *n < 1 {
		return usagef("--n must be positive, got %d", *n)
	}
	fr, err := synth.Generate(pos[0], synth.Options{N: *n, Seed: *seed, P: *p, Clean: *clean})
	if err != nil { // an unknown name or a setting the data set refuses
		return usageError{err}
	}
	if err := writeRecord(*out, fr.ToRecord(memory.DefaultAllocator)); err != nil {
		return err
	}
	// swissroll's responses are columns of fr, not features
	noisy, noiseFree := synth.Responses(pos[0], *clean)
	rep := map[string]any{
		"data": pos[0], "rows": fr.NRows, "features": fr.P() - len(noisy) - len(noiseFree), "classes": fr.Classes, "out": *out,
	}
	if noisy != nil {
		rep["responses"] = noisy
	}
	if noiseFree != nil {
		rep["noise_free_responses"] = noiseFree
	}
	return writeJSON(env.Stdout, rep)
}
