// Package manifold owns distance random forests (dRF) for manifold-valued
// responses: Tsagkrasoulis & Montana, "Random Forest regression for
// manifold-valued responses", §2, equations (1)–(9) and Algorithm 1.
//
// A response is a vector y ∈ R^q (several target columns, or one
// fixed-size list column) lying on a possibly unknown manifold; only a
// distance between responses is needed:
//
//   - Distances (§2.1, §3.1): Euclidean, or the Isomap geodesic distance —
//     shortest paths on the k-nearest-neighbour graph of the training
//     responses (Tenenbaum et al. 2000), k = 7 by default. The N×N training
//     matrix is the memory bound of the method; Options.MaxRows subsamples
//     the training rows to keep it bounded.
//   - Training (§2.2): trees split by the criterion G of eq. (1), computed
//     from squared distances alone, incrementally as the split point moves
//     (tree.Distance on the engine's split search), with bootstrap,
//     max-features, min-leaf and max-depth, on axis or sparse oblique
//     (SPORF) atoms; one random stream per tree, so the thread count never
//     changes the model.
//   - Prediction (§2.3): the forest similarity vector a (leaf co-occurrence
//     with the in-bag training rows, divided by the number of trees), the
//     distances to the training responses — by Algorithm 1, or (the
//     default, forest.PredictWeighted) as the a-weighted mean of the
//     training rows' distances —, the classical MDS embedding of the
//     training responses with the out-of-sample point of eqs. (2)–(3), and
//     backscoring to R^q by the kernel interpolation of eqs. (7)–(8) with
//     the Gaussian kernel of eq. (9): one N×N system solved for all q
//     outputs at training time. σ_G and γ_G, which the paper sets per data
//     set, are chosen unless given (select.go): by default by the error of
//     the training rows' out-of-bag predictions — each row's similarity
//     vector from the trees that did not see it, carried through the
//     embedding and the map refitted without it (oob.go) —, or by
//     leave-one-out cross-validation of the backscoring map on the
//     training pairs.
//
// Train returns a forest.Forest of kind "drf" (LabelName: the targets,
// comma-separated) whose forest.DRF part holds
// what prediction needs (training responses, embedding, eigenvalues,
// backscoring coefficients, leaf membership of the training rows); package
// model encodes it. NewPredictor rebuilds the distance matrix from the
// stored responses and predicts.
//
// # Resolved details
//
//   - Algorithm 1 starts from "min{D_ij}": read as the smallest distance
//     between two different training responses (i ≠ j), the "minimum
//     distance observed in the training set" of the text.
//   - As printed, Algorithm 1 visits the remaining points in decreasing
//     distance from l = argmax a. By induction every estimate is then
//     d̂(y_new, y_p) = D_lp for p ≠ l (the candidate through l gives D_lp,
//     every other candidate q was visited earlier, so D_lq ≥ D_lp), and
//     the prediction depends on a only through its argmax. algorithm1 runs
//     the algorithm as printed; Predictor uses the closed form (O(N)
//     instead of O(N²) per prediction) and computes each l's prediction
//     once. TestAlgorithm1ClosedForm and TestPredictMatchesLiteralPipeline
//     check that both give the same numbers.
//   - a counts the in-bag training rows of the leaves (the subset each
//     leaf was grown on), not every training row dropped down the tree.
//   - Ties of argmax a go to the lowest training row index.
//   - Eq. (9) divides by σ_G, not σ_G²; so does this package.
//   - Eq. (8)'s regulariser is N/γ_G: large γ_G interpolates the training
//     responses, small γ_G shrinks towards 0 — towards the origin of the
//     response coordinates, the one place where dRF would depend on where
//     that origin is. By default (Options.Center) the map is fitted to the
//     responses minus their mean and the mean is added back (an offset in
//     eq. (7), forest.DRF.Offset), so it shrinks towards the mean response
//     and prediction is translation invariant like the rest of dRF.
//   - Out-of-sample point of a training response: eqs. (2)–(3) applied to
//     training row j's own distances give N/(N+1)·z_j exactly, for any
//     symmetric distance (TestOOSOfTrainingPoint), so the weighted
//     prediction's mean of those points is a mean on the embedding.
//   - Classical MDS needs only the m largest eigenpairs of K (§2.3.2);
//     they come from block Lanczos with full reorthogonalisation
//     (eigen.go), bit-identical at any thread count, and gonum's full
//     decomposition is the fallback (N ≤ 64, m a large share of N, no
//     convergence within the step budget, or four or more equal wanted
//     eigenvalues followed by a smaller wanted one).
package manifold
