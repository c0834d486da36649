#!/usr/bin/python3
"""Reference feature distances for arrowforest/locality (dissertation ch. 3, §3.3).

Run from the repository root (testdata beside it):

    /usr/bin/python3 arrowforest/locality/testdata/make_refs.py

Python 3.11.2, numpy 1.24.2, scipy 1.10.1, scikit-learn 1.2.1 (Debian).
Each feature is a point in R^n (its n sample values). Inputs are cast to
float32 first, as forestd's frames hold float32 columns, then to float64.

  corr      1 - rho^2, rho = numpy.corrcoef
  euclidean scipy.spatial.distance.cdist (direct differences)
  pca       sklearn.decomposition.PCA(n_components=c, svd_solver="full")
            fitted on the p feature points, then cdist of the scores
  geodesic  sklearn.manifold.Isomap(n_neighbors=k, n_components=2).dist_matrix_
            (k-nearest-neighbour graph with Euclidean edge weights,
            scipy.sparse.csgraph.shortest_path, undirected); cross-checked
            against kneighbors_graph + shortest_path(directed=False)
"""
import json

import numpy as np
import pandas as pd
import scipy.sparse.csgraph as csg
from scipy.spatial.distance import cdist
from sklearn.decomposition import PCA
from sklearn.manifold import Isomap
from sklearn.neighbors import kneighbors_graph

SETS = [("wine", "label", 5), ("sonar", "label", 20)]
K = 8

for name, label, comps in SETS:
    df = pd.read_csv(f"testdata/{name}.csv.gz")
    X = df.drop(columns=[label]).to_numpy().astype(np.float32).astype(np.float64)
    F = X.T  # p feature points in R^n
    p = F.shape[0]
    corr = 1 - np.corrcoef(F) ** 2
    np.fill_diagonal(corr, 0)
    eu = cdist(F, F)
    Z = PCA(n_components=comps, svd_solver="full").fit_transform(F)
    pca = cdist(Z, Z)
    iso = Isomap(n_neighbors=K, n_components=2).fit(F).dist_matrix_
    g = kneighbors_graph(F, K, mode="distance")
    geo = csg.shortest_path(g, directed=False)
    assert np.max(np.abs(geo - iso)) < 1e-9 * max(1, np.max(iso)), "Isomap and csgraph disagree"
    # the k-nearest-neighbour sets must be free of ties for a fair comparison
    srt = np.sort(eu + np.diag(np.full(p, np.inf)), axis=1)
    gap = np.min(srt[:, K] - srt[:, K - 1])
    assert gap > 1e-6, f"{name}: tie at the k-th neighbour ({gap})"
    out = {
        "dataset": name, "rows": int(X.shape[0]), "features": list(df.columns.drop(label)),
        "k": K, "components": comps,
        "corr": corr.tolist(), "euclidean": eu.tolist(), "pca": pca.tolist(), "geodesic": iso.tolist(),
    }
    with open(f"arrowforest/locality/testdata/ref_{name}.json", "w") as fh:
        json.dump(out, fh)
    print(name, X.shape, "min kth-neighbour gap", gap, "geodesic max", np.max(iso))
