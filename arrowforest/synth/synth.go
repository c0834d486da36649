package synth

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/forestd/forestd/arrowforest/frame"
)

// Options controls a generator. The zero value of every field but N means
// "the paper's setting"; a field that a data set does not have must be left
// at zero (or, for P, set to the data set's fixed dimension), otherwise
// Generate returns an error rather than silently ignoring it.
type Options struct {
	// N is the number of rows; it must be positive.
	N int
	// Seed seeds the random stream; the same seed gives the same frame.
	Seed uint64
	// P is the dimension of trunk (default 10) and parity (default 10).
	// The other data sets have a fixed dimension: circle 100, hvbars 784,
	// impulse 100, xor1..xor5 2, 3, 3, 4, 17 (Table 6.1), swissroll 6
	// inputs; P may be 0 or that number.
	P int
	// Sigma is the standard deviation σ of the XOR features of
	// xor1..xor5 (dissertation §5.1: σ = 0.4). 0 means 0.4.
	Sigma float64
	// SigmaMarginal is the standard deviation σ' of the marginally
	// dependent features X0 ~ N(y, σ'²) of xor3, xor4 and xor5
	// (dissertation §5.1: σ' = 1.5). 0 means 1.5.
	SigmaMarginal float64
	// NoiseVar is the variance of the Gaussian noise added to each
	// coordinate of the swissroll response (dRF paper §3.1: Σ = 0.5·I₃).
	// 0 means 0.5; the noise-free points are available with Clean.
	NoiseVar float64
	// Clean adds the noise-free swissroll response (the point on the
	// swiss-roll surface) as y0_true, y1_true, y2_true. Only swissroll
	// has it.
	Clean bool
}

// Default parameters, each as the paper gives it.
const (
	defaultTrunkP        = 10  // chosen default; the paper varies p from 2 to 1000
	defaultParityP       = 10  // Randomer paper Fig. A1 panel B; the paper varies p from 2 to 10
	defaultXORSigma      = 0.4 // dissertation §5.1, Fig. 5.1 and datasets (i)-(iv)
	defaultXORSigmaMarg  = 1.5 // dissertation §5.1, σ'
	defaultSwissNoiseVar = 0.5 // dRF paper §3.1, Σ = 0.5 I₃
)

// maxCells bounds N × features so that a typo in N fails with an error
// instead of exhausting memory (2³¹ float32 cells = 8 GiB).
const maxCells = 1 << 31

// names lists the data sets in the order of the command line (ARCHITECTURE.md, Command line).
var names = []string{
	Circle, HVBars, Impulse,
	XOR1, XOR2, XOR3, XOR4, XOR5,
	Trunk, Parity, SwissRoll,
}

// Names returns the names of all data sets, in the order `forestd gen`
// documents them. Each name is also an exported constant (Circle, HVBars,
// Impulse, XOR1..XOR5, Trunk, Parity, SwissRoll) whose documentation is the
// data set's exact definition.
func Names() []string { return slices.Clone(names) }

// ErrUnknown is wrapped by the error returned for an unknown data set name.
var ErrUnknown = errors.New("unknown data set")

func unknown(name string) error {
	return fmt.Errorf("synth: %w %q (want one of %s)", ErrUnknown, name, strings.Join(names, ", "))
}

// params is an Options with the defaults filled in and checked.
type params struct {
	Options
	p int // number of input features
}

