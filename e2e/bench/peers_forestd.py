#!/usr/bin/python3
"""forestd half of the peer benchmark: drives the forestd binary.

  peers_forestd.py trunk --bin FORESTD --train F --test F --label COL
                   [--trees 100] [--threads 2] [--seed 1] --work DIR --out RESULT.json
  peers_forestd.py cv --bin FORESTD --folds DIR [--trees 500] [--threads 2]
                   [--seed 1] [--splits binned,exact] --work DIR --out RESULT.json

Trunk, per split mode (binned = forestd's default, exact = --split exact):
  forestd train --in TRAIN --label COL --out MODEL --trees T --threads 2 --seed S
                [--split exact]
  forestd score --model MODEL --in TEST --out DIR/score.parquet --threads 2
  forestd eval  --model MODEL --in TEST --label COL
each under /usr/bin/time -f %M (peak RSS in KiB). Train seconds: the
`seconds` (or `train_seconds`) field of the JSON object train prints on
stdout; if it prints none, the wall time of the train command (flagged
"train_seconds_source": "wall", which includes reading the file). Predict
rate: rows / eval's `seconds` if eval prints it (the fastest of 3 evals, as
the peers time the fastest of 3 predictions), else rows / the wall time of
score (flagged). Test error: eval's `error` (or 1 - `accuracy`).
Peak RSS: the largest of the three processes.

CV, per split mode and fold: train with --trees 500 --max-features sqrt
--threads 2 --seed 1 on NAME_f<k>_train.csv, eval on NAME_f<k>_test.csv;
accuracy = eval's `accuracy`. The mode "tune" trains with --tune instead of
--max-features sqrt (binned search; max-features and min-leaf chosen out of
bag on the training folds) and records each fold's winner.

A failing forestd command does not stop the run: its last stderr line is
recorded under "failed" and the reporter shows it.
"""
import argparse
import json
import os
import subprocess
import sys
import time

TIMEOUT_TRUNK = int(os.environ.get("PEERS_TIMEOUT_TRUNK", "3600"))
TIMEOUT_FOLD = int(os.environ.get("PEERS_TIMEOUT_FOLD", "1200"))


LAST_CPU = None
PREDICT_REPS = 3


class Failed(Exception):
    pass


def run(cmd, work, tag, timeout):
    """Run cmd under /usr/bin/time; return (stdout, wall seconds, peak RSS KiB).
    The CPU seconds (user + sys) of the last command are left in LAST_CPU."""
    global LAST_CPU
    LAST_CPU = None
    rss_file = os.path.join(work, tag + ".rss")
    full = ["/usr/bin/time", "-f", "%M %U %S", "-o", rss_file] + cmd
    t0 = time.perf_counter()
    try:
        p = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failed("%s: timed out after %ds" % (" ".join(cmd[:2]), timeout))
    wall = time.perf_counter() - t0
    with open(os.path.join(work, tag + ".stderr"), "w") as f:
        f.write(p.stderr)
    if p.returncode != 0:
        last = [l for l in p.stderr.strip().splitlines() if l.strip()]
        raise Failed("%s exited %d: %s" % (" ".join(os.path.basename(c) if i == 0 else c
                                                   for i, c in enumerate(cmd[:2])),
                                          p.returncode, last[-1] if last else "(no stderr)"))
    rss = None
    try:
        fields = open(rss_file).read().strip().splitlines()[-1].split()
        rss = int(fields[0])
        LAST_CPU = float(fields[1]) + float(fields[2])
    except (OSError, ValueError, IndexError):
        pass
    return p.stdout, wall, rss


