#!/usr/bin/env bash
# A CRF over the token classifier (model.crf) against the softmax classifier alone, same data, model,
# seed and schedule: dev entity F1 (seqeval, `unif eval`), and the share of dev sentences whose
# predicted tags are not a valid BIO sequence (an I-X not after B-X or I-X), which a constrained
# CRF never produces. Two set-ups: weibo_ner_zh with the tiny random-weight BERT
# (configs/token_classification.yaml, no adversarial step) and wnut17_en with all-MiniLM-L6-v2
# (configs/minilm/token_classification.yaml). Prints a markdown table.
#
#   bench/crf/run.sh                 # both
#   SETUPS=weibo bench/crf/run.sh    # one (weibo | wnut17)
#   SEEDS="42 7" bench/crf/run.sh    # several seeds (one row each)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
need_unif
setups=${SETUPS:-weibo wnut17}
seeds=${SEEDS:-42}
out=$root/.cache/bench-crf
mkdir -p "$out"
echo "| data, model | seed | head | dev entity F1 | invalid BIO sentences | train s |"
echo "| --- | ---: | --- | ---: | ---: | ---: |"
for setup in $setups; do
  case $setup in
    weibo) config=configs/token_classification.yaml dev=data/weibo_ner_zh/dev.jsonl name="weibo_ner_zh, tiny BERT"
      extra=(--set adversarial.method=none) ;;
    wnut17) need_minilm; config=configs/minilm/token_classification.yaml dev=data/wnut17_en/dev.jsonl
      name="wnut17_en, all-MiniLM-L6-v2" extra=() ;;
    *) echo "error: unknown setup '$setup' (weibo | wnut17)" >&2; exit 2 ;;
  esac
  for seed in $seeds; do
    for crf in false true; do
      dir=$out/$setup-$seed-$crf
      t0=$(now)
      "$unif" train "$config" --set "output_dir=$dir" --set training.resume=overwrite --set "seed=$seed" \
        --set "model.crf=$crf" "${extra[@]}" > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
      t1=$(now)
      "$unif" eval --model "$dir/final" --data "$dev" > "$dir.eval.json"
      "$unif" predict --model "$dir/final" --input "$dev" > "$dir.pred.jsonl"
      python3 - "$dir.eval.json" "$dir.pred.jsonl" "$name" "$seed" "$crf" "$t0" "$t1" <<'PY'
import json, sys
f1 = json.load(open(sys.argv[1]))["f1"]
rows = [json.loads(l) for l in open(sys.argv[2])]
def valid(tags):
    prev = "O"
    for t in tags:
        if t is None:
            continue
        if t.startswith("I-") and prev not in ("B-" + t[2:], t):
            return False
        prev = t
    return True
bad = sum(not valid(r["tags"]) for r in rows)
head = "CRF" if sys.argv[5] == "true" else "softmax"
print(f"| {sys.argv[3]} | {sys.argv[4]} | {head} | {f1:.4f} | {bad} of {len(rows)} ({100 * bad / len(rows):.1f}%) | "
      f"{float(sys.argv[7]) - float(sys.argv[6]):.0f} |")
PY
    done
  done
done
echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores; command: bench/crf/run.sh (SETUPS='$setups' SEEDS='$seeds')"
