# Reference leave-one-out errors of the dRF backscoring map (kernel ridge
# regression with the Gaussian kernel of the dRF paper's eq. (9)) for
# arrowforest/manifold's SelectBackscore.
#
# Run from this directory with the system Python (scikit-learn 1.2.1,
# numpy 1.24.2):
#
#   /usr/bin/python3 make_loo_ref.py
#
# It writes loo_sklearn.json: n = 60 embedded points z (m = 2, a noisy
# spiral's parameters, numpy seed 11) and responses y (q = 3), and for
# several (sigma_g, gamma_g): the leave-one-out mean squared error per
# response coordinate computed by refitting scikit-learn's
# KernelRidge(alpha = n / gamma_g, kernel="rbf", gamma = 1 / sigma_g) on
# every n - 1 rows (cross_val_predict with LeaveOneOut) — the brute-force
# counterpart of the closed form — and the effective degrees of freedom
# tr(K (K + alpha I)^-1) from numpy. KernelRidge minimises
# ||y - K c||^2 + alpha c'Kc, whose solution c = (K + alpha I)^-1 y is
# eq. (8) with alpha = N / gamma_g; rbf is exp(-gamma ||v - w||^2), eq. (9)
# with gamma = 1 / sigma_g. json writes floats in their shortest
# round-trip form.
#
# For the out-of-bag selection (SelectBackscoreOOB) it also writes 40
# "out-of-bag" points: a training row r and a point z_oob near z_r (as
# the forest's out-of-bag prediction on the embedding would be), and per
# case oob_mse, the mean over points and outputs of
# (y_r - g_{-r}(z_oob))^2 where g_{-r} is KernelRidge refitted without
# row r — the brute-force counterpart of the closed form in select.go.
import json

import numpy as np
import sklearn
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import LeaveOneOut, cross_val_predict

rng = np.random.default_rng(11)
n = 60
s = 3 * rng.random(n)
u = 2 * rng.random(n)
z = np.column_stack([s, u])
y = np.column_stack([np.cos(2 * s), u, np.sin(2 * s)]) + 0.2 * rng.standard_normal((n, 3))

cases = []
for sigma, gamma in [(0.5, 10.0), (0.5, 1000.0), (2.0, 100.0), (0.05, 1e5), (8.0, 1.0)]:
    alpha = n / gamma
    kr = KernelRidge(alpha=alpha, kernel="rbf", gamma=1.0 / sigma)
    pred = cross_val_predict(kr, z, y, cv=LeaveOneOut())
    k = rbf_kernel(z, gamma=1.0 / sigma)
    df = float(np.trace(k @ np.linalg.inv(k + alpha * np.eye(n))))
    cases.append({"sigma": sigma, "gamma": gamma, "loo_mse": float(np.mean((pred - y) ** 2)), "df": df})

oob_rows = rng.choice(n, size=40, replace=False)
oob_z = z[oob_rows] + 0.3 * rng.standard_normal((40, 2))
for c in cases:
    kr = KernelRidge(alpha=n / c["gamma"], kernel="rbf", gamma=1.0 / c["sigma"])
    err = []
    for r, zo in zip(oob_rows, oob_z):
        keep = np.arange(n) != r
        kr.fit(z[keep], y[keep])
        err.append(np.mean((kr.predict(zo[None, :])[0] - y[r]) ** 2))
    c["oob_mse"] = float(np.mean(err))

out = {
    "tool": "scikit-learn %s, numpy %s" % (sklearn.__version__, np.__version__),
    "command": "/usr/bin/python3 make_loo_ref.py",
    "n": n, "m": 2, "q": 3,
    "z": [float(v) for v in z.ravel()],
    "y": [float(v) for v in y.ravel()],
    "cases": cases,
    "oob_rows": [int(r) for r in oob_rows],
    "oob_z": [float(v) for v in oob_z.ravel()],
}
with open("loo_sklearn.json", "w") as fh:
    json.dump(out, fh, indent=1)
    fh.write("\n")
