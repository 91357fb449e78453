#!/bin/sh
# span_extraction through the command line: `unif train` a few steps (2 processes' worth of CPU
# replicas and an adversarial method, as any task), SIGKILL + resume gives the same final weights,
# `unif eval` prints EM/F1 of both scripts, `unif predict` prints {"answer","start","end"} per line
# and the answer is the context's code points [start, end). An eval config with a mismatched answer
# offset is an `error:` naming the line.
# Usage: test_span_cli.sh UNIF_BINARY SOURCE_DIR
set -eu
UNIF=$1
cd "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -n 40 data/cmrc2018_zh/dev.jsonl > "$tmp/train.jsonl"
head -n 6 data/cmrc2018_zh/dev.jsonl > "$tmp/dev.jsonl"
. "$(dirname "$0")/lib.sh"
EXEC=
run() {
  $EXEC "$UNIF" train configs/span_extraction.yaml --set "data.train=$tmp/train.jsonl" --set "data.dev=$tmp/dev.jsonl" \
    --set training.max_steps=24 --set training.save_every=4 --set training.eval_every=12 --set training.log_every=4 \
    --set training.keep_checkpoints=10 --set training.batch_size=8 --set 'parallel.devices=[cpu, cpu]' \
    --set adversarial.method=fgm --set adversarial.epsilon=0.1 --set "output_dir=$1" \
    --set 'model.bert={hidden_dropout_prob: 0.0, attention_probs_dropout_prob: 0.0}'
}
run "$tmp/straight" > "$tmp/straight.log" 2>&1 || { cat "$tmp/straight.log"; exit 1; }
grep '"split":"dev"' "$tmp/straight/metrics.jsonl" | grep -q '"cmrc_f1"'
grep -q '"squad_f1"' "$tmp/straight/metrics.jsonl"
# The log counts questions as examples and says how many windows they make.
n=$(grep -c '' "$tmp/train.jsonl")
grep -Eq "training: $n examples \([0-9]+ windows\)" "$tmp/straight.log" ||
  { echo "FAIL: the log does not count $n examples and their windows:"; grep 'training:' "$tmp/straight.log"; exit 1; }

stop_midway KILL "$tmp/killed/checkpoints/step-8/COMPLETE" 60 "$tmp/killed1.log" run "$tmp/killed"
[ "$STOP_RC" -eq 137 ] && [ ! -f "$tmp/killed/final/COMPLETE" ] ||
  { echo "FAIL: the first run was not killed mid-way (exit status $STOP_RC)"; cat "$tmp/killed1.log"; exit 1; }
run "$tmp/killed" > "$tmp/killed2.log" 2>&1 || { cat "$tmp/killed2.log"; exit 1; }
grep -q "resumed from" "$tmp/killed2.log" || { echo "FAIL: the second run did not resume"; cat "$tmp/killed2.log"; exit 1; }
cmp "$tmp/straight/final/model.safetensors" "$tmp/killed/final/model.safetensors" ||
  { echo "FAIL: resumed span run differs from the straight run"; exit 1; }

"$UNIF" eval configs/span_extraction.yaml --model "$tmp/straight/final" --set "data.dev=$tmp/dev.jsonl" > "$tmp/eval.json"
grep -Eq '"exact_match":[0-9.e-]+.*"f1":' "$tmp/eval.json" || { echo "FAIL: eval output"; cat "$tmp/eval.json"; exit 1; }
grep -q '"examples":6' "$tmp/eval.json" || { echo "FAIL: eval counts windows, not questions"; cat "$tmp/eval.json"; exit 1; }

# predict: questions without answers are fine; one line per input line with answer/start/end.
sed 's/,"answers":\[[^]]*\]//' "$tmp/dev.jsonl" > "$tmp/questions.jsonl"
"$UNIF" predict --model "$tmp/straight/final" --input "$tmp/questions.jsonl" --output "$tmp/pred.jsonl"
[ "$(grep -c '' "$tmp/pred.jsonl")" -eq 6 ] || { echo "FAIL: predict line count"; exit 1; }
grep -v -q '"answer":".*","end":[0-9]*,.*"start":[0-9]*' "$tmp/pred.jsonl" &&
  { echo "FAIL: predict output lacks answer/start/end"; cat "$tmp/pred.jsonl"; exit 1; }

# A bad answer offset in the eval data: error naming the line, exit 2.
sed '3s/"answer_start":[0-9]*/"answer_start":1/' "$tmp/dev.jsonl" > "$tmp/bad.jsonl"
set +e
"$UNIF" eval configs/span_extraction.yaml --model "$tmp/straight/final" --set "data.dev=$tmp/bad.jsonl" 2> "$tmp/err"
code=$?
set -e
[ $code -eq 2 ] && grep -q "^error: .*bad.jsonl:3: .*answer_start" "$tmp/err" ||
  { echo "FAIL: bad answer_start: exit $code"; cat "$tmp/err"; exit 1; }
echo "span CLI: train (2 replicas, fgm), resume, eval, predict, bad offset: ok"
