"""Randomer paper §3.2 invariance check: apply one random rotation (Q of the
QR decomposition of a Gaussian matrix, signs fixed) followed by a per-feature
scaling (log-uniform over 1e-3..1e3) to the feature columns of a training and
a test CSV; the label column `y` is kept.

usage: /usr/bin/python3 rotate_scale.py SEED TRAIN.csv TEST.csv OUT_TRAIN.csv OUT_TEST.csv
"""
import sys

import numpy as np
import pandas as pd

rng = np.random.default_rng(int(sys.argv[1]))
tr, te = pd.read_csv(sys.argv[2]), pd.read_csv(sys.argv[3])
cols = [c for c in tr.columns if c != "y"]
p = len(cols)
q, r = np.linalg.qr(rng.standard_normal((p, p)))
q *= np.sign(np.diag(r))
scale = 10.0 ** rng.uniform(-3, 3, p)
for src, dst in ((tr, sys.argv[4]), (te, sys.argv[5])):
    out = pd.DataFrame((src[cols].values @ q) * scale, columns=cols)
    out["y"] = src["y"].values
    out.to_csv(dst, index=False)
