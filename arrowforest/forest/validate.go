package forest

import (
	"fmt"
	"math/bits"
	"sort"
	"unicode/utf8"

	"github.com/forestd/forestd/arrowforest/frame"
)

// MaxUnnamedClasses is the budget of classes a classification forest may
// list that no leaf names: Validate refuses a forest whose unnamed classes
// exceed both this and unnamedClassesPerNamed times the classes its leaves
// name. A class no leaf names is one whose training rows were out of bag
// for every tree (a rare class, few trees); it can never be predicted, yet
// scoring holds a probability for it in every row of a block
// (Compiled.BlockBytes), so a model listing 2,000,000 classes whose leaves
// use two took 2.6 GB to score 400 rows. A trained forest has such classes
// only by chance, a few at a time: with bootstrap each class is in bag for
// some tree unless all its rows were drawn out for all of them.
const (
	MaxUnnamedClasses      = 1024
	unnamedClassesPerNamed = 4
)

// Validate checks everything a forest must satisfy before it is encoded,
// scored or inspected, and is the one statement of those invariants
// (ARCHITECTURE.md, Formats; the model decoders call it once per load):
//   - a kind, a task, and classes (classification, distinct names) or
//     none (regression, with valid Targets when it has several outputs);
//   - distinct feature names; levels and importances, when present, one
//     per feature; importance kinds not empty; every name valid UTF-8;
//   - at least one tree, each valid for the features, classes and
//     outputs (tree.Validate: a tree, not a graph; finite leaves;
//     class frequencies that are distributions);
//   - classes bounded by what the leaves name (MaxUnnamedClasses);
//   - a consistent rank map, mapping, derived inputs, tuning record and
//     dRF part.
//
// It never panics, whatever f holds, and takes time linear in the size of
// the forest. Errors name the tree, node, value or name at fault.
func (f *Forest) Validate() error {
	if err := f.validateGrown(); err != nil {
		return err
	}
	return f.validateTuning(len(f.Trees))
}

// validateGrown is Validate but for the tuning record, which Params.Tune
// adds after the forest's trees are grown and checked (session.finish).
func (f *Forest) validateGrown() error {
	if f == nil {
		return fmt.Errorf("forest: nil forest")
	}
	if f.Kind == "" {
		return fmt.Errorf("forest: kind is empty")
	}
	if err := f.validateNames(); err != nil {
		return err
	}
	k, p := len(f.Classes), len(f.Features)
	if len(f.Trees) == 0 {
		return fmt.Errorf("forest: no trees")
	}
	for i, t := range f.Trees {
		if t == nil {
			return fmt.Errorf("forest: tree %d is missing", i)
		}
		if err := t.ValidateOutputs(p, k, f.NumOutputs()); err != nil {
			return fmt.Errorf("forest: tree %d: %w", i, err)
		}
		if k == 0 && len(t.LeafClass) != 0 {
			return fmt.Errorf("forest: tree %d: a regression tree with leaf classes", i)
		}
	}
	k2 := (k + 63) / 64
	named := make([]uint64, k2)
	for _, t := range f.Trees {
		for _, c := range t.LeafClass {
			named[c/64] |= 1 << (c % 64)
		}
	}
	return f.validateRest(named)
}

// validateHeader is Validate for a forest whose trees are held apart, in
// a checked Compact of trees trees whose leaves name the classes in the
// bitmap named (CompileCompact). The tuning record is checked too.
func (f *Forest) validateHeader(trees int, named []uint64) error {
	if f.Kind == "" {
		return fmt.Errorf("forest: kind is empty")
	}
	if err := f.validateNames(); err != nil {
		return err
	}
	if trees == 0 {
		return fmt.Errorf("forest: no trees")
	}
	if err := f.validateRest(named); err != nil {
		return err
	}
	return f.validateTuning(trees)
}

