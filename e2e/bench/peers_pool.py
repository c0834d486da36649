#!/usr/bin/env python3
"""Pools CV runs of peers.sh made at several forest seeds on the same folds.

    python3 e2e/bench/peers_pool.py RESULT.json [RESULT.json ...]

Each RESULT.json is a peers.sh report (`--only cv`, `--seed S`; the fold
seed must agree). A single run's accuracy difference between two tools
mixes the fold sample with the forests' own randomness (one seed each);
pooling several seeds averages the latter out. For every data set and
tool the report gives the mean accuracy over all (seed, fold) pairs and,
against ranger, the mean difference ± its standard error, computed over
the folds of the seed-averaged per-fold differences (the folds are the
independent units: the same fold's test rows serve every seed). Prints
markdown; standard library only.
"""
import json
import statistics
import sys


def pooled(diffs):
    """diffs[seed][fold]: one tool's accuracy minus ranger's, in percentage
    points. Returns "mean ± se": the mean and the standard error over the
    folds of the seed-averaged per-fold differences."""
    k = len(diffs[0])
    per_fold = [statistics.mean(d[f] for d in diffs) for f in range(k)]
    se = statistics.stdev(per_fold) / k ** 0.5 if k > 1 else float("nan")
    return "%+.2f ± %.2f" % (statistics.mean(per_fold), se)


def main(paths):
    runs = [json.load(open(p)) for p in paths]
    fold_seeds = {r["meta"].get("fold_seed") for r in runs}
    if len(fold_seeds) != 1:
        sys.exit("peers_pool: the runs used different folds (fold seeds %s)" % sorted(fold_seeds))
    seeds = [r["meta"].get("seed", 1) for r in runs]
    if len(set(seeds)) != len(seeds):
        sys.exit("peers_pool: two runs have the same forest seed (%s)" % seeds)
    sets = runs[0]["meta"]["cv_datasets"]
    tools = [t for t in runs[0]["cv"][sets[0]] if all(t in r["cv"].get(d, {}) for r in runs for d in sets)]
    print("# forestd vs ranger vs scikit-learn, pooled over forest seeds %s\n" % ", ".join(map(str, seeds)))
    print("Runs: %s. Folds: seed %s, the same in every run.\n" % (", ".join(paths), fold_seeds.pop()))
    print("Accuracies in percent, mean over %d seeds × the folds; differences against ranger in percentage "
          "points: mean of the seed-averaged per-fold differences ± its standard error over folds.\n" % len(runs))
    others = [t for t in tools if t != "ranger"]
    print("| data set | " + " | ".join(tools) + " | " + " | ".join("%s − ranger" % t for t in others) + " |")
    print("|---|" + "---:|" * (len(tools) + len(others)))
    for d in sets:
        acc = {t: [r["cv"][d][t]["fold_accuracy"] for r in runs] for t in tools}  # [seed][fold]
        k = len(acc["ranger"][0])
        cells = ["%.2f" % (100 * statistics.mean(a for per in acc[t] for a in per)) for t in tools]
        for t in others:
            cells.append(pooled([[100 * (acc[t][s][f] - acc["ranger"][s][f]) for f in range(k)]
                                 for s in range(len(runs))]))
        print("| %s | %s |" % (d, " | ".join(cells)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
