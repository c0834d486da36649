#!/usr/bin/python3
"""Reference single trees from scikit-learn for the Go tree engine's tests.

Run from the repository root with Debian's Python (python3-sklearn):

    /usr/bin/python3 arrowforest/forest/testdata/make_sklearn_refs.py [DATA_DIR]

DATA_DIR defaults to testdata (relative to the repository root). For
each case (dataset, criterion, max_depth) below it fits

    DecisionTree{Classifier,Regressor}(max_depth=D, criterion=C,
                                       max_features=None, random_state=0)

on the whole data set and writes sklearn_tree_<dataset>_<criterion>_d<D>.json
next to this script. Deterministic: the same inputs give byte-identical files.

Data: DATA_DIR/<dataset>.csv.gz, the response is the last column ("label" or
"target"), every other column a feature. Values are parsed as float64
(pandas float_precision="round_trip", i.e. correctly rounded like Go's
strconv.ParseFloat) and then cast to float32, which is what scikit-learn's
tree does internally and what forestd's frame does with a DOUBLE column.

JSON contents (see also "fields" in each file):
  nodes        the tree in preorder (sklearn's node ids are preorder ids:
               depth-first, left child first). Per node: id, depth, feature
               (name, null for a leaf), feature_index, threshold (float64;
               a sample goes left iff float64(x) <= threshold), left, right
               (ids, -1 for a leaf), n_node_samples, impurity, value (class
               fractions for a classifier, the mean for a regressor), counts
               (class counts, classifier only). Internal nodes also have
               "split": the result of recomputing every candidate split of
               every feature at that node in numpy (see below).
  feature_importances  sklearn's feature_importances_ by feature name.
  predictions  training-set predictions per row (class index into "classes",
               or the predicted value).

Split recomputation (per internal node): for every feature, every position
between two consecutive distinct sorted float32 values of the node's samples
is a candidate (sklearn skips positions where the next value is within 1e-7,
FEATURE_THRESHOLD in sklearn/tree/_splitter.pyx; so do we, and count them in
"near_equal_positions_skipped"). Its impurity decrease is node-local:
    decrease = impurity(node) - n_L/n * impurity(L) - n_R/n * impurity(R)
(sklearn's feature importance adds n/N * decrease). Recorded: the chosen
split's decrease, weighted_decrease (n/N * decrease), the best decrease of
any other feature ("runner_up_feature", "runner_up_decrease"), "gap" =
decrease - runner_up_decrease, "unique_feature" = gap > tolerance, and
"threshold_ties" = how many thresholds of the chosen feature reach the best
decrease within the tolerance ("unique_threshold" = threshold_ties == 1),
and "ties_give_same_partition": whether every tied alternative sends exactly
the same samples left as sklearn's split (then the subtrees below stay
comparable whichever alternative an engine picks).
sklearn visits features in a random order (random_state) and keeps the first
strictly best one, so where unique_feature is false its feature choice is a
tie-break that a Go test must not compare; it must still compare the
decrease. The script checks that sklearn's chosen split reaches the best
decrease found here (within the tolerance) and fails otherwise.

Impurities: gini = 1 - sum p_k^2; entropy = -sum p_k log2 p_k (sklearn uses
log base 2, checked against the root's impurity); squared_error = the
variance of y in the node (population, divide by n).
"""
import hashlib
import json
import os
import platform
import sys

import numpy as np
import pandas as pd
import sklearn
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