// validateRest is the part of Validate after the trees: the class budget
// (named: a bitmap of the classes the leaves name), distinct classes, the
// rank map, mapping, derived inputs and dRF part.
func (f *Forest) validateRest(named []uint64) error {
	p := len(f.Features)
	// classes: first how many (a bitmap), then whether distinct (a map)
	if err := f.validateClassBudget(named); err != nil {
		return err
	}
	if err := distinct("class", f.Classes); err != nil {
		return err
	}
	if f.Rank != nil {
		if err := f.Rank.Validate(p); err != nil {
			return fmt.Errorf("forest: %w", err)
		}
	}
	for _, validate := range []func() error{f.validateMapping, f.validateDerived, f.ValidateDRF} {
		if err := validate(); err != nil {
			return err
		}
	}
	return nil
}

// validateNames checks the task against classes and targets, and the
// names: features and classes distinct, levels and importances one per
// feature, everything valid UTF-8.
func (f *Forest) validateNames() error {
	switch f.Task {
	case frame.TaskClassification:
		if len(f.Classes) == 0 {
			return fmt.Errorf("forest: classification forest without classes")
		}
		if f.Targets != nil {
			return fmt.Errorf("forest: classification forest with targets %q", f.Targets)
		}
	case frame.TaskRegression:
		if len(f.Classes) != 0 {
			return fmt.Errorf("forest: regression forest with %d classes", len(f.Classes))
		}
		if err := f.validateTargets(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("forest: task %q is neither classification nor regression", f.Task)
	}
	if len(f.Features) == 0 {
		return fmt.Errorf("forest: no features")
	}
	if err := distinct("feature", f.Features); err != nil {
		return err
	}
	p := len(f.Features)
	if f.Levels != nil && len(f.Levels) != p {
		return fmt.Errorf("forest: %d level lists for %d features", len(f.Levels), p)
	}
	kinds := make([]string, 0, len(f.Importances))
	for kind := range f.Importances {
		kinds = append(kinds, kind)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		if kind == "" {
			return fmt.Errorf("forest: importance with an empty kind")
		}
		if n := len(f.Importances[kind]); n != p {
			return fmt.Errorf("forest: importance %q has %d values for %d features", kind, n, p)
		}
	}
	check := func(what string, names ...string) error {
		for _, s := range names {
			if !utf8.ValidString(s) {
				return fmt.Errorf("forest: %s %q is not valid UTF-8", what, s)
			}
		}
		return nil
	}
	if err := check("kind", string(f.Kind)); err != nil {
		return err
	}
	if err := check("label", f.LabelName); err != nil {
		return err
	}
	if err := check("feature", f.Features...); err != nil {
		return err
	}
	for _, l := range f.Levels {
		if err := check("level", l...); err != nil {
			return err
		}
	}
	if err := check("class", f.Classes...); err != nil {
		return err
	}
	return check("importance kind", kinds...)
}

// distinct refuses a name listed twice: scoring reads features by name
// and writes a column per class, so each must be one.
func distinct(what string, names []string) error {
	at := make(map[string]int, len(names))
	for i, s := range names {
		if j, dup := at[s]; dup {
			return fmt.Errorf("forest: %s %q is listed twice (positions %d and %d)", what, s, j, i)
		}
		at[s] = i
	}
	return nil
}

// validateClassBudget refuses a classification forest listing more
// classes that no leaf names than MaxUnnamedClasses and
// unnamedClassesPerNamed allow. The trees must be valid.
func (f *Forest) validateClassBudget(named []uint64) error {
	k := len(f.Classes)
	if k <= MaxUnnamedClasses {
		return nil
	}
	n := 0
	for _, w := range named {
		n += bits.OnesCount64(w)
	}
	if unnamed := k - n; unnamed > max(MaxUnnamedClasses, unnamedClassesPerNamed*n) {
		return fmt.Errorf("forest: %d classes but the leaves name only %d: at most %d classes that no leaf names are allowed (forest.MaxUnnamedClasses)",
			k, n, max(MaxUnnamedClasses, unnamedClassesPerNamed*n))
	}
	return nil
}
