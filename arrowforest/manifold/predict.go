package manifold

import (
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
)

// Predictor predicts responses with a distance random forest (dRF paper
// §2.3). It is safe for concurrent use.
type Predictor struct {
	f       *forest.Forest
	d       *forest.DRF
	n, q, m int
	d2      []float64 // training squared distances, rebuilt from d.Responses
	d2min   float64
	oos     *oos
	// members of leaf (t, node): rows[t][start[t][node]:start[t][node+1]]
	start [][]int32
	rows  [][]int32

	// trainEmb is N×m: the out-of-sample point (eqs. 2–3) of each training
	// response's own squared distances (weighted mode only).
	trainEmb []float64

	mu    sync.Mutex
	done  []bool    // per training row l: pred[l] computed
	pred  []float64 // N×q: the prediction when l = argmax a
	embed []float64 // N×m: its embedded point ẑ
}

// NewPredictor prepares f, a forest of kind "drf" (as Train or
// model.DecodeBytes return it), for prediction: it validates the dRF part and
// rebuilds the training distance matrix from the stored responses with
// the stored distance, using up to threads goroutines.
func NewPredictor(f *forest.Forest, threads int) (*Predictor, error) {
	if f == nil || f.DRF == nil {
		return nil, fmt.Errorf("manifold: not a drf forest")
	}
	if err := f.ValidateDRF(); err != nil {
		return nil, fmt.Errorf("manifold: %w", err)
	}
	d := f.DRF
	q, n, m := len(d.Targets), d.Rows(), d.Dim()
	d2, err := SquaredDistances(d.Responses, n, q, d.Distance, d.IsomapK, threads)
	if err != nil {
		return nil, fmt.Errorf("manifold: rebuilding the training distances: %w", err)
	}
	p := &Predictor{f: f, d: d, n: n, q: q, m: m, d2: d2, d2min: minDistance2(d2, n),
		oos:  newOOS(d2, n, d.Embedding, d.Eigenvalues),
		done: make([]bool, n), pred: make([]float64, n*q), embed: make([]float64, n*m)}
	for t, tr := range f.Trees {
		start, rows := leafMembers(tr, d.Leaves[t])
		p.start = append(p.start, start)
		p.rows = append(p.rows, rows)
	}
	if d.Predict == forest.PredictWeighted {
		p.trainEmb = trainEmbedding(p.oos, p.d2, n, m, threads)
	}
	return p, nil
}

// Targets names the response coordinates, in output order.
func (p *Predictor) Targets() []string { return p.d.Targets }

// PredictValues is Predict's Values (rows×q row-major): p is a
// forest.MultiOutput.
func (p *Predictor) PredictValues(fr *frame.Frame, threads int) ([]float64, error) {
	pred, err := p.Predict(fr, threads)
	if err != nil {
		return nil, err
	}
	return pred.Values, nil
}

// Prediction holds dRF predictions for a batch of rows.
type Prediction struct {
	// Q is the response dimension; Values is rows×Q row-major.
	Q      int
	Values []float64
	// Nearest is, per row, l = argmax a: the training row most similar
	// to it (its index among the model's training rows).
	Nearest []int32
	// Embedded is rows×M row-major: the out-of-sample point ẑ (eq. 2).
	M        int
	Embedded []float64
}

// Similarity returns the forest similarity vector a of row r of cols
// (§2.3.1): a_i is the number of trees in which row r reaches the leaf
// that training row i was grown into (in-bag rows only), divided by the
// number of trees.
func (p *Predictor) Similarity(cols [][]float32, r int) []float64 {
	a := make([]float64, p.n)
	for t, tr := range p.f.Trees {
		l := tr.Leaf(cols, r)
		for _, i := range p.rows[t][p.start[t][l]:p.start[t][l+1]] {
			a[i]++
		}
	}
	inv := 1 / float64(len(p.f.Trees))
	for i := range a {
		a[i] *= inv
	}
	return a
}

// count adds, for every tree, one to cnt[i] of each in-bag training row i
// sharing row r's leaf (cnt = T·a) and returns the rows it touched, which
// had cnt 0 before.
func (p *Predictor) count(cols [][]float32, r int, cnt []int32, touched []int32) []int32 {
	touched = touched[:0]
	for t, tr := range p.f.Trees {
		l := tr.Leaf(cols, r)
		for _, i := range p.rows[t][p.start[t][l]:p.start[t][l+1]] {
			if cnt[i] == 0 {
				touched = append(touched, i)
			}
			cnt[i]++
		}
	}
	return touched
}

// argmax returns argmax a over the touched rows (lowest index among ties).
func argmax(cnt []int32, touched []int32) int32 {
	best := int32(-1)
	for _, i := range touched {
		if best < 0 || cnt[i] > cnt[best] || (cnt[i] == cnt[best] && i < best) {
			best = i
		}
	}
	return best
}

