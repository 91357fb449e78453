#!/bin/sh
# `unif eval --report` and `unif eval --model DIR --data FILE` (no config), and TensorBoard reading
# what training.report_to: [tensorboard] wrote. On the tiny Chinese BERT: a short SIB-200 topic
# classification run (report_to tensorboard) and a short Weibo NER run, then:
#   - --report: the per-class table on stderr (every class, averages, confusion matrix), the same
#     numbers under "report" in the JSON on stdout, its accuracy equal to the metrics' accuracy;
#     NER: one row per entity type;
#   - without a config: the same metrics as with the run's config;
#   - --quantize int8: near fp32's accuracy; --quantize int4 refused;
#   - bad uses: neither config nor --data, --report on a task without classes (exit 2, `error:`);
#   - TensorBoard's own reader (EventAccumulator, where a Python with tensorboard is found:
#     $UNIF_TB_PYTHON, .cache/venv-pypi) gives metrics.jsonl's train losses and dev accuracies.
# Usage: test_eval_report.sh UNIF_BINARY SOURCE_DIR
set -u
UNIF=$1
cd "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ok() { echo "ok   $*"; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

cat > "$tmp/cls.yaml" <<YAML
task: classification
output_dir: $tmp/cls
model: {pretrained: tests/fixtures/tiny-bert-zh, max_seq_length: 48}
data: {train: data/sib200_zh/train.jsonl, dev: data/sib200_zh/dev.jsonl}
training: {batch_size: 32, max_steps: 12, eval_every: 6, log_every: 3, report_to: [tensorboard],
           optimizer: {lr: 5.0e-3}}
YAML
"$UNIF" train "$tmp/cls.yaml" > "$tmp/cls.log" 2>&1 || { fail "unif train (classification)"; tail -5 "$tmp/cls.log"; }

# --report with the config.
if "$UNIF" eval "$tmp/cls.yaml" --model "$tmp/cls/final" --report > "$tmp/r.json" 2> "$tmp/r.txt"; then
  rows=$(json "$tmp/r.json" 'len(d["report"]["rows"])')
  same=$(json "$tmp/r.json" 'd["report"]["accuracy"] == d["accuracy"] and d["report"]["examples"] == d["examples"]')
  [ "$rows" = 7 ] && [ "$same" = True ] && ok "--report: 7 classes, accuracy and examples as the metrics" ||
    fail "--report JSON: rows $rows, accuracy/examples agree: $same"
  for word in "precision" "macro avg" "weighted avg" "science/technology" "confusion matrix"; do
    grep -q "$word" "$tmp/r.txt" || fail "--report table lacks '$word'"
  done
  [ "$(wc -l < "$tmp/r.json")" = 1 ] || fail "--report: stdout is not one JSON line"
else
  fail "unif eval --report"; cat "$tmp/r.txt"
fi

