"""A route around dRF's single forest, tried for issue 7's MSE target and
not taken: one scikit-learn regression forest per Isomap embedding axis
(150 trees, 3 candidate features, as the swiss-roll runs), the predicted
embedding point mapped back to R³ by kernel ridge regression on centred
responses over a small grid of (alpha, gamma). It prints the test MSE
against the noisy and the noise-free responses for every grid point; the
best of them is an optimistic figure, since the grid is judged on the test
rows.

usage:
  go build -o /tmp/drfbench ./e2e/bench/drf
  /tmp/drfbench prepare -dir DIR -data testdata -seed 1 -ntrain 1000 -ntest 10000
  /usr/bin/python3 e2e/bench/drf_axes.py DIR
"""
import sys

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestRegressor
from sklearn.kernel_ridge import KernelRidge
from sklearn.manifold import Isomap

d = sys.argv[1]
tr, te = pd.read_csv(f"{d}/swiss_train.csv"), pd.read_csv(f"{d}/swiss_test.csv")
xs = [f"x{i}" for i in range(1, 7)]
X, Xt = tr[xs].values, te[xs].values
Y, Yt = tr[["y0", "y1", "y2"]].values, te[["y0", "y1", "y2"]].values
Yc = te[["y0_true", "y1_true", "y2_true"]].values
Z = Isomap(n_neighbors=7, n_components=2).fit_transform(Y)
Zh = np.column_stack([RandomForestRegressor(150, max_features=3, random_state=1, n_jobs=2)
                      .fit(X, Z[:, k]).predict(Xt) for k in range(Z.shape[1])])
mu = Y.mean(axis=0)
print("alpha\tgamma\ttest MSE\tMSE vs noise-free")
for a in (1e-3, 1e-2, 1e-1):
    for g in (1e-2, 3e-3, 1e-3):
        P = KernelRidge(alpha=a, kernel="rbf", gamma=g).fit(Z, Y - mu).predict(Zh) + mu
        print(f"{a:g}\t{g:g}\t{((P - Yt) ** 2).mean():.4f}\t{((P - Yc) ** 2).mean():.4f}")
