#!/usr/bin/python3
"""Independent check of forestd's OOB strength and correlation on the
dissertation's Table 6.3 data (feature-dependence-dissertation.md §1.6,
eqs 1.25-1.28; §6.4-6.5.1).

    /usr/bin/python3 e2e/bench/dissertation_oob.py FORESTD_BIN [SEEDS] > report.md

For xor1..xor5 (n = 160, the 80 % training part of the dissertation's
n = 200) and seeds 1..SEEDS (default 10), the same training file goes to
forestd and to an independent implementation:

  f_I        forestd `train --max-features log2 --trees 100` against
             scikit-learn RandomForestClassifier(100 trees,
             max_features='log2', bootstrap);
  FDM_RF rp  the same two on the columns `forestd select --fdm-map rp`
             maps with the ground-truth groups (§6.3);
  RF_FDM rp, RF_FDM drl
             forestd `--forest fdm --fdm-map rp|drl` with the ground-truth
             groups against RF_FDM built here by hand (§6.4): per tree a
             numpy bootstrap, per group 10 random mappings (rp: r ~
             U[-1, 1]^|G|; drl: distance to a random in-bag row), the |G|
             with the largest gCor_n (Def. 12) on the in-bag rows kept
             (eq. 6.2), one sklearn DecisionTreeClassifier
             (max_features='log2') on [X_marginal, mapped].

Breiman's OOB estimates for the Python forests are computed here from the
per-tree OOB votes, written from the dissertation's text (Q(x, j), eq.
1.25, 1.27, 1.28, 1.26), plus the direct estimate of rho-bar (eq. 1.21:
the mean over tree pairs of the covariance of rmg on rows out of bag for
both, over E[sd]^2). Columns: mean over seeds. The sklearn forests' in-bag
rows come from sklearn.ensemble._forest._generate_sample_indices (a
private helper of scikit-learn 1.2; the public estimators_samples_ exists
only for bagging estimators).
"""
import itertools
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pandas as pd
import sklearn
from sklearn.ensemble import RandomForestClassifier
from sklearn.ensemble._forest import _generate_sample_indices
from sklearn.tree import DecisionTreeClassifier

FD = sys.argv[1]
SEEDS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
N = 160
TREES = 100
W = tempfile.mkdtemp(prefix="forestd-oob-")

# dissertation Table 6.3: strength and correlation per row, data sets i..v
PAPER = {
    "f_I": ([0.789, 0.250, 0.627, 0.348, 0.539], [0.124, 0.134, 0.189, 0.277, 0.174]),
    "FDM_RF rp": ([0.843, 0.685, 0.837, 0.672, 0.814], [0.140, 0.217, 0.114, 0.215, 0.069]),
    "RF_FDM rp": ([0.857, 0.680, 0.836, 0.675, 0.816], [0.090, 0.146, 0.095, 0.163, 0.059]),
    "RF_FDM drl": ([0.819, 0.650, 0.795, 0.654, 0.803], [0.113, 0.140, 0.113, 0.173, 0.066]),
}
SETS = ["xor1", "xor2", "xor3", "xor4", "xor5"]


