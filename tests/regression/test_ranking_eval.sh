#!/bin/sh
# `unif eval` of a pair model on a ranking file (data/xquad_en_ranking/dev.jsonl: a query, its
# candidate texts and their relevance) reports the ranking metrics of the model's scores: here
# recomputed from `unif predict`'s logits of every (query, text) pair by the definitions of
# framework/metrics/retrieval.h, and equal. Bad ranking files are one error line each.
# Usage: test_ranking_eval.sh UNIF SOURCE_DIR
set -u
UNIF=$1
cd "$2"
MODEL=tests/fixtures/tiny-bert-zh
DATA=data/xquad_en_ranking/dev.jsonl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
"$UNIF" eval --model $MODEL --data $DATA > "$tmp/eval.json" || fail "unif eval exited $?"
python3 - "$DATA" "$tmp/pairs.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1], encoding="utf-8"):
        r = json.loads(line)
        for t in r["texts"]:
            out.write(json.dumps([r["query"], t], ensure_ascii=False) + "\n")
PY
"$UNIF" predict --model $MODEL --input "$tmp/pairs.jsonl" --output "$tmp/pred.jsonl" || fail "unif predict exited $?"
python3 - "$DATA" "$tmp/pred.jsonl" "$tmp/eval.json" <<'PY' || fails=$((fails + 1))
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
preds = [json.loads(l) for l in open(sys.argv[2])]
got = json.load(open(sys.argv[3]))
k = 0
mrr = ndcg = ap = 0.0
for r in rows:
    scores = []
    for _ in r["texts"]:
        logits = preds[k]["logits"]
        scores.append(logits[1] - logits[0])
        k += 1
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    rel = [r["labels"][i] > 0 for i in order]
    first = next(i for i, x in enumerate(rel) if x)
    mrr += 1 / (first + 1) if first < 10 else 0
    dcg = sum(1 / math.log2(i + 2) for i, x in enumerate(rel[:10]) if x)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(sum(rel), 10)))
    ndcg += dcg / ideal
    hits, s = 0, 0.0
    for i, x in enumerate(rel[:100]):
        if x:
            hits += 1
            s += hits / (i + 1)
    ap += s / min(100, sum(rel))
n = len(rows)
want = {"mrr@10": mrr / n, "ndcg@10": ndcg / n, "map@100": ap / n}
bad = [m for m in want if abs(got[m] - want[m]) > 1e-9]
print(("FAIL: " if bad or got["examples"] != n else "ok: ") +
      f"ranking metrics of {n} queries equal to those of unif predict's scores: " +
      ", ".join(f"{m} {got[m]:.6f} (recomputed {want[m]:.6f})" for m in want))
sys.exit(1 if bad or got["examples"] != n else 0)
PY
# One error line per bad file: labels not one per text, a label that is not a number, no texts.
printf '{"query": "q", "texts": ["a", "b"], "labels": [1]}\n' > "$tmp/bad1.jsonl"
printf '{"query": "q", "texts": ["a", "b"], "labels": [1, "x"]}\n' > "$tmp/bad2.jsonl"
printf '{"query": "q", "texts": [], "labels": []}\n' > "$tmp/bad3.jsonl"
printf '{"query": "q", "texts": ["a"], "labels": [0]}\n' > "$tmp/bad4.jsonl"
for i in 1 2 3 4; do
  "$UNIF" eval --model $MODEL --data "$tmp/bad$i.jsonl" > /dev/null 2> "$tmp/err$i"
  rc=$?
  [ $rc = 2 ] && [ "$(grep -c '^error: ' "$tmp/err$i")" = 1 ] || fail "bad ranking file $i: exit $rc: $(cat "$tmp/err$i")"
done
grep -q "bad1.jsonl:1: field 'labels' is \[1\] (expected a list of 2 numbers, one per text)" "$tmp/err1" ||
  fail "labels of another length: $(cat "$tmp/err1")"
grep -q "bad2.jsonl:1: labels\[1\] is \"x\"" "$tmp/err2" || fail "a label that is not a number: $(cat "$tmp/err2")"
grep -q "no query has a relevant text" "$tmp/err4" || fail "no relevant text: $(cat "$tmp/err4")"
[ $fails = 0 ] && echo "all ranking checks passed" || { echo "$fails ranking checks failed"; exit 1; }
