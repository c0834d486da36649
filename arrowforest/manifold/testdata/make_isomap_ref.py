# Reference Isomap geodesic distances for arrowforest/manifold tests.
#
# Run from this directory with the system Python (scikit-learn 1.2.1,
# numpy 1.24.2, scipy 1.10.1):
#
#   /usr/bin/python3 make_isomap_ref.py
#
# It writes isomap_sklearn.json.gz (gzip, mtime 0): the input points (a noisy swiss roll,
# n = 100, q = 3, numpy seed 7), k = 7, and scikit-learn's
# Isomap(n_neighbors=7).fit(X).dist_matrix_ (shortest paths on the
# symmetric k-nearest-neighbour graph, scipy's graph_shortest_path via
# sklearn.utils.graph / scipy.sparse.csgraph.shortest_path), plus the same
# for k = 4. Numbers are written with repr() (shortest round-trip form).
import gzip
import json

import numpy as np
import sklearn
from sklearn.manifold import Isomap

rng = np.random.default_rng(7)
n = 100
t = np.pi + 2 * np.pi * rng.random(n)
u = 21 * rng.random(n)
X = np.column_stack([t * np.cos(t), u, t * np.sin(t)]) + np.sqrt(0.5) * rng.standard_normal((n, 3))

out = {
    "tool": "scikit-learn %s, numpy %s" % (sklearn.__version__, np.__version__),
    "command": "/usr/bin/python3 make_isomap_ref.py",
    "n": n,
    "q": 3,
    "points": [float(v) for v in X.ravel()],
    "cases": [],
}
for k in (7, 4):
    iso = Isomap(n_neighbors=k, n_components=2, path_method="D").fit(X)
    out["cases"].append({"k": k, "dist": [float(v) for v in iso.dist_matrix_.ravel()]})
with gzip.GzipFile("isomap_sklearn.json.gz", "wb", mtime=0) as f:
    f.write(json.dumps(out, separators=(",", ":")).encode())
