#!/usr/bin/env bash
# Stopping and rebalancing the daemon under a backlog, two builds side by
# side: how long SIGTERM takes while 40,000 JSON rows wait, and how many
# rows a second member joining mid-backlog makes the group score twice.
#
#   bash e2e/bench/drain.sh OLD_FORESTD NEW_FORESTD
#
# Each build runs against its own broker (forestd broker, loopback): a
# score-only daemon (a 30-tree Trunk model, key id, JSON output) gets the
# backlog through kcat; SIGTERM one second later, timed. Then the same
# backlog with a second daemon of the same group started one second in;
# after 40 s both stop, and the predictions topic (kcat -C -e) is counted
# by id. Before 7f1ea78 the drain waited for a message a reader had fetched
# but never handed over until pipeline.drain_timeout (10 s), which is also
# the session timeout, so the broker evicted members and rows were scored
# twice.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 OLD_FORESTD NEW_FORESTD" >&2; exit 2; }
OLD=$(readlink -f "$1"); NEW=$(readlink -f "$2")
W=$(mktemp -d /tmp/forestd-drain.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$W"' EXIT
cd "$W"
"$NEW" gen trunk --n 5000 --seed 1 --out trunk.parquet >/dev/null
"$NEW" train --in trunk.parquet --label y --trees 30 --out trunk.model >/dev/null
"$NEW" gen trunk --n 40000 --seed 7 --out t.csv >/dev/null
python3 -c "import csv,json;[print(json.dumps({**{k:float(v) for k,v in r.items() if k!='y'},'id':i})) for i,r in enumerate(csv.DictReader(open('t.csv')))]" > big.jsonl

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
broker() { # PORT: a fresh broker in the background; its pid in BROKER
  rm -rf b && "$NEW" broker --listen 127.0.0.1:"$1" --data-dir "$W/b" > broker.log 2>&1 & BROKER=$!
  sleep 2
  printf 'brokers: [127.0.0.1:%s]\nstages: [score]\nmodel: %s/trunk.model\nkey: id\noutput_format: json\nhttp: 127.0.0.1:0\n' "$1" "$W" > serve.yaml
}

# stop BIN: seconds SIGTERM takes under the backlog
stop() {
  local p; p=$(port); broker "$p"
  "$1" serve --config serve.yaml 2> a.err & local A=$!
  sleep 5
  kcat -P -l -b 127.0.0.1:"$p" -t forestd.features big.jsonl; sleep 1
  local s e; s=$(date +%s.%N); kill -TERM $A; wait $A || true; e=$(date +%s.%N)
  kill $BROKER; wait $BROKER 2>/dev/null || true
  python3 -c "print('%.2f' % ($e - $s))"
}

# rebalance BIN: rows predicted more than once when a second member joins
rebalance() {
  local p; p=$(port); broker "$p"
  "$1" serve --config serve.yaml 2> a.err & local A=$!
  sleep 5
  kcat -P -l -b 127.0.0.1:"$p" -t forestd.features big.jsonl; sleep 1
  "$1" serve --config serve.yaml 2> b.err & local B=$!
  sleep 40
  kill -TERM $A $B; wait $A $B || true
  kcat -C -e -q -b 127.0.0.1:"$p" -t forestd.predictions > preds.jsonl
  kill $BROKER; wait $BROKER 2>/dev/null || true
  python3 - <<'PY'
import collections, json
c = collections.Counter()
for line in open("preds.jsonl"):
    line = line.strip()
    if line:
        for r in (lambda o: o if isinstance(o, list) else [o])(json.loads(line)):
            c[r.get("id")] += 1
print("%d distinct, %d twice or more" % (len(c), sum(v - 1 for v in c.values())))
PY
}

for i in 1 2; do
  echo "SIGTERM under a 40,000-row backlog, run $i: old $(stop "$OLD") s, new $(stop "$NEW") s"
done
echo "second member joining mid-backlog, old: $(rebalance "$OLD")"
echo "second member joining mid-backlog, new: $(rebalance "$NEW")"
