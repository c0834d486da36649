#!/usr/bin/python3
"""How well can any out-of-bag choice of RF settings do against ranger?

  peers_ceiling.py --bin FORESTD --folds DIR --peers RESULT.json [--peers RESULT.json ...]
                   [--trees 500] [--threads 2] --work DIR > REPORT.md

Each RESULT.json is a peers.sh --only cv --tune report (one per forest
seed, --seed S); FOLDS is a directory written by peers_folds.py with the
reports' fold seed. For every data set, seed and fold, trains one forest
per setting of forestd's RF --tune candidate set
(forest.tuneSpaceOf: mtry ∈ {m0, m0/2, 2·m0, 4·m0} rounded and capped at p,
m0 = ⌊√p⌋; min-leaf ∈ {10, 3, 1}: 12 settings) with all the trees and the
run's forest seed, and reports against ranger's accuracy on the same fold
(from RESULT.json), pooled over the seeds as peers_pool.py pools (mean ±
standard error over the folds of the seed-averaged per-fold differences,
percentage points):

  default     the untuned setting (m0, min-leaf 1);
  --tune      forestd train --tune, from RESULT.json (its fold accuracies);
  OOB search  the setting of least out-of-bag error at the full tree count
              (the exhaustive search --tune approximates at a fraction of
              its cost; ties go to the earlier setting in --tune's order);
  test pick   the setting of least test error on the fold (a bound that
              looks at the test rows).
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers_forestd import Failed, eval_error, parse_json, run  # noqa: E402
from peers_pool import pooled  # noqa: E402

TIMEOUT = 1200


def candidates(p):
    """forestd's RF --tune settings in its order: (mtry, min-leaf)."""
    m0 = int(math.isqrt(p))
    mtrys = []
    for f in (1, 0.5, 2, 4):
        m = min(max(int(math.floor(m0 * f + 0.5)), 1), p)  # Go's math.Round for m0·f > 0
        if m not in mtrys:
            mtrys.append(m)
    return [(m, leaf) for m in mtrys for leaf in (10, 3, 1)]


def fit_all(a, ds, f, seed, cache):
    """(mtry, min-leaf, OOB error, test error) of every candidate on fold f,
    trained with the forest seed; fits already in cache (a TSV in --work,
    so that an interrupted run resumes) are not trained again."""
    fits = []
    for m, leaf in candidates(ds["features"]):
        key = "%s\t%d\t%d\t%d\t%d\t%d" % (ds["name"], f["fold"], seed, a.trees, m, leaf)
        if key not in cache:
            model = os.path.join(a.work, "ceiling.model")
            cmd = [a.bin, "train", "--in", f["train"], "--label", ds["label"], "--out", model,
                   "--trees", str(a.trees), "--threads", str(a.threads), "--seed", str(seed),
                   "--task", "classification", "--max-features", str(m), "--min-leaf", str(leaf)]
            out, _, _ = run(cmd, a.work, "train", TIMEOUT)
            tj = parse_json(out)
            if tj is None:
                raise Failed("train printed no JSON object: " + " ".join(cmd))
            out, _, _ = run([a.bin, "eval", "--model", model, "--in", f["test"], "--label", ds["label"],
                             "--threads", str(a.threads)], a.work, "eval", TIMEOUT)
            cache[key] = (float(tj["oob"]["error"]), eval_error(parse_json(out)))
            with open(os.path.join(a.work, "fits.tsv"), "a") as w:
                w.write("%s\t%r\t%r\n" % ((key,) + cache[key]))
        fits.append((m, leaf) + cache[key])
    return fits


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--folds", required=True)
    ap.add_argument("--peers", required=True, action="append",
                    help="a peers.sh --only cv --tune report; repeat for several forest seeds")
    ap.add_argument("--trees", type=int, default=500)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    man = json.load(open(os.path.join(a.folds, "manifest.json")))
    runs = [json.load(open(p)) for p in a.peers]
    seeds = [int(r["meta"].get("seed", 1)) for r in runs]
    for p, r in zip(a.peers, runs):
        if int(r["meta"]["fold_seed"]) != int(man["seed"]):
            sys.exit("peers_ceiling.py: %s was run on folds of seed %s, %s holds seed %s"
                     % (p, r["meta"]["fold_seed"], a.folds, man["seed"]))
    cache = {}
    path = os.path.join(a.work, "fits.tsv")
    if os.path.exists(path):
        for line in open(path):
            *key, oob, test = line.rstrip("\n").split("\t")
            cache["\t".join(key)] = (float(oob), float(test))
    # diffs[name][col][seed index][fold]: accuracy minus ranger's, pp
    diffs, picks = {}, {}
    for ds in man["datasets"]:
        d = diffs[ds["name"]] = {c: [[] for _ in runs] for c in ("default", "tune", "oob", "test")}
        picks[ds["name"]] = [[] for _ in runs]
        m0 = candidates(ds["features"])[0][0]
        for i, (seed, r) in enumerate(zip(seeds, runs)):
            ranger = r["cv"][ds["name"]]["ranger"]["fold_accuracy"]
            tuned = r["cv"][ds["name"]]["forestd tune"]["fold_accuracy"]
            for f in ds["folds"]:
                k = f["fold"]
                fits = fit_all(a, ds, f, seed, cache)
                default = next(x for x in fits if x[0] == m0 and x[1] == 1)
                oob = min(enumerate(fits), key=lambda ix: (ix[1][2], ix[0]))[1]
                test = min(enumerate(fits), key=lambda ix: (ix[1][3], ix[0]))[1]
                for col, x in (("default", default), ("oob", oob), ("test", test)):
                    d[col][i].append(100 * (1 - x[3] - ranger[k]))
                d["tune"][i].append(100 * (tuned[k] - ranger[k]))
                picks[ds["name"]][i].append("%d/%d" % oob[:2])
                print("%s seed %d fold %d done" % (ds["name"], seed, k), file=sys.stderr)
    print("# RF settings chosen out of bag against ranger's defaults: how close can a choice come?\n")
    print("`/usr/bin/python3 e2e/bench/peers_ceiling.py %s` — %d trees; the folds, forest seeds and ranger's "
          "accuracies of the peers reports.\n" % (" ".join(sys.argv[1:]), a.trees))
    print("Accuracy minus ranger's on the same fold, percentage points: mean ± standard error over the folds "
          "of the seed-averaged per-fold differences (as peers_pool.py pools).\n")
    print("| data set | default | --tune | OOB search (12 forests per fold) | test pick (sees the test rows) |")
    print("|---|---:|---:|---:|---:|")
    for name, d in diffs.items():
        print("| %s | %s |" % (name, " | ".join(pooled(d[col]) for col in ("default", "tune", "oob", "test"))))
    print("\nThe OOB search's picks (mtry/min-leaf), folds 1..5:\n")
    for name, per_seed in picks.items():
        print("- %s: %s" % (name, "; ".join("seed %d: %s" % (s, ", ".join(p)) for s, p in zip(seeds, per_seed))))


if __name__ == "__main__":
    main()
