"""The issue's "patch bank" baseline for impulse: scikit-learn's random forest
over the sums of every contiguous window of the series (all widths 1..p).

usage: /usr/bin/python3 patch_bank.py TRAIN.csv TEST.csv TREES SEED  -> prints the test error
"""
import sys

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier


def bank(x):
    c = np.concatenate([np.zeros((x.shape[0], 1)), np.cumsum(x, axis=1)], axis=1)
    p = x.shape[1]
    return np.stack([c[:, j + w] - c[:, j] for w in range(1, p + 1) for j in range(p - w + 1)],
                    axis=1).astype(np.float32)


tr, te = pd.read_csv(sys.argv[1]), pd.read_csv(sys.argv[2])
y, yt = tr.pop("y").values, te.pop("y").values
rf = RandomForestClassifier(n_estimators=int(sys.argv[3]), random_state=int(sys.argv[4]), n_jobs=2)
rf.fit(bank(tr.values), y)
print((rf.predict(bank(te.values)) != yt).mean())