CASES = [
    ("iris", "gini", 3),
    ("iris", "entropy", 3),
    ("wine", "gini", 4),
    ("breast_cancer", "entropy", 4),
    ("diabetes", "squared_error", 3),
]
FEATURE_THRESHOLD = 1e-7     # sklearn/tree/_splitter.pyx
TIE_ABS = 1e-12              # decreases closer than TIE_ABS + TIE_REL*|best| are a tie
TIE_REL = 1e-9

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def impurity_from_counts(counts, n, criterion):
    """counts: (..., K) class counts, n: (...) totals (> 0)."""
    p = counts / n[..., None]
    if criterion == "gini":
        return 1.0 - np.sum(p * p, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    return -np.sum(t, axis=-1)


def node_impurity(y, criterion, k):
    if criterion == "squared_error":
        return float(np.mean((y - y.mean()) ** 2))
    c = np.bincount(y, minlength=k).astype(np.float64)
    return float(impurity_from_counts(c, np.array(float(len(y))), criterion))


def feature_candidates(x, y, criterion, k):
    """All candidate splits of one feature at a node.
    Returns (thresholds, decreases, n_skipped); thresholds computed like sklearn."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order].astype(np.float64)
    ys = y[order]
    n = len(xs)
    pos = np.nonzero(xs[1:] > xs[:-1])[0] + 1          # left = xs[:pos]
    keep = xs[pos] > xs[pos - 1] + FEATURE_THRESHOLD
    skipped = int(np.sum(~keep))
    pos = pos[keep]
    if len(pos) == 0:
        return np.zeros(0), np.zeros(0), skipped
    nl = pos.astype(np.float64)
    nr = n - nl
    if criterion == "squared_error":
        # variance of each side from centred cumulative sums (stable)
        mu = ys.mean()
        yc = ys - mu
        s1 = np.cumsum(yc)
        s2 = np.cumsum(yc * yc)
        sl1, sl2 = s1[pos - 1], s2[pos - 1]
        sr1, sr2 = s1[-1] - sl1, s2[-1] - sl2
        # n_L * var_L = sum (y - mean_L)^2 = sl2 - sl1^2 / nl
        wl = sl2 - sl1 * sl1 / nl
        wr = sr2 - sr1 * sr1 / nr
        parent = s2[-1] - s1[-1] ** 2 / n
        dec = (parent - wl - wr) / n
    else:
        onehot = np.zeros((n, k))
        onehot[np.arange(n), ys] = 1.0
        cum = np.cumsum(onehot, axis=0)
        cl = cum[pos - 1]
        cr = cum[-1][None, :] - cl
        il = impurity_from_counts(cl, nl, criterion)
        ir = impurity_from_counts(cr, nr, criterion)
        parent = float(impurity_from_counts(cum[-1], np.array(float(n)), criterion))
        dec = parent - nl / n * il - nr / n * ir
    thr = (xs[pos - 1] + xs[pos]) / 2.0
    # sklearn: if the midpoint rounds up to the right value (or overflows), use the left value
    bad = (thr == xs[pos]) | np.isinf(thr)
    thr = np.where(bad, xs[pos - 1], thr)
    return thr, dec, skipped


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def run_case(data_dir, name, criterion, depth, command):
    path = os.path.join(data_dir, name + ".csv.gz")
    df = pd.read_csv(path, float_precision="round_trip")
    resp = df.columns[-1]
    features = [c for c in df.columns[:-1]]
    X = df[features].to_numpy(dtype=np.float64).astype(np.float32)
    regression = criterion == "squared_error"
    N, p = X.shape
    if regression:
        y_raw = df[resp].to_numpy(dtype=np.float64)
        est = DecisionTreeRegressor(max_depth=depth, criterion=criterion,
                                    max_features=None, random_state=0)
        est.fit(X, y_raw)
        y = y_raw
        classes, k = None, 0
        est_text = ("DecisionTreeRegressor(max_depth=%d, criterion=%r, max_features=None, "
                    "random_state=0)" % (depth, criterion))
    else:
        y_raw = df[resp].to_numpy()
        est = DecisionTreeClassifier(max_depth=depth, criterion=criterion,
                                     max_features=None, random_state=0)
        est.fit(X, y_raw)
        classes = est.classes_
        y = np.searchsorted(classes, y_raw)
        k = len(classes)
        est_text = ("DecisionTreeClassifier(max_depth=%d, criterion=%r, max_features=None, "
                    "random_state=0)" % (depth, criterion))
    t = est.tree_
    # samples reaching each node
    ind = est.decision_path(X).tocsc()
    tol_used = []

    # check our impurity against sklearn's at the root (fails if e.g. log base differs)
    root_imp = node_impurity(y, criterion, k)
    if not np.isclose(root_imp, t.impurity[0], rtol=1e-12, atol=1e-12):
        sys.exit("%s: root impurity %r != sklearn's %r" % (name, root_imp, t.impurity[0]))

    nodes = []
    uncomparable_rows = set()

    def visit(node, d):
        rows = ind[:, node].nonzero()[0]
        left, right = int(t.children_left[node]), int(t.children_right[node])
        leaf = left == -1
        rec = {"id": int(node), "depth": d,
               "feature": None if leaf else features[t.feature[node]],
               "feature_index": None if leaf else int(t.feature[node]),
               "threshold": None if leaf else float(t.threshold[node]),
               "left": left, "right": right,
               "n_node_samples": int(t.n_node_samples[node]),
               "impurity": float(t.impurity[node])}
        assert len(rows) == t.n_node_samples[node]
        if regression:
            rec["value"] = float(t.value[node][0][0])
        else:
            counts = np.bincount(y[rows], minlength=k)
            v = t.value[node][0]
            rec["value"] = [float(c) for c in v / v.sum()]
            rec["counts"] = [int(c) for c in counts]
            assert np.allclose(v, counts), (name, node, v, counts)
        if not leaf:
            xs, ys = X[rows], y[rows]
            best_per_feature = np.full(p, -np.inf)
            cands = {}
            skipped_total = 0
            chosen = int(t.feature[node])
            chosen_thr, chosen_dec = None, None
            for j in range(p):
                thr, dec, skipped = feature_candidates(xs[:, j], ys, criterion, k)
                skipped_total += skipped
                cands[j] = (thr, dec)
                if len(dec):
                    best_per_feature[j] = dec.max()
                if j == chosen:
                    chosen_thr, chosen_dec = thr, dec
            best = best_per_feature.max()
            tol = TIE_ABS + TIE_REL * abs(best)
            tol_used.append(tol)
            # sklearn's chosen split, recomputed
            i = np.nonzero(chosen_thr == t.threshold[node])[0]
            if len(i) != 1:
                sys.exit("%s node %d: sklearn threshold %r is not a candidate of %s" % (
                    name, node, t.threshold[node], features[chosen]))
            dec = float(chosen_dec[i[0]])
            # the same decrease from sklearn's own node arrays
            nl, nr = t.n_node_samples[left], t.n_node_samples[right]
            n = t.n_node_samples[node]
            sk_dec = t.impurity[node] - nl / n * t.impurity[left] - nr / n * t.impurity[right]
            if abs(dec - sk_dec) > 1e-9 * max(1.0, abs(dec)):
                sys.exit("%s node %d: decrease %r != sklearn arrays' %r" % (name, node, dec, sk_dec))
            if dec < best - tol:
                sys.exit("%s node %d: sklearn's split (%s, decrease %r) is not the best (%r)" % (
                    name, node, features[chosen], dec, best))
            others = best_per_feature.copy()
            others[chosen] = -np.inf
            ru = int(np.argmax(others))
            ru_dec = float(others[ru]) if np.isfinite(others[ru]) else None
            gap = None if ru_dec is None else dec - ru_dec
            ties = int(np.sum(chosen_dec >= dec - tol))
            # Do the tied alternatives (other features, other thresholds) split the
            # node's samples exactly as sklearn did? If so the subtrees below are
            # comparable whichever of them an engine picks.
            sk_left = xs[:, chosen] <= t.threshold[node]
            same = True
            for j, (thr_j, dec_j) in cands.items():
                for th in thr_j[dec_j >= dec - tol]:
                    if j == chosen and th == t.threshold[node]:
                        continue
                    if not np.array_equal(xs[:, j] <= th, sk_left):
                        same = False
            if not same:
                uncomparable_rows.update(int(r) for r in rows)
            lo = float(np.max(xs[:, chosen][xs[:, chosen] <= t.threshold[node]]))
            hi = float(np.min(xs[:, chosen][xs[:, chosen] > t.threshold[node]]))
            rec["split"] = {
                "decrease": dec,
                "weighted_decrease": n / N * dec,
                "sklearn_decrease": float(sk_dec),
                "runner_up_feature": None if ru_dec is None else features[ru],
                "runner_up_decrease": ru_dec,
                "gap": gap,
                "tolerance": tol,
                "unique_feature": bool(gap is None or gap > tol),
                "tied_features": [features[j] for j in range(p)
                                  if j != chosen and best_per_feature[j] >= dec - tol],
                "threshold_ties": ties,
                "unique_threshold": bool(ties == 1),
                "ties_give_same_partition": bool(same),
                "threshold_lo": lo,
                "threshold_hi": hi,
                "n_left": int(nl), "n_right": int(nr),
                "near_equal_positions_skipped": skipped_total,
            }
        nodes.append(rec)
        if not leaf:
            visit(left, d + 1)
            visit(right, d + 1)

    visit(0, 0)
    ids = [nd["id"] for nd in nodes]
    assert ids == list(range(t.node_count)), "sklearn node ids are not preorder"

    pred = est.predict(X)
    out = {
        "dataset": name,
        "source": os.path.relpath(path, ROOT),
        "source_sha256": sha256(path),
        "task": "regression" if regression else "classification",
        "response": resp,
        "criterion": criterion,
        "max_depth": depth,
        "estimator": est_text,
        "sklearn_version": sklearn.__version__,
        "numpy_version": np.__version__,
        "pandas_version": pd.__version__,
        "python_version": platform.python_version(),
        "command": command,
        "input_dtype": "float32 (CSV parsed to float64 with correct rounding, then cast to float32)",
        "n_samples": int(N),
        "features": features,
        "classes": None if regression else [c.item() if hasattr(c, "item") else c for c in classes],
        "node_count": int(t.node_count),
        "max_depth_reached": int(est.get_depth()),
        "n_leaves": int(est.get_n_leaves()),
        "tie_rule": "decreases d1, d2 tie when |d1 - d2| <= %g + %g * |best decrease at the node|" % (TIE_ABS, TIE_REL),
        "nodes": nodes,
        "feature_importances": {f: float(v) for f, v in zip(features, est.feature_importances_)},
    }
    feature_ties = [nd for nd in nodes if "split" in nd and not nd["split"]["unique_feature"]]
    # If some tie lets an engine pick another feature, the importances may move
    # between the tied features; the sum over each tied group stays.
    out["importances_comparable"] = not feature_ties
    out["rows_below_partition_changing_ties"] = sorted(uncomparable_rows)
    if regression:
        out["predictions"] = [float(v) for v in pred]
        out["training_mse"] = float(np.mean((pred - y) ** 2))
    else:
        pi = np.searchsorted(classes, pred)
        out["predictions"] = [int(v) for v in pi]
        out["training_accuracy"] = float(np.mean(pi == y))
    out["fields"] = {
        "nodes[].id": "sklearn node id = preorder index (depth-first, left first)",
        "nodes[].threshold": "float64; go left iff float64(float32(x)) <= threshold",
        "nodes[].value": "class fractions (classifier) or node mean (regressor)",
        "nodes[].split.decrease": "impurity - n_L/n*impurity_L - n_R/n*impurity_R at this node",
        "nodes[].split.weighted_decrease": "n/N * decrease (sklearn's unnormalised importance term)",
        "nodes[].split.unique_feature": "false: another feature reaches the same decrease (tie); "
                                        "sklearn's choice then depends on its random feature order",
        "nodes[].split.ties_give_same_partition": "true: every tied alternative split (other feature or "
                                                  "threshold) sends the same samples left, so the subtrees "
                                                  "stay comparable; false: compare nothing below this node",
        "nodes[].split.threshold_lo/hi": "largest left / smallest right float32 value of the feature at the node",
        "predictions": "training predictions per row: class index into classes, or value",
        "importances_comparable": "false when some node has a feature tie (an engine may credit "
                                  "a tied feature instead)",
        "rows_below_partition_changing_ties": "rows whose path passes a node where a tied "
                                              "alternative splits differently: their "
                                              "predictions may legitimately differ",
    }
    fn = os.path.join(HERE, "sklearn_tree_%s_%s_d%d.json" % (name, criterion, depth))
    with open(fn, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    internal = [nd for nd in nodes if "split" in nd]
    print("%s: %d nodes (%d internal, %d with a feature tie, %d with threshold ties, "
          "%d ties that change the partition), "
          "training %s %.6g" % (
              os.path.relpath(fn, ROOT), len(nodes), len(internal),
              sum(not nd["split"]["unique_feature"] for nd in internal),
              sum(not nd["split"]["unique_threshold"] for nd in internal),
              sum(not nd["split"]["ties_give_same_partition"] for nd in internal),
              "mse" if regression else "accuracy",
              out["training_mse"] if regression else out["training_accuracy"]))


def main():
    data_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "testdata")
    data_dir = os.path.normpath(data_dir)
    command = "cd <repo root> && /usr/bin/python3 arrowforest/forest/testdata/make_sklearn_refs.py"
    if len(sys.argv) > 1:
        command += " " + " ".join(sys.argv[1:])
    for name, criterion, depth in CASES:
        run_case(data_dir, name, criterion, depth, command)


if __name__ == "__main__":
    main()
