"""Reference errors for the impulse experiment on the same data as forestd:

  BAYES   the Bayes rule: the matched filter, which knows the signal.
  LOGREG  a logistic regression whose C is chosen by 5-fold cross-validation
          on the training rows (the MORF paper's Appendix C lists logistic
          regression and a linear SVM among its impulse baselines).
  PLUGIN  the plug-in matched filter: the Bayes rule's form (equal priors,
          white unit-variance noise, which it is told) with the signal
          replaced by the class-mean difference of the training rows. It
          learns only what a learner must learn, the signal.
  ONSET   PLUGIN also told that the signal is zero before t = 20.
  WINDOW  PLUGIN told that the signal lives in steps 20..49 (all but 0.25% of
          its energy, in 30 of the 100 steps): what a class-mean-difference
          atom restricted to a well-placed patch (morf --mean-diff) aims at.

They show how close to the floor a learned classifier gets on these
particular draws: PLUGIN and ONSET know more about the problem than any
general-purpose learner, so their excess over BAYES is what 1,000 training
rows cost even a learner with the right model.

usage: /usr/bin/python3 impulse_refs.py TRAIN.csv TEST.csv  -> prints "BAYES LOGREG PLUGIN ONSET WINDOW"
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


def plugin(mask):
    """Nearest class mean under identity covariance over the masked steps."""
    x, t = tr.values[:, mask], te.values[:, mask]
    m0, m1 = x[y == 0].mean(axis=0), x[y == 1].mean(axis=0)
    return (((t @ (m1 - m0)) > (m1 @ m1 - m0 @ m0) / 2).astype(int) != yt).mean()


steps = np.arange(p)
print(bayes, (lr.predict(te.values) != yt).mean(), plugin(steps >= 0), plugin(steps >= 20),
      plugin((steps >= 20) & (steps < 50)))
