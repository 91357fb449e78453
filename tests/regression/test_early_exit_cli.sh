#!/bin/sh
# model.early_exit (FastBERT) through the command line, on sib200_zh with the tiny BERT: a classifier
# is fine-tuned, then its exits are trained from it with model.early_exit; only the branches.*
# tensors change (the encoder and the head are frozen); `unif eval --exit-threshold 0` is the plain
# model's evaluation with every record at the last layer, a threshold of 1 answers at layer 1;
# `unif predict` writes "exit_layer"; `unif serve --exit-threshold` answers with it; where a Python
# with torch and transformers is found, HF's AutoModelForSequenceClassification loads the directory
# and gives the head's logits. Exits on a model without them, on a fresh head, a threshold outside
# [0, 1] and early_exit on another task are `error:` lines.
# Usage: test_early_exit_cli.sh UNIF_BINARY SOURCE_DIR
set -u
UNIF=$1
cd "$2"
. tests/regression/serve_lib.sh
. tests/regression/lib.sh

common="--set training.epochs=2 --set training.resume=never --set training.log_every=100"
# shellcheck disable=SC2086
"$UNIF" train configs/classification.yaml --set "output_dir=$tmp/s1" $common > "$tmp/s1.log" 2>&1 ||
  { cat "$tmp/s1.log"; echo "FAIL fine-tuning"; exit 1; }
# shellcheck disable=SC2086
"$UNIF" train configs/classification.yaml --set "output_dir=$tmp/s2" --set model.early_exit=true \
  --set "model.pretrained=$tmp/s1/final" $common > "$tmp/s2.log" 2>&1 ||
  { cat "$tmp/s2.log"; echo "FAIL training the exits"; exit 1; }
grep -q "model.early_exit: 1 exit classifiers train" "$tmp/s2.log" && ok "train.log says what trains" ||
  fail "train.log: $(grep -i exit "$tmp/s2.log")"

python3 - "$tmp/s1/final/model.safetensors" "$tmp/s2/final/model.safetensors" "$tmp/s2/metrics.jsonl" <<'PY' &&
import json, struct, sys
def read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    return {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items() if k != "__metadata__"}
before, after = read(sys.argv[1]), read(sys.argv[2])
added = sorted(set(after) - set(before))
assert added == ["branches.0.classifier.bias", "branches.0.classifier.weight", "branches.0.dense.bias",
                 "branches.0.dense.weight"], added
changed = [k for k in before if before[k] != after[k]]
assert not changed, changed
losses = [json.loads(l)["loss"] for l in open(sys.argv[3]) if '"split":"dev"' in l]
assert len(losses) >= 2 and losses[-1] < losses[0], losses  # the branches learn the head
PY
  ok "only branches.* added and trained; every other tensor bitwise the fine-tuned model's" ||
  fail "the saved exits"

"$UNIF" eval --model "$tmp/s1/final" --data data/sib200_zh/dev.jsonl > "$tmp/plain.json" 2> "$tmp/err" || cat "$tmp/err"
for u in 0 1; do
  "$UNIF" eval --model "$tmp/s2/final" --data data/sib200_zh/dev.jsonl --exit-threshold $u > "$tmp/u$u.json" 2> "$tmp/err" ||
    { cat "$tmp/err"; fail "unif eval --exit-threshold $u"; }
done
python3 - "$tmp/plain.json" "$tmp/u0.json" "$tmp/u1.json" <<'PY' && ok "eval: threshold 0 is the plain model at layer 2, threshold 1 exits at layer 1" || fail "eval with thresholds"
import json, sys
plain, u0, u1 = (json.load(open(p)) for p in sys.argv[1:])
assert u0["exit_layer"] == 2.0 and u0["accuracy"] == plain["accuracy"], (plain, u0)
assert abs(u0["loss"] - plain["loss"]) < 1e-6, (plain, u0)
assert u1["exit_layer"] == 1.0, u1
assert "exit_layer" not in plain, plain
PY

head -n 5 data/sib200_zh/dev.jsonl > "$tmp/five.jsonl"
"$UNIF" predict --model "$tmp/s2/final" --input "$tmp/five.jsonl" --exit-threshold 1 > "$tmp/pred.jsonl" 2> "$tmp/err" ||
  { cat "$tmp/err"; fail "unif predict --exit-threshold"; }
"$UNIF" predict --model "$tmp/s2/final" --input "$tmp/five.jsonl" > "$tmp/pred_plain.jsonl" 2> "$tmp/err" ||
  { cat "$tmp/err"; fail "unif predict"; }
python3 - "$tmp/pred.jsonl" "$tmp/pred_plain.jsonl" <<'PY' && ok "predict writes exit_layer with a threshold, not without" || fail "predict's exit_layer"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
plain = [json.loads(l) for l in open(sys.argv[2])]
assert len(rows) == 5 and all(r["exit_layer"] == 1 for r in rows), rows
assert all("exit_layer" not in r for r in plain), plain
PY

serve_start --model "$tmp/s2/final" --exit-threshold 0
curl -s -X POST "http://127.0.0.1:$PORT/v1/predict" -H 'Content-Type: application/json' \
  -d '{"inputs": [{"text": "今天的比赛很精彩"}]}' > "$tmp/serve.json"
grep -q '"exit_layer":2' "$tmp/serve.json" && ok "serve --exit-threshold answers with exit_layer" ||
  fail "serve: $(cat "$tmp/serve.json")"
serve_stop

find_hf_python
if [ -n "$HF_PY" ]; then
  "$HF_PY" - "$tmp/s2/final" "$tmp/s1/final" <<'PY' && ok "HF loads the directory (branches ignored) with the head's logits" || fail "HF's reading"
import sys, torch, transformers
transformers.logging.set_verbosity_error()
tok = transformers.AutoTokenizer.from_pretrained(sys.argv[2])
a = transformers.AutoModelForSequenceClassification.from_pretrained(sys.argv[1]).eval()
b = transformers.AutoModelForSequenceClassification.from_pretrained(sys.argv[2]).eval()
x = tok(["今天的比赛很精彩", "看看旅行社推广什么旅游产品"], padding=True, return_tensors="pt")
with torch.no_grad():
    assert torch.equal(a(**x).logits, b(**x).logits)
PY
else
  echo "skip HF's reading: no Python with torch and transformers"
fi

expect_error() {  # expect_error WHAT PATTERN COMMAND...
  what=$1 pattern=$2
  shift 2
  "$@" > "$tmp/out" 2> "$tmp/err"
  rc=$?
  if [ $rc = 2 ] && grep -q "^error: .*$pattern" "$tmp/err"; then ok "$what"; else fail "$what (exit $rc): $(cat "$tmp/err")"; fi
}
expect_error "--exit-threshold on a model without exits" "no early exits" \
  "$UNIF" predict --model "$tmp/s1/final" --input "$tmp/five.jsonl" --exit-threshold 0.5
expect_error "--exit-threshold outside [0, 1]" "exit-threshold" \
  "$UNIF" eval --model "$tmp/s2/final" --data "$tmp/five.jsonl" --exit-threshold 1.5
expect_error "model.early_exit on a head that was never fine-tuned" "model.early_exit: the exits learn from a fine-tuned" \
  "$UNIF" train configs/classification.yaml --set "output_dir=$tmp/s3" --set model.early_exit=true --set training.resume=never
expect_error "model.early_exit on regression" "model.early_exit: expected false for task regression" \
  "$UNIF" train configs/regression.yaml --set "output_dir=$tmp/s4" --set model.early_exit=true

[ $fails = 0 ] || { echo "$fails failed"; exit 1; }
echo "all early-exit CLI checks passed"