def parse_json(stdout):
    """The JSON object printed on stdout (whole output, else its last {...} line)."""
    s = stdout.strip()
    if not s:
        return None
    try:
        v = json.loads(s)
        return v if isinstance(v, dict) else None
    except ValueError:
        pass
    for line in reversed(s.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def eval_error(ev):
    if ev is None:
        raise Failed("eval printed no JSON object")
    if "error" in ev:
        return float(ev["error"])
    if "accuracy" in ev:
        return 1.0 - float(ev["accuracy"])
    raise Failed("eval JSON has neither error nor accuracy: %s" % sorted(ev))


def train_cmd(a, split, train, label, model, trees, extra=()):
    cmd = [a.bin, "train", "--in", train, "--label", label, "--out", model,
           "--trees", str(trees), "--threads", str(a.threads), "--seed", str(a.seed)]
    if split == "tune":
        return cmd + ["--tune"]
    if split != "binned":
        cmd += ["--split", split]
    return cmd + list(extra)


def trunk(a):
    res = {}
    for split in a.splits:
        r = {"split": split}
        res[split] = r
        model = os.path.join(a.work, "trunk_%s.model" % split)
        try:
            cmd = train_cmd(a, split, a.train, a.label, model, a.trees)
            r["train_command"] = " ".join(cmd)
            out, wall, rss_train = run(cmd, a.work, "trunk_%s_train" % split, TIMEOUT_TRUNK)
            tj = parse_json(out) or {}
            r["train_json"] = tj
            r["train_wall_seconds"] = wall
            r["train_cpu_seconds"] = LAST_CPU
            r["train_cpu_seconds_source"] = "user+sys of the train process (incl. reading)"
            secs = tj.get("seconds", tj.get("train_seconds"))
            if isinstance(secs, (int, float)):
                r["train_seconds"], r["train_seconds_source"] = float(secs), "train JSON"
            else:
                r["train_seconds"], r["train_seconds_source"] = wall, "wall"
            scored = os.path.join(a.work, "trunk_%s_score.parquet" % split)
            cmd = [a.bin, "score", "--model", model, "--in", a.test, "--out", scored,
                   "--threads", str(a.threads)]
            r["score_command"] = " ".join(cmd)
            _, score_wall, rss_score = run(cmd, a.work, "trunk_%s_score" % split, TIMEOUT_TRUNK)
            r["score_wall_seconds"] = score_wall
            cmd = [a.bin, "eval", "--model", model, "--in", a.test, "--label", a.label,
                   "--threads", str(a.threads)]
            r["eval_command"] = " ".join(cmd)
            evs, rss_eval = [], None
            for rep in range(PREDICT_REPS):   # the fastest of 3 evals counts
                out, eval_wall, rss = run(cmd, a.work, "trunk_%s_eval%d" % (split, rep), TIMEOUT_TRUNK)
                rss_eval = max(rss_eval or 0, rss or 0) or None
                evs.append(parse_json(out))
            secs = [e.get("seconds") for e in evs if e and isinstance(e.get("seconds"), (int, float))]
            ev = min((e for e in evs if e), key=lambda e: e.get("seconds", float("inf")),
                     default=None)
            r["eval_json"] = ev
            r["eval_seconds_all"] = secs
            r["error"] = eval_error(ev)
            r["accuracy"] = 1.0 - r["error"]
            rows = int(ev.get("rows", a.test_rows or 0)) or None
            r["test_rows"] = rows
            if rows and isinstance(ev.get("seconds"), (int, float)) and ev["seconds"] > 0:
                r["predict_seconds"], r["predict_seconds_source"] = float(ev["seconds"]), "eval JSON"
            else:
                r["predict_seconds"], r["predict_seconds_source"] = score_wall, "score wall"
            if rows:
                r["predict_rows_per_s"] = rows / r["predict_seconds"]
                r["score_wall_rows_per_s"] = rows / score_wall
            r["rss_kib"] = {"train": rss_train, "score": rss_score, "eval": rss_eval}
            r["peak_rss_kib"] = max(v for v in (rss_train, rss_score, rss_eval) if v is not None)
            print("forestd %s trunk: train %.2fs (%s), predict %.0f rows/s (%s), error %.4f" % (
                split, r["train_seconds"], r["train_seconds_source"],
                r.get("predict_rows_per_s", float("nan")), r["predict_seconds_source"],
                r["error"]), file=sys.stderr)
        except Failed as e:
            r["failed"] = str(e)
            print("forestd %s trunk FAILED: %s" % (split, e), file=sys.stderr)
    return {"trunk": res}


def cv(a):
    man = json.load(open(os.path.join(a.folds, "manifest.json")))
    res = {}
    for split in a.splits:
        res[split] = {}
        for ds in man["datasets"]:
            folds, entry = [], {}
            res[split][ds["name"]] = entry
            try:
                for f in ds["folds"]:
                    model = os.path.join(a.work, "cv_%s_%s_f%d.model" % (split, ds["name"], f["fold"]))
                    tag = "cv_%s_%s_f%d" % (split, ds["name"], f["fold"])
                    cmd = train_cmd(a, split, f["train"], ds["label"], model, a.trees,
                                    ["--max-features", "sqrt"])
                    out, wall, _ = run(cmd, a.work, tag + "_train", TIMEOUT_FOLD)
                    tj = parse_json(out) or {}
                    secs = tj.get("seconds", tj.get("train_seconds"))
                    cmd_e = [a.bin, "eval", "--model", model, "--in", f["test"], "--label", ds["label"],
                             "--threads", str(a.threads)]
                    out, _, _ = run(cmd_e, a.work, tag + "_eval", TIMEOUT_FOLD)
                    err = eval_error(parse_json(out))
                    folds.append({"fold": f["fold"], "accuracy": 1.0 - err, "error": err,
                                  "train_seconds": float(secs) if isinstance(secs, (int, float)) else wall,
                                  "train_command": " ".join(cmd), "eval_command": " ".join(cmd_e)})
                    tu = tj.get("tuning")
                    if tu:
                        w = tu["candidates"][tu["winner"]]
                        folds[-1]["winner"] = {"mtry": w["mtry"], "min_leaf": w["min_leaf"]}
                    try:
                        os.remove(model)
                    except OSError:
                        pass
                acc = [r["accuracy"] for r in folds]
                entry.update({"mean_accuracy": sum(acc) / len(acc), "fold_accuracy": acc,
                              "train_seconds": sum(r["train_seconds"] for r in folds),
                              "folds": folds})
                print("forestd %s cv %s: mean accuracy %.4f (%s)" % (
                    split, ds["name"], entry["mean_accuracy"], " ".join("%.4f" % v for v in acc)),
                    file=sys.stderr)
            except Failed as e:
                entry["failed"] = str(e)
                print("forestd %s cv %s FAILED: %s" % (split, ds["name"], e), file=sys.stderr)
    return {"cv": res}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["trunk", "cv"])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--train")
    ap.add_argument("--test")
    ap.add_argument("--test-rows", type=int, dest="test_rows")
    ap.add_argument("--folds")
    ap.add_argument("--label", default="label")
    ap.add_argument("--trees", type=int)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--splits", default="binned,exact")
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    a.splits = [s for s in a.splits.split(",") if s]
    os.makedirs(a.work, exist_ok=True)
    a.trees = a.trees or (100 if a.mode == "trunk" else 500)
    version = ""
    try:
        p = subprocess.run([a.bin, "version"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, timeout=30)
        if p.returncode == 0 and p.stdout.strip():
            version = p.stdout.strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired):
        pass
    out = {"tool": "forestd", "version": version, "command": " ".join(sys.argv)}
    out.update(trunk(a) if a.mode == "trunk" else cv(a))
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
