package fdm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/frame"
)

// Format is the format tag of a mapping file.
const Format = "forestd-fdm/1"

// maxFileBytes bounds what ReadTransform accepts.
const maxFileBytes = 64 << 20

// Transform is a fitted FDM_RF mapping F(X; Θ*) (dissertation §6.3): the
// marginally dependent features pass through, each group's selected
// mappings add one column each. It names features, never positions, so it
// applies to any data that has the columns, and it is what a mapping file
// holds (JSON; see WriteTo and ReadTransform).
type Transform struct {
	Format     string `json:"format"`
	Map        string `json:"map"`
	Candidates int    `json:"candidates"`
	Seed       uint64 `json:"seed"`
	// Select is the statistic the mappings were ranked by: "" or "gcor"
	// (a class label, eq. 6.2), "dcor" (a numeric label).
	Select   string   `json:"select,omitempty"`
	Marginal []string `json:"marginal"`
	Groups   []Group  `json:"groups"`
}

// Group is one mapped feature group with its selected mappings.
type Group struct {
	Features []string `json:"features"`
	// Kind, PValue and PAdjusted describe how the group was found
	// ("mds"/"sds", the joint permutation p-value and that p-value adjusted
	// for the search's family, on the scale of its α), when it came from a
	// search.
	Kind      string   `json:"kind,omitempty"`
	PValue    *float64 `json:"p_value,omitempty"`
	PAdjusted *float64 `json:"p_adjusted,omitempty"`
	Outputs   []Output `json:"outputs"`
}

// Output is one mapped column: weights r (rp) or a landmark (drl), one
// value per group feature, and the gCor_n (class label) or dCor_n
// (numeric label, Transform.Select "dcor") it was selected with.
type Output struct {
	Name     string  `json:"name"`
	Weights  Numbers `json:"weights,omitempty"`
	Landmark Numbers `json:"landmark,omitempty"`
	GCor     float64 `json:"gcor"`
	DCor     float64 `json:"dcor,omitempty"`
}

// Numbers is a list of parameters in a mapping file: encoding/json would
// read a null element as 0, silently changing every mapped value, so a
// null is an error.
type Numbers []float64

// UnmarshalJSON reads a JSON array of numbers, refusing null elements.
func (n *Numbers) UnmarshalJSON(b []byte) error {
	var ps []*float64
	if err := json.Unmarshal(b, &ps); err != nil {
		return err
	}
	out := make(Numbers, len(ps))
	for i, p := range ps {
		if p == nil {
			return fmt.Errorf("parameter %d is null", i+1)
		}
		out[i] = *p
	}
	*n = out
	return nil
}

// OutputName is the name of mapped column i (1-based) of group g (1-based):
// fdm_g<g>_<i>. Fit names a mapping's columns so unless the frame it
// learns on already has columns named so (the mapped columns of an earlier
// selection, analysed again), when it takes the first of the prefixes
// fdm2, fdm3, … under which none of its columns is (outputPrefix).
func OutputName(g, i int) string { return outputName("fdm", g, i) }

func outputName(prefix string, g, i int) string {
	return prefix + "_g" + strconv.Itoa(g) + "_" + strconv.Itoa(i)
}

// outputPrefix is the prefix of the mapped columns Fit learns on fr:
// "fdm", or the first of "fdm2", "fdm3", … with which no column of fr —
// feature, label or target — is named like a mapped column, so that the
// mapped data never holds two columns of one name.
func outputPrefix(fr *frame.Frame) string {
	taken := func(prefix string) bool {
		for _, names := range [][]string{fr.Names, {fr.LabelName}, fr.Targets} {
			for _, n := range names {
				if hasOutputName(prefix, n) {
					return true
				}
			}
		}
		return false
	}
	prefix := "fdm"
	for l := 2; taken(prefix); l++ {
		prefix = "fdm" + strconv.Itoa(l)
	}
	return prefix
}

// IsOutputName reports whether name is a name OutputName gives
// ("fdm_g<g>_<i>", g and i positive and without leading zeros): a column
// so named would clash with a mapped column of any mapping Fit learns with
// that many groups and outputs.
func IsOutputName(name string) bool { return hasOutputName("fdm", name) }

// hasOutputName reports whether name is outputName(prefix, g, i) for some
// positive g and i.
func hasOutputName(prefix, name string) bool {
	rest, ok := strings.CutPrefix(name, prefix+"_g")
	if !ok {
		return false
	}
	g, i, ok := strings.Cut(rest, "_")
	return ok && positive(g) && positive(i)
}

