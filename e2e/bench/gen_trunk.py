#!/usr/bin/python3
"""Stand-in Trunk generator for the peer benchmark (peers.sh --peers-only).

Trunk (Randomer Forests, Tomita & Vogelstein, section 3.1): class c in {0, 1}
with probability 1/2 each; x ~ N(+mu, I_p) for class 0 and N(-mu, I_p) for
class 1, mu_j = 1/sqrt(j). Features x1..xp rounded to float32, label column
"label" (int 0/1), CSV with a header row.

This is NOT forestd's generator (`forestd gen trunk`), whose random stream is
Go's math/rand/v2 PCG; it draws the same distribution with numpy, so that the
peer halves of the benchmark can run before (or without) a forestd binary.
The normal benchmark always uses `forestd gen`.

usage: gen_trunk.py --n N --p P --seed S --out FILE.csv
"""
import argparse
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--p", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if not a.out.endswith(".csv"):
        sys.exit("gen_trunk.py: --out must end in .csv")
    rng = np.random.default_rng(a.seed)
    mu = 1.0 / np.sqrt(np.arange(1, a.p + 1, dtype=np.float64))
    y = rng.integers(0, 2, size=a.n)
    sign = np.where(y == 1, -1.0, 1.0)[:, None]
    x = (sign * mu[None, :] + rng.standard_normal((a.n, a.p))).astype(np.float32)
    with open(a.out, "w") as f:
        f.write(",".join(["x%d" % (j + 1) for j in range(a.p)] + ["label"]) + "\n")
        # str(np.float32) is the shortest decimal that rounds back to the same
        # float32: a float32 reader gets the exact value, a float64 reader a
        # value in the same order, which is all a tree looks at.
        for i in range(a.n):
            f.write(",".join(str(v) for v in x[i]))
            f.write(",%d\n" % y[i])


if __name__ == "__main__":
    main()
