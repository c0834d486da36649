#!/usr/bin/python3
"""Fixed stratified K-fold splits shared by every tool of the peer benchmark.

For each data set NAME, reads DATA/NAME.csv.gz (header row; the label is the
last column, as in testdata/), assigns every row to one of K folds and
writes into OUT:

  NAME.folds.csv          row,fold   (row = 0-based data row, fold = 0..K-1)
  NAME_f<k>_train.csv     header + the data lines whose fold != k
  NAME_f<k>_test.csv      header + the data lines whose fold == k
  manifest.json           {"k", "seed", "datasets": [{"name", "label",
                            "features", "rows", "classes", "folds": [{"fold",
                            "train", "test", "train_rows", "test_rows"}]}]}

Lines are copied byte for byte from the source CSV, so every tool reads the
exact values of the published data set.

Assignment (stratified, deterministic, independent of any library's
splitter): for each class, in order of first appearance, the row indices of
that class are permuted with numpy.random.RandomState(seed + class_number)
and dealt to folds round-robin, continuing the fold counter from the
previous class, so fold sizes differ by at most one and every class is
spread over the folds as evenly as possible.

usage: peers_folds.py --data DIR --out DIR [--k 5] [--seed 20240601] NAME...
"""
import argparse
import gzip
import json
import os
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("names", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    manifest = {"k": a.k, "seed": a.seed, "datasets": []}
    for name in a.names:
        src = os.path.join(a.data, name + ".csv.gz")
        if not os.path.exists(src):
            sys.exit("peers_folds.py: %s not found" % src)
        with gzip.open(src, "rt", newline="") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        header, rows = lines[0], lines[1:]
        cols = header.split(",")
        label = cols[-1]
        labels = [r.rsplit(",", 1)[1] for r in rows]
        classes = list(dict.fromkeys(labels))  # order of first appearance
        fold = np.full(len(rows), -1, dtype=np.int64)
        counter = 0
        for ci, c in enumerate(classes):
            idx = np.array([i for i, l in enumerate(labels) if l == c], dtype=np.int64)
            idx = idx[np.random.RandomState(a.seed + ci).permutation(len(idx))]
            for i in idx:
                fold[i] = counter % a.k
                counter += 1
        assert (fold >= 0).all()
        with open(os.path.join(a.out, name + ".folds.csv"), "w") as f:
            f.write("row,fold\n")
            for i, k in enumerate(fold):
                f.write("%d,%d\n" % (i, k))
        entry = {"name": name, "label": label, "features": len(cols) - 1,
                 "rows": len(rows), "classes": len(classes), "folds": []}
        for k in range(a.k):
            tr = os.path.join(a.out, "%s_f%d_train.csv" % (name, k))
            te = os.path.join(a.out, "%s_f%d_test.csv" % (name, k))
            ntr = nte = 0
            with open(tr, "w") as ftr, open(te, "w") as fte:
                ftr.write(header + "\n")
                fte.write(header + "\n")
                for i, r in enumerate(rows):
                    if fold[i] == k:
                        fte.write(r + "\n")
                        nte += 1
                    else:
                        ftr.write(r + "\n")
                        ntr += 1
            entry["folds"].append({"fold": k, "train": os.path.abspath(tr),
                                   "test": os.path.abspath(te),
                                   "train_rows": ntr, "test_rows": nte})
        manifest["datasets"].append(entry)
        print("folds: %s rows=%d classes=%d k=%d test sizes=%s" % (
            name, len(rows), len(classes), a.k,
            [f["test_rows"] for f in entry["folds"]]), file=sys.stderr)
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