// positive reports whether s is a positive decimal integer as strconv.Itoa
// writes it.
func positive(s string) bool {
	return s != "" && s[0] != '0' && strings.Trim(s, "0123456789") == ""
}

// Fit learns the FDM_RF mapping on a labelled frame (§6.3): for every group
// of the plan it draws opts.Candidates mappings from a stream seeded by seed
// and keeps the best |G| by gCor_n over all rows (eq. 6.2), or by dCor_n
// when the label is numeric (one regression target).
func Fit(fr *frame.Frame, plan Plan, opts Options, seed uint64) (*Transform, error) {
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	if err := fr.Validate(); err != nil {
		return nil, err
	}
	lab, err := LabelOf(fr)
	if err != nil {
		return nil, err
	}
	if err := plan.Validate(fr.P()); err != nil {
		return nil, err
	}
	plan = plan.sorted()
	t := &Transform{Format: Format, Map: opts.Map, Candidates: opts.Candidates, Seed: seed, Marginal: []string{}, Groups: []Group{}}
	if lab.IsNumeric() {
		t.Select = string(dependence.StatDCor)
	}
	for _, j := range plan.Marginal {
		t.Marginal = append(t.Marginal, fr.Names[j])
	}
	rows := make([]int32, fr.NRows)
	for i := range rows {
		rows[i] = int32(i)
	}
	rng := rand.New(rand.NewPCG(seed, 0xfd3))
	var sel selector
	prefix := outputPrefix(fr)
	for g, grp := range plan.Groups {
		gr := Group{}
		for _, j := range grp {
			gr.Features = append(gr.Features, fr.Names[j])
		}
		for i, mp := range sel.best(rng, opts.Map, fr.Cols, rows, labelsOf(lab), grp, opts.Candidates, opts.keep(len(grp))) {
			o := Output{Name: outputName(prefix, g+1, i+1), GCor: mp.GCor, DCor: mp.DCor}
			if math.IsInf(o.GCor, -1) {
				o.GCor = 0
			}
			if math.IsInf(o.DCor, -1) {
				o.DCor = 0
			}
			if opts.Map == MapRP {
				o.Weights = mp.Theta
			} else {
				o.Landmark = mp.Theta
			}
			gr.Outputs = append(gr.Outputs, o)
		}
		t.Groups = append(t.Groups, gr)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// Validate checks a transform as a reader must: the format tag, the
// mapping kind, non-empty and unique names (no output may shadow a
// passed-through feature or be named like any input feature), one finite
// parameter per group feature.
func (t *Transform) Validate() error {
	if t.Format != Format {
		return fmt.Errorf("fdm: mapping format %q, want %q", t.Format, Format)
	}
	if t.Map != MapRP && t.Map != MapDRL {
		return fmt.Errorf("fdm: mapping kind %q (want rp or drl)", t.Map)
	}
	if t.Candidates < 0 {
		return fmt.Errorf("fdm: candidates %d is negative", t.Candidates)
	}
	if t.Select != "" && t.Select != string(dependence.StatGCor) && t.Select != string(dependence.StatDCor) {
		return fmt.Errorf("fdm: selection statistic %q (want gcor or dcor)", t.Select)
	}
	inputs := map[string]bool{}
	outputs := map[string]bool{}
	groupOf := map[string]int{} // group feature → its group
	for _, n := range t.Marginal {
		if n == "" || inputs[n] {
			return fmt.Errorf("fdm: marginal feature %q is empty or repeated", n)
		}
		inputs[n], outputs[n] = true, true
	}
	for g, gr := range t.Groups {
		if len(gr.Features) == 0 || len(gr.Outputs) == 0 {
			return fmt.Errorf("fdm: group %d has no features or no outputs", g+1)
		}
		for _, n := range gr.Features {
			if n == "" || inputs[n] {
				return fmt.Errorf("fdm: group %d feature %q is empty or in two sets", g+1, n)
			}
			inputs[n] = true
			groupOf[n] = g
		}
		for _, o := range gr.Outputs {
			if o.Name == "" || outputs[o.Name] {
				return fmt.Errorf("fdm: group %d output %q is empty or repeated", g+1, o.Name)
			}
			outputs[o.Name] = true
			theta, other := o.Weights, o.Landmark
			if t.Map == MapDRL {
				theta, other = o.Landmark, o.Weights
			}
			if len(theta) != len(gr.Features) || len(other) != 0 {
				return fmt.Errorf("fdm: output %q has %d parameters for %d features of a %s mapping", o.Name, len(theta), len(gr.Features), t.Map)
			}
			for _, v := range theta {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("fdm: output %q has a non-finite parameter", o.Name)
				}
			}
			if math.IsNaN(o.GCor) || math.IsInf(o.GCor, 0) || math.IsNaN(o.DCor) || math.IsInf(o.DCor, 0) {
				return fmt.Errorf("fdm: output %q has a non-finite gcor or dcor", o.Name)
			}
		}
	}
	if len(outputs) == 0 {
		return fmt.Errorf("fdm: mapping has no columns")
	}
	// A mapped column may not be named like a group feature either: the
	// mapped data (Apply, and the records of forestd select, the daemon's
	// select stage and forestd_select) would hold it in place of that
	// input under the input's name.
	for g, gr := range t.Groups {
		for _, o := range gr.Outputs {
			if h, ok := groupOf[o.Name]; ok {
				return fmt.Errorf("fdm: group %d output %q is named like an input feature of the mapping (group %d), which the mapped column would replace", g+1, o.Name, h+1)
			}
		}
	}
	return nil
}

// Names lists the transform's output columns: marginal features, then the
// mapped columns group by group.
func (t *Transform) Names() []string {
	out := append([]string(nil), t.Marginal...)
	for _, g := range t.Groups {
		for _, o := range g.Outputs {
			out = append(out, o.Name)
		}
	}
	return out
}

// Inputs lists every input feature the transform reads.
func (t *Transform) Inputs() []string {
	out := append([]string(nil), t.Marginal...)
	for _, g := range t.Groups {
		out = append(out, g.Features...)
	}
	return out
}

// Columns evaluates the mapped columns (not the marginal ones) on a frame
// with the input features, in float64: one slice per output, in Names
// order after the marginal features.
func (t *Transform) Columns(fr *frame.Frame) ([][]float64, error) {
	var out [][]float64
	for _, g := range t.Groups {
		idx := make([]int, len(g.Features))
		for a, n := range g.Features {
			if idx[a] = fr.FeatureIndex(n); idx[a] < 0 {
				return nil, fmt.Errorf("fdm: input has no column %q (mapped group %v)", n, g.Features)
			}
		}
		for _, o := range g.Outputs {
			mp := Mapping{Kind: t.Map, Inputs: idx, Theta: o.Weights}
			if t.Map == MapDRL {
				mp.Theta = o.Landmark
			}
			out = append(out, mp.Eval(fr.Cols, nil, nil))
		}
	}
	return out, nil
}

// Apply maps a frame: X' = [X_{S_m}, f(X_{S_1}; θ*_1), …] (§6.3), keeping
// its label. The result's features are Names(); the marginal columns share
// the input's buffers, mapped values are rounded to the frame's float32.
func (t *Transform) Apply(fr *frame.Frame) (*frame.Frame, error) {
	mapped, err := t.Columns(fr)
	if err != nil {
		return nil, err
	}
	out := &frame.Frame{NRows: fr.NRows, LabelName: fr.LabelName, Task: fr.Task, Classes: fr.Classes,
		Y: fr.Y, YReg: fr.YReg, Targets: fr.Targets, SkippedLabels: fr.SkippedLabels}
	levels := false
	for _, n := range t.Marginal {
		j := fr.FeatureIndex(n)
		if j < 0 {
			return nil, fmt.Errorf("fdm: input has no column %q (marginal feature)", n)
		}
		out.Names, out.Cols = append(out.Names, n), append(out.Cols, fr.Cols[j])
		var lv []string
		if fr.Levels != nil {
			lv = fr.Levels[j]
			levels = levels || lv != nil
		}
		out.Levels = append(out.Levels, lv)
	}
	k := 0
	for _, g := range t.Groups {
		for _, o := range g.Outputs {
			c := make([]float32, fr.NRows)
			for i, v := range mapped[k] {
				c[i] = float32(v)
			}
			out.Names, out.Cols = append(out.Names, o.Name), append(out.Cols, c)
			out.Levels = append(out.Levels, nil)
			k++
		}
	}
	if !levels {
		out.Levels = nil
	}
	return out, nil
}

// WriteTo writes the transform as indented JSON.
func (t *Transform) WriteTo(w io.Writer) (int64, error) {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return 0, err
	}
	n, err := w.Write(append(b, '\n'))
	return int64(n), err
}

// ReadTransform decodes and validates a mapping file of at most 64 MiB
// (maxFileBytes). Unknown fields, trailing data, a wrong format tag and
// any inconsistency are errors.
func ReadTransform(r io.Reader) (*Transform, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fdm: reading mapping: %w", err)
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("fdm: mapping file larger than %d bytes", maxFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var t Transform
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("fdm: malformed mapping file: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("fdm: malformed mapping file: data after the mapping object")
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}
