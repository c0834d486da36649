#!/usr/bin/python3
"""Many-class Gaussian data for the class-count benchmark (manyclass.sh).

K classes, equally likely; class c has its own mean mu_c, drawn once per file
from N(0, s^2 I_p) (s = --spread), and x ~ N(mu_c, I_p). Features x1..xp
rounded to float32, label column "label" (int 0..K-1), CSV with a header row.
The same seed and K give the same file; only K changes between the files of
one benchmark, so rows, features and the noise level stay fixed.

usage: gen_manyclass.py --n N --p P --k K --seed S [--spread S] --out FILE.csv
"""
import argparse
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--p", type=int, default=40)
    ap.add_argument("--k", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--spread", type=float, default=0.5)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if not a.out.endswith(".csv"):
        sys.exit("gen_manyclass.py: --out must end in .csv")
    if a.k < 2:
        sys.exit("gen_manyclass.py: --k must be at least 2")
    rng = np.random.default_rng(a.seed)
    mu = a.spread * rng.standard_normal((a.k, a.p))
    y = rng.integers(0, a.k, size=a.n)
    x = (mu[y] + rng.standard_normal((a.n, a.p))).astype(np.float32)
    with open(a.out, "w") as f:
        f.write(",".join(["x%d" % (j + 1) for j in range(a.p)] + ["label"]) + "\n")
        # str(np.float32): the shortest decimal that rounds back to the float32
        for i in range(a.n):
            f.write(",".join(str(v) for v in x[i]))
            f.write(",%d\n" % y[i])


if __name__ == "__main__":
    main()