def run(*a):
    r = subprocess.run([FD, *a], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"forestd {' '.join(a)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def breiman(votes, inbag, y):
    """Strength, correlation (eq. 1.26), direct correlation (eq. 1.21),
    mean tree OOB accuracy, Var(mr), E[sd] from per-tree votes."""
    T, n = votes.shape
    classes = np.unique(y)
    oob = ~inbag
    cnt = oob.sum(0)
    rows = cnt > 0
    Q = np.stack([((votes == c) & oob).sum(0) for c in classes], 1) / np.maximum(cnt, 1)[:, None]
    yi = np.searchsorted(classes, y)
    Qo = Q.copy()
    Qo[np.arange(n), yi] = -1
    jhat = Qo.argmax(1)
    mr = (Q[np.arange(n), yi] - Q[np.arange(n), jhat])[rows]  # eq. 1.25
    s = mr.mean()
    var = (mr**2).mean() - s * s  # eq. 1.27
    sds, rmg = [], np.zeros((T, n))
    for k in range(T):
        o = oob[k] & rows
        h = votes[k]
        p1 = (h[o] == classes[yi[o]]).mean()
        p2 = (h[o] == classes[jhat[o]]).mean()
        sds.append(np.sqrt(max(p1 + p2 - (p1 - p2) ** 2, 0)))  # eq. 1.28
        rmg[k] = (h == classes[yi]).astype(float) - (h == classes[jhat]).astype(float)
    sd = np.mean(sds)
    covs = []
    for k, l in itertools.combinations(range(T), 2):
        o = oob[k] & oob[l] & rows
        if o.sum() >= 3:
            a, b = rmg[k][o], rmg[l][o]
            covs.append(np.mean(a * b) - a.mean() * b.mean())
    acc = np.mean([(votes[k][oob[k]] == y[oob[k]]).mean() for k in range(T)])
    return s, var / sd**2, np.mean(covs) / sd**2, acc, var, sd


def gcor(x, y):
    """gCor_n (Def. 12): (D - sum_k p_k D_k) / D, D the mean |x_i - x_j|."""
    def md(v):
        v = np.sort(v)
        m = len(v)
        if m < 2:
            return 0.0
        i = np.arange(1, m + 1)
        return 2 * np.sum((2 * i - m - 1) * v) / (m * (m - 1))
    d = md(x)
    if d == 0:
        return -np.inf
    return (d - sum((y == c).mean() * md(x[y == c]) for c in np.unique(y))) / d


def rf_fdm(X, y, marg, groups, kind, seed):
    rng = np.random.default_rng(seed)
    n = len(y)
    votes, inbag = np.empty((TREES, n), dtype=y.dtype), np.zeros((TREES, n), bool)
    for k in range(TREES):
        idx = rng.integers(0, n, n)
        inbag[k, idx] = True
        cols = [X[:, marg]] if marg else []
        for g in groups:
            cands = []
            for _ in range(10):
                if kind == "rp":
                    v = X[:, g] @ rng.uniform(-1, 1, len(g))
                else:
                    lm = X[idx[rng.integers(0, n)], g]
                    v = np.sqrt(((X[:, g] - lm) ** 2).sum(1))
                cands.append((gcor(v[idx], y[idx]), v))
            cands.sort(key=lambda c: -c[0])
            cols.append(np.stack([c[1] for c in cands[: len(g)]], 1))
        Z = np.hstack(cols).astype(np.float32)
        t = DecisionTreeClassifier(max_features="log2", random_state=int(rng.integers(1 << 31)))
        votes[k] = t.fit(Z[idx], y[idx]).predict(Z)
    return votes, inbag


out = {}
for name in SETS:
    for s in range(1, SEEDS + 1):
        tr = f"{W}/{name}-{s}.csv"
        run("gen", name, "--n", str(N), "--seed", str(s), "--out", tr)
        d = pd.read_csv(tr)
        feats = [c for c in d.columns if c != "y"]
        marg = [c for c in feats if c.startswith("m")]
        gs = {}
        for c in feats:
            if c.startswith("x"):
                gs.setdefault(c.split("_")[0], []).append(c)
        groups = ";".join(",".join(g) for g in gs.values())
        sel = ["select", "--in", tr, "--label", "y", "--out", f"{W}/rp.csv", "--groups", groups, "--fdm-map", "rp", "--seed", str(s)]
        fdmf = ["--forest", "fdm", "--fdm-groups", groups]
        if marg:
            sel += ["--marginal", ",".join(marg)]
            fdmf += ["--fdm-marginal", ",".join(marg)]
        run(*sel)
        base = ["--label", "y", "--out", f"{W}/m.model", "--max-features", "log2", "--trees", str(TREES), "--seed", str(s), "--threads", "1"]
        X, y = d[feats].values.astype(np.float64), d["y"].values
        for kind, path in [("f_I", tr), ("FDM_RF rp", f"{W}/rp.csv")]:
            m = run("train", "--in", path, *base)
            dd = pd.read_csv(path)
            Xm = dd.drop(columns=["y"]).values.astype(np.float32)
            rf = RandomForestClassifier(n_estimators=TREES, max_features="log2", bootstrap=True, random_state=s).fit(Xm, y)
            votes = np.stack([rf.classes_[t.predict(Xm).astype(int)] for t in rf.estimators_])
            inbag = np.zeros((TREES, len(y)), bool)
            for k, t in enumerate(rf.estimators_):
                inbag[k, _generate_sample_indices(t.random_state, len(y), len(y))] = True
            out.setdefault((kind, name), []).append((m["oob"]["strength"], m["oob"]["correlation"], *breiman(votes, inbag, y)))
        mi = [feats.index(c) for c in marg]
        gi = [[feats.index(c) for c in g] for g in gs.values()]
        for kind in ["rp", "drl"]:
            m = run("train", "--in", tr, *base, *fdmf, "--fdm-map", kind)
            votes, inbag = rf_fdm(X, y, mi, gi, kind, s)
            out.setdefault(("RF_FDM " + kind, name), []).append((m["oob"]["strength"], m["oob"]["correlation"], *breiman(votes, inbag, y)))

print("# OOB strength and correlation: forestd against an independent implementation\n")
print(f"`/usr/bin/python3 e2e/bench/dissertation_oob.py FORESTD {SEEDS}`, scikit-learn {sklearn.__version__}, numpy {np.__version__}; "
      f"xor1..xor5 (Table 6.1), n = {N}, {TREES} trees, max_features = log2, ground-truth groups, mean over seeds 1..{SEEDS}. "
      "'python' is scikit-learn's RandomForestClassifier (f_I, FDM_RF on forestd select's mapped columns) or RF_FDM built by hand with numpy and "
      "sklearn trees (RF_FDM rows); its estimates are computed from the per-tree OOB votes by eqs 1.25–1.28 written from the dissertation, "
      "and directly by eq. 1.21 (mean pairwise covariance of rmg over E[sd]²).\n")
print("| kind | data | dissertation strength | dissertation corr. | forestd strength | forestd corr. | python strength | python corr. (eq. 1.26) | python corr. direct (eq. 1.21) | python mean tree OOB acc. | python Var(mr) | python E[sd] |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for kind in PAPER:
    for d, name in enumerate(SETS):
        a = np.array(out[(kind, name)]).mean(0)
        ps, pc = PAPER[kind][0][d], PAPER[kind][1][d]
        print(f"| {kind} | {name} | {ps:.3f} | {pc:.3f} | " + " | ".join(f"{v:.3f}" for v in a) + " |")
