#!/bin/sh
# data.long_text through the command line, on sib200_zh with the tiny model and max_seq_length 16
# (most texts are longer): windows train on every window (train.log counts them), unif.yaml keeps
# the setting, eval and predict pool each text's windows (predict writes "windows": N), a text that
# fits in one window predicts as under truncate, mean and max pooling differ; truncate marks the
# texts it cut ("truncated": true). A text pair and a stride past a window are `error:` lines.
# Usage: test_long_text_cli.sh UNIF_BINARY SOURCE_DIR
set -u
UNIF=$1
cd "$2"
. tests/regression/lib.sh
test_setup

run() {  # run OUTPUT_DIR ARGS...
  out=$1
  shift
  "$UNIF" train configs/classification.yaml --set "output_dir=$out" --set model.max_seq_length=16 \
    --set training.max_steps=6 --set training.eval_every=6 --set training.resume=never "$@"
}
run "$tmp/w" --set data.long_text=windows --set data.long_text_stride=7 > "$tmp/w.log" 2>&1 ||
  { cat "$tmp/w.log"; echo "FAIL training on windows"; exit 1; }
grep -q "data.long_text: windows: 701 training texts make [0-9]* windows of at most 16 tokens" "$tmp/w.log" &&
  ok "train.log counts the windows" || fail "train.log: $(grep long_text "$tmp/w.log")"
grep -q "long_text: windows" "$tmp/w/final/unif.yaml" && grep -q "long_text_stride: 7" "$tmp/w/final/unif.yaml" &&
  ok "unif.yaml keeps the windows" || fail "unif.yaml: $(cat "$tmp/w/final/unif.yaml")"

head -n 20 data/sib200_zh/dev.jsonl > "$tmp/dev.jsonl"
printf '{"text": "今天天气很好"}\n' > "$tmp/short.jsonl"
"$UNIF" predict --model "$tmp/w/final" --input "$tmp/dev.jsonl" --output "$tmp/w.pred" 2> "$tmp/err" ||
  fail "predict: $(cat "$tmp/err")"
"$UNIF" eval --model "$tmp/w/final" --data "$tmp/dev.jsonl" > "$tmp/w.eval" 2> "$tmp/err" || fail "eval: $(cat "$tmp/err")"
python3 - "$tmp/w.pred" "$tmp/w.eval" "$tmp/dev.jsonl" <<'PY' && ok "predict pools each text's windows; eval's accuracy is predict's" || fail "windows at inference"
import json, sys
preds = [json.loads(l) for l in open(sys.argv[1])]
gold = [json.loads(l)["label"] for l in open(sys.argv[3])]
assert len(preds) == 20 and all("label" in p and "truncated" not in p for p in preds), preds[0]
assert sum(1 for p in preds if p.get("windows", 1) > 1) >= 15, [p.get("windows") for p in preds]
ev = json.load(open(sys.argv[2]))
acc = sum(p["label"] == g for p, g in zip(preds, gold)) / 20
assert abs(ev["accuracy"] - acc) < 1e-9, (ev, acc)
PY

# A text within one window: the same answer as a model trained the same way read with truncate.
sed 's/long_text: windows/long_text: truncate/' "$tmp/w/final/unif.yaml" > "$tmp/meta" && cp -r "$tmp/w/final" "$tmp/t_final" &&
  cp "$tmp/meta" "$tmp/t_final/unif.yaml"
"$UNIF" predict --model "$tmp/w/final" --input "$tmp/short.jsonl" --output "$tmp/a" 2> /dev/null
"$UNIF" predict --model "$tmp/t_final" --input "$tmp/short.jsonl" --output "$tmp/b" 2> /dev/null
cmp -s "$tmp/a" "$tmp/b" && ! grep -q '"windows"' "$tmp/a" && ok "a text within one window: windows = truncate" ||
  fail "short text: $(cat "$tmp/a") vs $(cat "$tmp/b")"
"$UNIF" predict --model "$tmp/t_final" --input "$tmp/dev.jsonl" --output "$tmp/t.pred" 2> /dev/null
[ "$(grep -c '"truncated":true' "$tmp/t.pred")" -ge 15 ] && ! grep -q '"windows"' "$tmp/t.pred" &&
  ok "truncate marks the texts it cut" || fail "truncated: $(head -2 "$tmp/t.pred")"
sed 's/long_text_pooling: mean/long_text_pooling: max/' "$tmp/w/final/unif.yaml" > "$tmp/meta" &&
  cp -r "$tmp/w/final" "$tmp/m_final" && cp "$tmp/meta" "$tmp/m_final/unif.yaml"
"$UNIF" predict --model "$tmp/m_final" --input "$tmp/dev.jsonl" --output "$tmp/m.pred" 2> /dev/null
python3 - "$tmp/w.pred" "$tmp/m.pred" <<'PY' && ok "max pooling is not mean pooling" || fail "max pooling"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
multi = [(x, y) for x, y in zip(a, b) if x.get("windows", 1) > 1]
assert multi and any(x["logits"] != y["logits"] for x, y in multi)
for x, y in multi:  # the max of each logit is at least the mean
    assert all(m >= e - 1e-6 for m, e in zip(y["logits"], x["logits"])), (x, y)
PY

expect_error() {  # expect_error WHAT PATTERN ARGS...
  _w=$1 _p=$2
  shift 2
  expect_usage_error "$_w" "$_p" run "$tmp/bad" "$@"
}
expect_error "windows over a text pair" "data.long_text: expected truncate for task classification with a text pair" \
  --set data.long_text=windows --set "data.text_fields=[text, text]"
expect_error "a stride past a window" "data.long_text_stride: expected at most model.max_seq_length - 2 (14" \
  --set data.long_text=windows --set data.long_text_stride=15
expect_error "an unknown pooling" "data.long_text_pooling: expected one of mean | max" --set data.long_text_pooling=sum

[ $fails = 0 ] || { echo "$fails failed"; exit 1; }
echo "all long_text CLI checks passed"