// resolve checks o against the data set and fills in the paper's defaults.
func resolve(name string, o Options) (params, error) {
	if !slices.Contains(names, name) {
		return params{}, unknown(name)
	}
	if o.N <= 0 {
		return params{}, fmt.Errorf("synth: %s: N must be positive, got %d", name, o.N)
	}
	pr := params{Options: o}
	fixed := 0
	switch name {
	case "trunk", "parity":
		if o.P < 0 {
			return params{}, fmt.Errorf("synth: %s: P must be positive, got %d", name, o.P)
		}
		pr.p = o.P
		if pr.p == 0 {
			pr.p = defaultTrunkP
			if name == "parity" {
				pr.p = defaultParityP
			}
		}
	case "circle":
		fixed = circleLen
	case "hvbars":
		fixed = barsSide * barsSide
	case "impulse":
		fixed = impulseLen
	case "swissroll":
		fixed = swissInputs
	default: // xor1..xor5
		fixed = xorSpecs[name].dim()
	}
	if fixed != 0 {
		if o.P != 0 && o.P != fixed {
			return params{}, fmt.Errorf("synth: %s has a fixed dimension of %d; P=%d does not apply", name, fixed, o.P)
		}
		pr.p = fixed
	}

	spec, isXOR := xorSpecs[name]
	if !isXOR {
		if o.Sigma != 0 || o.SigmaMarginal != 0 {
			return params{}, fmt.Errorf("synth: %s: Sigma and SigmaMarginal apply to xor1..xor5 only", name)
		}
	} else {
		if o.Sigma == 0 {
			pr.Sigma = defaultXORSigma
		}
		if o.SigmaMarginal == 0 {
			pr.SigmaMarginal = defaultXORSigmaMarg
		}
		if spec.marginal == 0 && o.SigmaMarginal != 0 {
			return params{}, fmt.Errorf("synth: %s has no marginally dependent feature; SigmaMarginal does not apply", name)
		}
		if !(pr.Sigma > 0) || math.IsInf(pr.Sigma, 0) || !(pr.SigmaMarginal > 0) || math.IsInf(pr.SigmaMarginal, 0) {
			return params{}, fmt.Errorf("synth: %s: Sigma and SigmaMarginal must be positive and finite, got %v and %v", name, o.Sigma, o.SigmaMarginal)
		}
	}
	if name != "swissroll" {
		if o.NoiseVar != 0 || o.Clean {
			return params{}, fmt.Errorf("synth: %s: NoiseVar and Clean apply to swissroll only", name)
		}
	} else {
		if o.NoiseVar == 0 {
			pr.NoiseVar = defaultSwissNoiseVar
		}
		if !(pr.NoiseVar > 0) || math.IsInf(pr.NoiseVar, 0) {
			return params{}, fmt.Errorf("synth: swissroll: NoiseVar must be positive and finite, got %v", o.NoiseVar)
		}
	}
	cols := pr.p
	if name == "swissroll" {
		cols += 2 * swissTargets
	}
	if o.N > maxCells/cols {
		return params{}, fmt.Errorf("synth: %s: %d rows × %d columns exceeds the limit of %d values", name, o.N, cols, maxCells)
	}
	return pr, nil
}

// newRNG returns the random stream of one generator call: a PCG seeded
// with the user's seed and a constant derived from the data set's name.
func newRNG(name string, seed uint64) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte("forestd/synth/" + name))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// Generate draws opts.N rows of the named data set (see Names).
//
// Classification data sets return a frame with Task
// frame.TaskClassification, LabelName "y", Classes and Y. swissroll
// returns its six inputs followed by the noisy responses y0, y1, y2 as
// ordinary columns and no label (select the responses with
// `--label y0,y1,y2`); with opts.Clean the noise-free responses y0_true,
// y1_true, y2_true follow. Use GenerateMulti to get the responses apart
// from the inputs.
func Generate(name string, opts Options) (*frame.Frame, error) {
	pr, err := resolve(name, opts)
	if err != nil {
		return nil, err
	}
	rng := newRNG(name, opts.Seed)
	switch name {
	case "trunk":
		return genTrunk(rng, pr.N, pr.p), nil
	case "parity":
		return genParity(rng, pr.N, pr.p), nil
	case "circle":
		return genCircle(rng, pr.N), nil
	case "hvbars":
		return genHVBars(rng, pr.N), nil
	case "impulse":
		return genImpulse(rng, pr.N), nil
	case "swissroll":
		f, targets, tnames := genSwissRoll(rng, pr.N, pr.NoiseVar, pr.Clean)
		for k, t := range targets {
			col := make([]float32, len(t))
			for i, v := range t {
				col[i] = float32(v)
			}
			f.Names = append(f.Names, tnames[k])
			f.Cols = append(f.Cols, col)
		}
		return f, nil
	default:
		f, _ := genXOR(rng, xorSpecs[name], pr.N, pr.Sigma, pr.SigmaMarginal, false)
		return f, nil
	}
}

// Responses names the response columns Generate writes after the inputs
// of a data set with a multivariate response (swissroll): the noisy
// responses y0, y1, y2 and, with clean (Options.Clean), the noise-free
// ones y0_true, y1_true, y2_true. Both are nil for the data sets with a
// class label. The inputs are the other columns.
func Responses(name string, clean bool) (noisy, noiseFree []string) {
	if name != SwissRoll {
		return nil, nil
	}
	noisy = []string{"y0", "y1", "y2"}
	if clean {
		noiseFree = []string{"y0_true", "y1_true", "y2_true"}
	}
	return noisy, noiseFree
}

