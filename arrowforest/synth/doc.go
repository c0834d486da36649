// Package synth generates the simulated data sets of the papers forestd
// implements, exactly as the papers define them, so that every experiment
// can be reproduced from a name, a row count and a seed (`forestd gen`).
//
// # Data sets
//
//	name       paper (file in shared/papers)                    shape                 task
//	trunk      Randomer Forests §3.1                            p features (def. 10)  2 classes
//	parity     Randomer Forests §3.1                            p features (def. 10)  2 classes
//	circle     MORF §5.1 exp. (A); Manifold Forests §4.1        100 (cyclic series)   2 classes
//	hvbars     MORF §5.1 exp. (B); Manifold Forests §4.1        28×28 image           2 classes
//	impulse    MORF §5.1 exp. (C); Manifold Forests §4.1        100 (series)          2 classes
//	xor1..xor5 dissertation §5.1, §5.7, Table 6.1               2..17 features        2 classes
//	swissroll  dRF paper §3.1                                   6 inputs + 3 targets  3-variate regression
//
// Each generator's doc comment gives the exact definition with the section
// and equation it comes from, and says how a detail the paper leaves open
// was resolved.
//
// # Conventions
//
//   - Classes are exactly balanced: row i belongs to class i mod 2, as in
//     the authors' own generators (neurodata/SPORF's load_Xy.py fixes the
//     class sizes n1, n2 and alternates hvbars labels [0,1]*(n/2)). At the
//     papers' small sample sizes (hvbars n = 10) a class split drawn at
//     random (8 vs 2, say) would dominate the error. Given its class, each
//     row is drawn independently.
//   - Classes are named "0" and "1" with the class index equal to the name,
//     except for the XOR data sets, whose classes are named "-1" and "1" as
//     in the dissertation (index 0 is "-1"). Where a paper calls its classes
//     "class 1" and "class 2", class "0" is the paper's first class.
//   - The label column of a classification frame is called "y"
//     (Frame.LabelName).
//   - Randomness comes from one math/rand/v2 PCG generator per call, seeded
//     from Options.Seed and a constant derived from the data set's name, so
//     the same (name, Options) always yields an identical frame, and two
//     data sets generated with one seed do not share a random stream. Rows
//     are drawn one after another, so for every data set except swissroll
//     (whose input mapping uses sample statistics) the first n rows of a
//     larger sample equal a sample of n rows with the same seed.
//   - Features are stored as float32 (frame.Frame's training buffer), so
//     generated values are rounded to float32; responses returned by
//     GenerateMulti are float64.
//
// # Multivariate responses
//
// swissroll has a three-dimensional response and no class label.
// GenerateMulti returns its six inputs as a frame and the responses
// y0, y1, y2 as separate float64 columns. Generate returns one table with
// the responses appended after the inputs as columns y0, y1, y2, so that a
// written file is directly usable: train on it with `--label y0,y1,y2`.
// Options.Clean additionally provides the noise-free surface point of each
// row (y0_true, y1_true, y2_true) for measuring the distance of a
// prediction to the true manifold.
package synth
