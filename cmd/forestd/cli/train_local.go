package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/operators"
)

// localFlags are train's flags for --forest lfs (dissertation ch. 4) and
// --forest fdm (RF_FDM, dissertation §6.4).
type localFlags struct {
	lfsSize, lfsMin, lfsK, lfsComps *int
	lfsRandom                       *bool
	lfsDistance                     *string

	fdmMap, fdmGroups, fdmMarginal, fdmSearch, fdmAdjust *string
	fdmCands, fdmMaxPerms                                *int
	fdmAlpha                                             *float64
	lfsGraph                                             *string
}

func addLocalFlags(fs *flags) *localFlags {
	return &localFlags{
		lfsSize:     fs.Int("lfs-size", 0, "lfs: window size, features (learnt locality) or patch side (with --grid/--series/--cyclic); fixed unless --lfs-random (default: all, random)"),
		lfsMin:      fs.Int("lfs-min", 0, "lfs: smallest window with --lfs-random (default a quarter of --lfs-size)"),
		lfsRandom:   fs.Bool("lfs-random", false, "lfs: draw each tree's window size from --lfs-min..--lfs-size (LFS-random)"),
		lfsDistance: fs.String("lfs-distance", "", "lfs without a layout: feature distance corr (1-rho^2), euclidean, pca or geodesic (default); subspace = random features (baseline)"),
		lfsK:        fs.Int("lfs-k", 0, "lfs: neighbours per feature in the geodesic k-NN graph (default 8)"),
		lfsComps:    fs.Int("lfs-components", 0, "lfs: principal components of the pca distance (default 20)"),
		lfsGraph:    fs.String("lfs-graph", "", "lfs without a layout: also write the learnt feature-locality graph (each feature's --lfs-k nearest features) as an Arrow edge table to this file"),
		fdmMap:      fs.String("fdm-map", "", "fdm: mapping of each feature group per tree, rp (random projection, default) or drl (distance to a random landmark)"),
		fdmCands:    fs.Int("fdm-candidates", 0, "fdm: random mappings drawn per group and tree, the best |group| kept by gCor (default 10)"),
		fdmGroups:   fs.String("fdm-groups", "", "fdm: feature groups as 'a,b;c,d,e' (default: found by the MDS/SDS search)"),
		fdmMarginal: fs.String("fdm-marginal", "", "fdm: marginally dependent features kept as they are, 'x,y' (with --fdm-groups)"),
		fdmSearch:   fs.String("fdm-search", "", "fdm: search method for the groups (default mdc-bottomup)"),
		fdmAdjust:   fs.String("fdm-adjust", "", "fdm: false-discovery control of the search, holm (default), bh or none (every test at --fdm-alpha alone)"),
		fdmAlpha:    fs.Float64("fdm-alpha", 0, "fdm: level of the search (default 0.05; with --fdm-adjust none, 0 means no permutation may reach a dependent set's statistic, as the dissertation applies FDM, §6.5.2)"),
		fdmMaxPerms: fs.Int("fdm-max-perms", 0, "fdm: most permutations per test in the search (default 200000, 5000 with --fdm-adjust none)"),
	}
}

// apply copies the flags into p, naming features by index in fr.
func (l *localFlags) apply(p *forest.Params, fr *frame.Frame) error {
	size, lo := *l.lfsSize, *l.lfsMin
	if size < 0 || lo < 0 || *l.lfsK < 0 || *l.lfsComps < 0 {
		return usagef("--lfs-size, --lfs-min, --lfs-k and --lfs-components must not be negative")
	}
	if lo != 0 && !*l.lfsRandom {
		return usagef("--lfs-min needs --lfs-random")
	}
	if size != 0 && !*l.lfsRandom {
		lo = size // a fixed window
	}
	p.LFSSize, p.LFSMin, p.LFSDistance, p.LFSK, p.LFSComponents = size, lo, *l.lfsDistance, *l.lfsK, *l.lfsComps
	if *l.lfsRandom && p.Forest != "lfs" {
		return usagef("--lfs-random applies to --forest lfs only")
	}
	if *l.lfsGraph != "" && (p.Forest != "lfs" || p.Layout != "" || p.LFSDistance == "subspace") {
		return usagef("--lfs-graph needs --forest lfs with a learnt locality (no layout, no subspace)")
	}
	p.FDMMap, p.FDMCandidates, p.FDMSearch, p.FDMAlpha, p.FDMMaxPerms = *l.fdmMap, *l.fdmCands, *l.fdmSearch, *l.fdmAlpha, *l.fdmMaxPerms
	if *l.fdmAdjust != "" {
		adj, err := dependence.ParseAdjust(*l.fdmAdjust)
		if err != nil {
			return usagef("--fdm-adjust: %w", err)
		}
		p.FDMAdjust = string(adj)
	}
	if *l.fdmMarginal != "" && *l.fdmGroups == "" {
		return usagef("--fdm-marginal needs --fdm-groups")
	}
	var err error
	if p.FDMGroups, err = featureIndexSets(*l.fdmGroups, fr, "--fdm-groups"); err != nil {
		return err
	}
	if p.FDMMarginal, err = featureIndexSets(*l.fdmMarginal, fr, "--fdm-marginal"); err != nil {
		return err
	}
	return nil
}

// featureIndexSets turns "a,b;c" (feature names) into "0,1;2" (indices).
func featureIndexSets(s string, fr *frame.Frame, flag string) (string, error) {
	if strings.TrimSpace(s) == "" {
		return "", nil
	}
	var sets []string
	for _, set := range strings.Split(s, ";") {
		var idx []string
		for _, name := range strings.Split(set, ",") {
			name = strings.TrimSpace(name)
			j := fr.FeatureIndex(name)
			if j < 0 {
				return "", usagef("%s: no feature column %q", flag, name)
			}
			idx = append(idx, strconv.Itoa(j))
		}
		sets = append(sets, strings.Join(idx, ","))
	}
	return strings.Join(sets, ";"), nil
}

// checkGraphOut checks --lfs-graph, an output, before any work
// (checkDataOut), and that it is not the model.
func (l *localFlags) checkGraphOut(out string, inputs []string) error {
	g := *l.lfsGraph
	if g == "" {
		return nil
	}
	if err := checkDataOut("--lfs-graph", g, false, inputs...); err != nil {
		return err
	}
	return distinctOuts("--out", out, "--lfs-graph", g)
}

// writeGraph writes the locality graph of a trained lfs forest when
// --lfs-graph is set: every feature's LFSK nearest features (8 by
// default) under the forest's distance, as schemas.LocalityEdges.
func (l *localFlags) writeGraph(f *forest.Forest, fr *frame.Frame) error {
	if *l.lfsGraph == "" {
		return nil
	}
	rec, err := operators.LocalityEdges(memory.DefaultAllocator, f, fr)
	if err != nil {
		return err
	}
	if err := writeRecord(*l.lfsGraph, rec); err != nil {
		return fmt.Errorf("--lfs-graph: %w", err)
	}
	return nil
}
