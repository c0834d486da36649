package operators

import (
	"fmt"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/scoring"
)

// SelectOptions configure SelectRecords.
type SelectOptions struct {
	// Keep names input columns copied first, unchanged (an id); each must
	// be in the input.
	Keep []string
	// Label names the label column, copied after the selected columns
	// unless already copied; it must be in the input when set.
	Label string
	// Passthrough names input columns copied last when the input has them
	// (a key, the label of a labelled batch) and skipped when it has not.
	Passthrough []string
	// Names and Levels, when set, are the training frame's feature names
	// and category levels, so that categorical inputs of a group are coded
	// as they were when the mapping was learnt.
	Names  []string
	Levels [][]string
	// Mem allocates the mapped columns (nil: memory.DefaultAllocator).
	Mem memory.Allocator
}

// CheckSelectNames fails when a Keep column or the Label is named like a
// mapped column of t: the output holds one column of a name, so the input
// column or the mapped one would be lost. The mapping's own names are
// fdm.Transform.Validate's (no mapped column named like an input feature).
// Callers that know their options before any data arrives (the
// forestd_select processor) call it at start; SelectRecords calls it too.
// The error names the column and the option.
func CheckSelectNames(t *fdm.Transform, opts SelectOptions) error {
	for g, gr := range t.Groups {
		for _, o := range gr.Outputs {
			if slices.Contains(opts.Keep, o.Name) {
				return fmt.Errorf("keep: column %q is named like a mapped column of the mapping (group %d)", o.Name, g+1)
			}
			if opts.Label != "" && o.Name == opts.Label {
				return fmt.Errorf("label: column %q is named like a mapped column of the mapping (group %d)", o.Name, g+1)
			}
		}
	}
	return nil
}

// SelectRecords reduces recs, which share schema, to the columns a feature
// selection keeps, and returns one output record per input record: the
// Keep columns, the marginally dependent features as they are, the
// FDM-mapped columns of each group (float64), then the label and the
// passthrough columns (dissertation §6.3: X' = [X_{S_m}, f(X_{S_1}; θ*_1),
// …]). It is the one mapping of records behind forestd select (--apply
// included), the daemon's select stage and the Redpanda Connect
// forestd_select processor. A column appears once, where it is first
// named; a mapped column named like an input column it would sit beside
// (a Keep column or the Label, CheckSelectNames; a passthrough column the
// input has) is an error. Every error is about the input and wraps scoring.ErrInput. The
// caller releases the records.
func SelectRecords(t *fdm.Transform, schema *arrow.Schema, recs []arrow.Record, opts SelectOptions) (*arrow.Schema, []arrow.Record, error) {
	mem := opts.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	switch {
	case t == nil: // Analysis.Transform when the search selected nothing
		return nil, nil, inputErr("no mapping: the analysis selected no features")
	case schema == nil:
		return nil, nil, inputErr("no input schema")
	}
	for i, r := range recs {
		if r == nil {
			return nil, nil, inputErr("record %d is nil", i)
		}
	}
	if err := CheckSelectNames(t, opts); err != nil {
		return nil, nil, scoring.InputError(err)
	}
	inputs := t.Inputs()
	for _, n := range inputs {
		if len(schema.FieldIndices(n)) == 0 {
			return nil, nil, inputErr("the input has no column %q, which the mapping reads", n)
		}
	}
	var lv [][]string
	if opts.Levels != nil {
		lv = make([][]string, len(inputs))
		for a, n := range inputs {
			if j := slices.Index(opts.Names, n); j >= 0 {
				lv[a] = opts.Levels[j]
			}
		}
	}
	all, err := frame.FeaturesFromRecords(schema, recs, inputs, lv)
	if err != nil {
		return nil, nil, scoring.InputError(fmt.Errorf("mapping input: %w", err))
	}
	mapped, err := t.Columns(all)
	if err != nil {
		return nil, nil, scoring.InputError(err)
	}
	var fields []arrow.Field
	var src []int // input column per output field; -1 for mapped columns
	used := map[string]bool{}
	add := func(name, what string, optional bool) error {
		if used[name] {
			return nil
		}
		ix := schema.FieldIndices(name)
		if len(ix) == 0 {
			if optional {
				return nil
			}
			return inputErr("%s: no column %q in the input", what, name)
		}
		used[name] = true
		fields, src = append(fields, schema.Field(ix[0])), append(src, ix[0])
		return nil
	}
	for _, k := range opts.Keep {
		if err := add(k, "kept column", false); err != nil {
			return nil, nil, err
		}
	}
	for _, m := range t.Marginal {
		if err := add(m, "marginal feature", false); err != nil {
			return nil, nil, err
		}
	}
	firstMapped := len(fields)
	for _, g := range t.Groups {
		for _, o := range g.Outputs {
			if used[o.Name] || slices.Contains(opts.Passthrough, o.Name) && len(schema.FieldIndices(o.Name)) > 0 {
				return nil, nil, inputErr("mapped column %q collides with an output column", o.Name)
			}
			used[o.Name] = true
			fields, src = append(fields, arrow.Field{Name: o.Name, Type: arrow.PrimitiveTypes.Float64}), append(src, -1)
		}
	}
	if opts.Label != "" {
		if err := add(opts.Label, "label", false); err != nil {
			return nil, nil, err
		}
	}
	for _, p := range opts.Passthrough {
		if err := add(p, "passthrough column", true); err != nil {
			return nil, nil, err
		}
	}
	outSchema := arrow.NewSchema(fields, nil)
	out := make([]arrow.Record, 0, len(recs))
	row := 0
	for _, r := range recs {
		n := int(r.NumRows())
		cols := make([]arrow.Array, len(fields))
		for c, s := range src {
			if s >= 0 {
				cols[c] = r.Column(s)
				cols[c].Retain()
				continue
			}
			b := array.NewFloat64Builder(mem)
			b.AppendValues(mapped[c-firstMapped][row:row+n], nil)
			cols[c] = b.NewArray()
			b.Release()
		}
		out = append(out, array.NewRecord(outSchema, cols, int64(n)))
		for _, a := range cols {
			a.Release()
		}
		row += n
	}
	return outSchema, out, nil
}