// nearest returns argmax a for row r without materialising a as floats,
// leaving cnt all zero again.
func (p *Predictor) nearest(cols [][]float32, r int, cnt []int32, touched []int32) (int32, []int32) {
	touched = p.count(cols, r, cnt, touched)
	best := argmax(cnt, touched)
	for _, i := range touched {
		cnt[i] = 0
	}
	return best, touched
}

// Predict predicts the responses of every row of fr, whose columns must be
// the forest's features in order, on up to threads goroutines. For each
// row it forms a (§2.3.1), predicts the distances to the training
// responses by Algorithm 1, embeds them by eqs. (2)–(3) and backscores by
// eq. (7). All of that after a depends on l = argmax a alone (see the
// package documentation), so it is computed once per distinct l and
// remembered, and Algorithm 1 is evaluated by its closed form (O(N)
// instead of O(N²); TestAlgorithm1ClosedForm and
// TestPredictMatchesLiteralPipeline check that it is the same). The result
// does not depend on threads.
func (p *Predictor) Predict(fr *frame.Frame, threads int) (*Prediction, error) {
	if fr.P() != len(p.f.Features) {
		return nil, fmt.Errorf("manifold: frame has %d features, model needs %d", fr.P(), len(p.f.Features))
	}
	if err := fr.Validate(); err != nil {
		return nil, fmt.Errorf("manifold: %w", err)
	}
	if threads < 1 {
		threads = runtime.NumCPU()
	}
	rows := fr.NRows
	out := &Prediction{Q: p.q, M: p.m, Values: make([]float64, rows*p.q), Nearest: make([]int32, rows),
		Embedded: make([]float64, rows*p.m)}
	const block = 256
	nb := (rows + block - 1) / block
	if p.d.Predict == forest.PredictWeighted {
		parallelRows(nb, threads, func(b int) {
			cnt := make([]int32, p.n)
			var touched []int32
			for r := b * block; r < min(rows, (b+1)*block); r++ {
				p.predictWeighted(fr.Cols, r, cnt, &touched, out)
			}
		})
		return out, nil
	}
	parallelRows(nb, threads, func(b int) {
		cnt := make([]int32, p.n)
		var touched []int32
		for r := b * block; r < min(rows, (b+1)*block); r++ {
			out.Nearest[r], touched = p.nearest(fr.Cols, r, cnt, touched)
		}
	})
	// the distinct l's not yet computed, in increasing order
	p.mu.Lock()
	need := make([]bool, p.n)
	var todo []int
	for _, l := range out.Nearest {
		if !p.done[l] && !need[l] {
			need[l] = true
		}
	}
	for l, x := range need {
		if x {
			todo = append(todo, l)
		}
	}
	p.mu.Unlock()
	if len(todo) > 0 {
		res := make([]float64, len(todo)*p.q)
		emb := make([]float64, len(todo)*p.m)
		parallelRows(len(todo), threads, func(k int) {
			dn := make([]float64, p.n)
			alg1ClosedForm(p.d2, p.n, todo[k], p.d2min, dn)
			zn := emb[k*p.m : k*p.m+p.m]
			p.oos.embed(dn, zn)
			backscore(p.d.Embedding, p.m, p.d.Coef, p.q, p.d.SigmaG, p.d.Offset, zn, res[k*p.q:k*p.q+p.q])
		})
		p.mu.Lock()
		for k, l := range todo {
			if !p.done[l] {
				copy(p.pred[l*p.q:], res[k*p.q:k*p.q+p.q])
				copy(p.embed[l*p.m:], emb[k*p.m:k*p.m+p.m])
				p.done[l] = true
			}
		}
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for r, l := range out.Nearest {
		copy(out.Values[r*p.q:r*p.q+p.q], p.pred[int(l)*p.q:])
		copy(out.Embedded[r*p.m:r*p.m+p.m], p.embed[int(l)*p.m:])
	}
	return out, nil
}

// predictWeighted predicts row r in PredictWeighted mode: with w = a/Σa,
// d̂² = Σ_j w_j D²_j· and, eqs. (2)–(3) being affine in d̂² with Σ w_j = 1,
// ẑ = Σ_j w_j ẑ_j where ẑ_j is training row j's own out-of-sample point;
// then eq. (7). The sum runs over the touched rows in increasing index
// order, so the result does not depend on the tree visiting order.
func (p *Predictor) predictWeighted(cols [][]float32, r int, cnt []int32, touched *[]int32, out *Prediction) {
	*touched = p.count(cols, r, cnt, *touched)
	ts := *touched
	out.Nearest[r] = argmax(cnt, ts)
	slices.Sort(ts)
	zn := out.Embedded[r*p.m : r*p.m+p.m]
	var total float64
	for _, i := range ts {
		c := float64(cnt[i])
		total += c
		zi := p.trainEmb[int(i)*p.m : int(i)*p.m+p.m]
		for k, v := range zi {
			zn[k] += c * v
		}
		cnt[i] = 0
	}
	for k := range zn {
		zn[k] /= total
	}
	backscore(p.d.Embedding, p.m, p.d.Coef, p.q, p.d.SigmaG, p.d.Offset, zn, out.Values[r*p.q:r*p.q+p.q])
}