# --quantize int8: dynamic int8 Linear layers, accuracy within 5 points of fp32 on this small model.
if "$UNIF" eval "$tmp/cls.yaml" --model "$tmp/cls/final" --quantize int8 > "$tmp/q.json" 2> "$tmp/q.err"; then
  close=$(python3 -c "
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print(abs(a['accuracy'] - b['accuracy']) <= 0.05 and a['loss'] != b['loss'])" "$tmp/r.json" "$tmp/q.json")
  grep -q "^int8: 14 Linear layers on " "$tmp/q.err" && [ "$close" = True ] &&
    ok "eval --quantize int8: accuracy $(json "$tmp/q.json" 'd["accuracy"]') vs fp32 $(json "$tmp/r.json" 'd["accuracy"]')" ||
    fail "eval --quantize int8: $(cat "$tmp/q.err") $(cat "$tmp/q.json") vs $(cat "$tmp/r.json")"
else
  fail "unif eval --quantize int8"; cat "$tmp/q.err"
fi
"$UNIF" eval "$tmp/cls.yaml" --model "$tmp/cls/final" --quantize int4 > /dev/null 2> "$tmp/e3.err"
rc=$?
[ $rc = 2 ] && grep -q "^error: --quantize: int4 not in {none,int8}" "$tmp/e3.err" && ok "--quantize int4: exit 2" ||
  fail "--quantize int4: rc $rc, $(cat "$tmp/e3.err")"

# Without a config: the model directory's task and fields, --data as the dev file.
if "$UNIF" eval --model "$tmp/cls/final" --data data/sib200_zh/dev.jsonl > "$tmp/n.json" 2> "$tmp/n.err"; then
  same=$(python3 -c "
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
a.pop('report', None)
print(a.keys() == b.keys() and all(abs(a[k] - b[k]) <= 1e-6 * max(1, abs(a[k])) for k in a))" "$tmp/r.json" "$tmp/n.json")
  [ "$same" = True ] && ok "unif eval --model DIR --data FILE: the config run's metrics" ||
    fail "without a config: $(cat "$tmp/n.json") vs $(cat "$tmp/r.json")"
else
  fail "unif eval --model --data"; cat "$tmp/n.err"
fi

# Bad uses.
"$UNIF" eval --model "$tmp/cls/final" > /dev/null 2> "$tmp/e1.err"
rc=$?
[ $rc = 2 ] && grep -q "^error: unif eval: give a config" "$tmp/e1.err" && ok "neither config nor --data: exit 2" ||
  fail "neither config nor --data: rc $rc, $(cat "$tmp/e1.err")"

cat > "$tmp/reg.yaml" <<YAML
task: regression
output_dir: $tmp/reg
model: {pretrained: tests/fixtures/tiny-bert-zh, max_seq_length: 32}
data: {train: data/stsb_en/dev.jsonl, dev: data/stsb_en/dev.jsonl, text_fields: [text_a, text_b]}
training: {batch_size: 32, max_steps: 1}
YAML
if "$UNIF" train "$tmp/reg.yaml" > "$tmp/reg.log" 2>&1; then
  "$UNIF" eval "$tmp/reg.yaml" --model "$tmp/reg/final" --report > /dev/null 2> "$tmp/e2.err"
  rc=$?
  [ $rc = 2 ] && grep -q "^error: unif eval --report: task regression has no classes" "$tmp/e2.err" &&
    ok "--report on regression: exit 2" || fail "--report on regression: rc $rc, $(cat "$tmp/e2.err")"
else
  fail "unif train (regression)"; tail -3 "$tmp/reg.log"
fi

# NER: one row per entity type.
cat > "$tmp/ner.yaml" <<YAML
task: token_classification
output_dir: $tmp/ner
model: {pretrained: tests/fixtures/tiny-bert-zh, max_seq_length: 64}
data: {train: data/weibo_ner_zh/train.jsonl, dev: data/weibo_ner_zh/dev.jsonl}
training: {batch_size: 32, max_steps: 8, log_every: 4, optimizer: {lr: 5.0e-3}}
YAML
if "$UNIF" train "$tmp/ner.yaml" > "$tmp/ner.log" 2>&1 &&
   "$UNIF" eval --model "$tmp/ner/final" --data data/weibo_ner_zh/dev.jsonl --report > "$tmp/ner.json" 2> "$tmp/ner.txt"; then
  types=$(json "$tmp/ner.json" '" ".join(sorted(r["name"] for r in d["report"]["rows"]))')
  avg=$(json "$tmp/ner.json" '[a["name"] for a in d["report"]["averages"]][0]')
  gold=$(python3 -c "
import json, sys
t = set()
for line in open('data/weibo_ner_zh/dev.jsonl'):
    t.update(tag[2:] for tag in json.loads(line)['tags'] if tag[:2] in ('B-', 'I-'))
print(' '.join(sorted(t)))")
  [ "$types" = "$gold" ] && [ "$avg" = "micro avg" ] && ok "NER --report: one row per entity type ($types), micro avg" ||
    fail "NER --report rows '$types' (gold types '$gold'), first average '$avg'"
else
  fail "NER train / eval --report"; tail -3 "$tmp/ner.log"; cat "$tmp/ner.txt"
fi

# TensorBoard's reader on the event file.
py=""
for p in "${UNIF_TB_PYTHON:-}" .cache/venv-pypi/bin/python; do
  if [ -n "$p" ] && [ -x "$p" ] && "$p" -c 'import tensorboard' 2>/dev/null; then py=$p; break; fi
done
if [ -z "$py" ]; then
  echo "note: no Python with tensorboard: the event file is not read back with TensorBoard's reader"
  ls "$tmp/cls/tensorboard/"events.out.tfevents.* > /dev/null 2>&1 && ok "tensorboard/ holds an event file" ||
    fail "no event file in tensorboard/"
else
  if "$py" - "$tmp/cls" <<'PY'
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
out = sys.argv[1]
acc = EventAccumulator(out + "/tensorboard")
acc.Reload()
want = {}
for line in open(out + "/metrics.jsonl"):
    r = json.loads(line)
    for k in ("loss", "accuracy"):
        if isinstance(r.get(k), (int, float)):
            want.setdefault(r["split"] + "/" + k, []).append((r["step"], r[k]))
tags = set(acc.Tags()["scalars"])
ok = True
for tag, points in want.items():
    got = [(e.step, e.value) for e in acc.Scalars(tag)] if tag in tags else []
    if len(got) != len(points) or any(s != t or abs(v - w) > 1e-6 * max(1, abs(w)) for (s, v), (t, w) in zip(got, points)):
        print("tag %s: TensorBoard reads %s, metrics.jsonl has %s" % (tag, got, points))
        ok = False
print("tags:", sorted(tags))
sys.exit(0 if ok and "train/loss" in tags and "dev/accuracy" in tags else 1)
PY
  then ok "TensorBoard's EventAccumulator reads train/loss and dev/accuracy as metrics.jsonl has them"
  else fail "TensorBoard's reader disagrees with metrics.jsonl"; fi
fi

[ $fails = 0 ] && echo "all passed" || { echo "$fails failed"; exit 1; }
