package model

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/forestd/forestd/arrowforest/forest"
)

// keyDRF carries forest.DRF, the part of a distance random forest that is
// not its trees (see doc.go, "The dRF part").
const keyDRF = "forestd.drf"

// drfJSON is the value of forestd.drf. Arrays travel as standard base64
// of little-endian IEEE-754 float64s (exact, and about half the size of
// decimal JSON); leaves as one unsigned varint (encoding/binary) per tree
// and training row, tree-major: the leaf's node index + 1, or 0 when the
// row was out of bag for that tree.
type drfJSON struct {
	Targets     []string `json:"targets"`
	Distance    string   `json:"distance"`
	IsomapK     int      `json:"isomap_k"`
	Projection  string   `json:"projection"`
	SigmaG      float64  `json:"sigma_g"`
	GammaG      float64  `json:"gamma_g"`
	Predict     string   `json:"predict"`
	InputRows   int      `json:"input_rows"`
	Rows        int      `json:"rows"`
	Dim         int      `json:"dim"`
	Responses   string   `json:"responses"`
	Embedding   string   `json:"embedding"`
	Eigenvalues string   `json:"eigenvalues"`
	Coef        string   `json:"coef"`
	Leaves      string   `json:"leaves"`
	// Optional (absent in models without them): the backscoring offset
	// (q float64s), how σ_G and γ_G were chosen ("loo" or "oob") and the
	// choice's cross-validated error (forest.DRF.SelectMSE; the key keeps
	// its name from when leave-one-out was the only way).
	Offset     string  `json:"offset,omitempty"`
	SelectedBy string  `json:"selected_by,omitempty"`
	SelectMSE  float64 `json:"loo_mse,omitempty"`
}

func encodeDRF(f *forest.Forest, _ Meta, _ int) (string, bool, error) {
	d := f.DRF
	if d == nil {
		return "", false, nil
	}
	var leaves []byte
	for _, tl := range d.Leaves {
		for _, l := range tl {
			leaves = binary.AppendUvarint(leaves, uint64(int64(l)+1))
		}
	}
	v := drfJSON{
		Targets: d.Targets, Distance: d.Distance, IsomapK: d.IsomapK, Projection: d.Projection,
		SigmaG: d.SigmaG, GammaG: d.GammaG, Predict: d.Predict, InputRows: d.InputRows,
		Rows: d.Rows(), Dim: d.Dim(),
		Responses: floats64(d.Responses), Embedding: floats64(d.Embedding),
		Eigenvalues: floats64(d.Eigenvalues), Coef: floats64(d.Coef),
		Leaves:     base64.StdEncoding.EncodeToString(leaves),
		SelectedBy: d.SelectedBy, SelectMSE: d.SelectMSE,
	}
	if d.Offset != nil {
		v.Offset = floats64(d.Offset)
	}
	return jsonString(v)
}

func floats64(v []float64) string {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// unfloats64 decodes want float64s from s, or fails.
func unfloats64(s string, want int, what string) ([]float64, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	if want < 0 || len(b) != 8*want {
		return nil, fmt.Errorf("%s: %d bytes, want %d float64s", what, len(b), want)
	}
	v := make([]float64, want)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v, nil
}

// decodeDRF parses forestd.drf strictly: every field present (but the
// optional offset, selected_by and loo_mse), no unknown field, array
// lengths matching rows, dim, the number of targets and the number of
// trees. Semantic checks follow in forest.Validate
// (forest.ValidateDRF), once the trees are decoded.
func decodeDRF(v string, st *decodeState) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(v)))
	dec.DisallowUnknownFields()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return err
	}
	for _, k := range []string{"targets", "distance", "isomap_k", "projection", "sigma_g", "gamma_g", "predict",
		"input_rows", "rows", "dim", "responses", "embedding", "eigenvalues", "coef", "leaves"} {
		if _, ok := raw[k]; !ok {
			return fmt.Errorf("missing field %s", k)
		}
	}
	var j drfJSON
	if err := dec.Decode(&j); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data")
	}
	q, n, m := len(j.Targets), j.Rows, j.Dim
	if q == 0 || n < 2 || m < 1 || n > math.MaxInt32 || m >= n || int64(n)*int64(q) > math.MaxInt32 || int64(n)*int64(m) > math.MaxInt32 {
		return fmt.Errorf("bad shape: %d rows, %d targets, dimension %d", n, q, m)
	}
	d := &forest.DRF{Targets: j.Targets, Distance: j.Distance, IsomapK: j.IsomapK, Projection: j.Projection,
		SigmaG: j.SigmaG, GammaG: j.GammaG, Predict: j.Predict, InputRows: j.InputRows,
		SelectedBy: j.SelectedBy, SelectMSE: j.SelectMSE}
	var err error
	if _, ok := raw["offset"]; ok {
		if d.Offset, err = unfloats64(j.Offset, q, "offset"); err != nil {
			return err
		}
	}
	if d.Responses, err = unfloats64(j.Responses, n*q, "responses"); err != nil {
		return err
	}
	if d.Embedding, err = unfloats64(j.Embedding, n*m, "embedding"); err != nil {
		return err
	}
	if d.Eigenvalues, err = unfloats64(j.Eigenvalues, m, "eigenvalues"); err != nil {
		return err
	}
	if d.Coef, err = unfloats64(j.Coef, n*q, "coef"); err != nil {
		return err
	}
	lb, err := base64.StdEncoding.Strict().DecodeString(j.Leaves)
	if err != nil {
		return fmt.Errorf("leaves: %v", err)
	}
	// every varint takes at least one byte: check before allocating
	if st.trees < 1 || st.trees > int64(len(lb))/int64(n) {
		return fmt.Errorf("leaves: %d bytes cannot hold %d trees × %d rows", len(lb), st.trees, n)
	}
	d.Leaves = make([][]int32, st.trees)
	for t := range d.Leaves {
		tl := make([]int32, n)
		for i := range tl {
			x, k := binary.Uvarint(lb)
			if k <= 0 || x > math.MaxInt32 {
				return fmt.Errorf("leaves: bad varint for tree %d row %d", t, i)
			}
			tl[i] = int32(int64(x) - 1)
			lb = lb[k:]
		}
		d.Leaves[t] = tl
	}
	if len(lb) != 0 {
		return fmt.Errorf("leaves: %d bytes left over", len(lb))
	}
	st.f.DRF = d
	return nil
}