// GenerateMulti draws opts.N rows of a data set with a multivariate
// response (only swissroll). It returns the inputs as a frame without a
// label, the responses column-major as float64 (targets[k][i] is
// coordinate k of row i) and their names y0, y1, y2. With opts.Clean the
// noise-free responses follow as three more columns named y0_true,
// y1_true, y2_true. For the same opts the values equal those of
// Generate, which stores them as float32.
func GenerateMulti(name string, opts Options) (*frame.Frame, [][]float64, []string, error) {
	pr, err := resolve(name, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	if name != "swissroll" {
		return nil, nil, nil, fmt.Errorf("synth: %s has a class label, not a multivariate response; use Generate", name)
	}
	f, targets, tnames := genSwissRoll(newRNG(name, opts.Seed), pr.N, pr.NoiseVar, pr.Clean)
	return f, targets, tnames, nil
}

// Groups returns the ground-truth minimum dependence sets (MDS's,
// dissertation Definition 13) of an XOR data set as lists of feature
// names: one singleton per marginally dependent feature, then the XOR
// groups of size 2, then those of size 3, in frame order. Together they
// cover every feature (Table 6.1 lists no independent features). It
// returns nil for a data set without a known dependence structure.
func Groups(name string) [][]string {
	spec, ok := xorSpecs[name]
	if !ok {
		return nil
	}
	return spec.groups()
}

// BayesError returns the error rate of the Bayes-optimal classifier for
// the data set and options, where it has a closed form:
//
//   - trunk: Φ(−‖μ‖) with ‖μ‖² = Σ_{j≤p} 1/j (two Gaussians N(±μ, I) with
//     equal priors; Randomer paper §3.1 cites Bickel and Levina 2004);
//   - parity: (1 − (1 − 2q)^p)/2 with q = Φ(−½·√32): the Bayes rule is the
//     parity of the rounded coordinates, and it errs when an odd number of
//     coordinates cross ½;
//   - impulse: Φ(−‖s‖/2) with s_t = exp(−(t−20)/10) for t ≥ 20;
//   - circle: 0 (the classes have disjoint supports);
//   - hvbars: (e^{−10} + r^{28})/2 with r = 1 − e^{−10/28}: only the blank
//     image and the full image occur in both classes;
//   - xor1, xor2: (1 − (1 − 2q)^d)/2 with q = Φ(−1/σ), d = 2, 3.
//
// It returns an error for the other data sets (xor3..xor5 mix a marginal
// feature with XOR groups; swissroll is a regression).
func BayesError(name string, opts Options) (float64, error) {
	if opts.N == 0 {
		opts.N = 1 // BayesError does not need a sample size
	}
	pr, err := resolve(name, opts)
	if err != nil {
		return 0, err
	}
	switch name {
	case "trunk":
		h := 0.0
		for j := 1; j <= pr.p; j++ {
			h += 1 / float64(j)
		}
		return normCDF(-math.Sqrt(h)), nil
	case "parity":
		q := normCDF(-0.5 / paritySD)
		return (1 - math.Pow(1-2*q, float64(pr.p))) / 2, nil
	case "impulse":
		ss := 0.0
		for t := impulseOnset; t < impulseLen; t++ {
			s := impulseSignal(t)
			ss += s * s
		}
		return normCDF(-math.Sqrt(ss) / 2), nil
	case "circle":
		return 0, nil
	case "hvbars":
		r := -math.Expm1(-barsLambda / barsSide)
		return (math.Exp(-barsLambda) + math.Pow(r, barsSide)) / 2, nil
	case "xor1", "xor2":
		d := 2
		if name == "xor2" {
			d = 3
		}
		q := normCDF(-1 / pr.Sigma)
		return (1 - math.Pow(1-2*q, float64(d))) / 2, nil
	}
	return 0, fmt.Errorf("synth: %s: no closed-form Bayes error", name)
}

// normCDF is the standard normal distribution function Φ.
func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// newFrame allocates a frame of n rows with the given feature names, all
// columns carved out of one backing array.
func newFrame(featNames []string, n int) *frame.Frame {
	backing := make([]float32, len(featNames)*n)
	cols := make([][]float32, len(featNames))
	for j := range cols {
		cols[j] = backing[j*n : (j+1)*n : (j+1)*n]
	}
	return &frame.Frame{Names: featNames, Cols: cols, NRows: n}
}

// newClassFrame is newFrame plus a classification label "y".
func newClassFrame(featNames []string, n int, classes []string) *frame.Frame {
	f := newFrame(featNames, n)
	f.LabelName = "y"
	f.Task = frame.TaskClassification
	f.Classes = classes
	f.Y = make([]int32, n)
	return f
}

// binaryClasses are the class names of the two-class data sets whose
// papers do not name their classes otherwise.
func binaryClasses() []string { return []string{"0", "1"} }

// seqNames returns prefix+start … prefix+(start+n−1).
func seqNames(prefix string, start, n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("%s%d", prefix, start+i)
	}
	return s
}
