"""Reference errors for the impulse experiment on the same data as forestd:
the Bayes rule (the matched filter, which knows the signal) and a logistic
regression whose C is chosen by 5-fold cross-validation on the training rows
(the MORF paper's Appendix C lists logistic regression and a linear SVM among
its impulse baselines). They show how close to the attainable floor a
learned classifier gets on these particular test draws.

usage: /usr/bin/python3 impulse_refs.py TRAIN.csv TEST.csv  -> prints "BAYES LOGREG"
"""
import sys

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegressionCV

# arrowforest/synth: class 1 adds exp(-(t-20)/10) for t >= 20 to N(0, 1) noise
tr, te = pd.read_csv(sys.argv[1]), pd.read_csv(sys.argv[2])
y, yt = tr.pop("y").values, te.pop("y").values
p = tr.shape[1]
w = np.array([0.0 if t < 20 else np.exp(-(t - 20) / 10) for t in range(p)])
# equal priors, identity covariance: class 1 iff w.x > |w|^2 / 2
bayes = ((te.values @ w > w @ w / 2).astype(int) != yt).mean()
lr = LogisticRegressionCV(Cs=np.logspace(-4, 2, 13), cv=5, max_iter=5000).fit(tr.values, y)
print(bayes, (lr.predict(te.values) != yt).mean())
