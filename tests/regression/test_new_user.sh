#!/bin/sh
# What a new user hit, one check per point: `unif help`, did-you-mean for commands and
# moved keys, path errors that name the key, errors the loader can know caught before output_dir is
# written, data.test scored at the end, resume refusing a checkpoint of a run with other settings,
# `unif eval --model RUNDIR`, Ctrl-C during start-up.
# Usage: test_new_user.sh UNIF_BINARY SOURCE_DIR
set -u
UNIF=$1
cd "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
passes=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ok() { echo "ok   $*"; passes=$((passes + 1)); }

# expect NAME CODE PATTERN -- command...: exit CODE, one "error: " line on stderr matching PATTERN.
expect() {
  name=$1 want=$2 pattern=$3
  shift 4
  "$@" > "$tmp/out" 2> "$tmp/err.all"
  code=$?
  # The log's own timestamped lines (e.g. what parallel.devices: auto chose) may come first.
  grep -v '^\[20[0-9][0-9]-' "$tmp/err.all" > "$tmp/err"
  first=$(head -n 1 "$tmp/err")
  if [ $code -ne "$want" ]; then fail "$name: exit code $code (expected $want)"; cat "$tmp/err"; return; fi
  if [ "$(grep -c '' "$tmp/err")" -ne 1 ] || ! echo "$first" | grep -q '^error: '; then
    fail "$name: stderr is not one 'error: ' line:"; cat "$tmp/err"; return
  fi
  if ! echo "$first" | grep -Eq "$pattern"; then fail "$name: '$first' does not match /$pattern/"; return; fi
  ok "$name: $first"
}
# nothing_written NAME DIR: DIR must not exist (the error came before output_dir was touched).
nothing_written() {
  if [ -e "$2" ]; then fail "$1: $2 was written: $(ls "$2" | tr '\n' ' ')"; else ok "$1: nothing written"; fi
}
small="--set training.max_steps=4 --set training.log_every=2 --set training.save_every=2 --set training.eval_every=2"

# --- 4: help ---
"$UNIF" help > "$tmp/help" 2>&1 && grep -q '^  train ' "$tmp/help" && grep -q '^  predict ' "$tmp/help" &&
  ! grep -q 'Usage: unif help' "$tmp/help" && ok "help lists the commands" || { fail "unif help:"; cat "$tmp/help"; }
for c in train eval predict tokenize; do
  "$UNIF" help $c > "$tmp/h1" 2>&1; r1=$?
  "$UNIF" $c --help > "$tmp/h2" 2>&1; r2=$?
  [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && cmp -s "$tmp/h1" "$tmp/h2" && ok "unif help $c = unif $c --help" ||
    { fail "unif help $c (exit $r1) differs from unif $c --help (exit $r2)"; diff "$tmp/h1" "$tmp/h2" | head -5; }
done
expect help_unknown 2 "unknown command 'tokenzie' \(did you mean 'tokenize'\?\)" -- "$UNIF" help tokenzie
# --- 11: CLI roughness ---
expect evaluate_typo 2 "unknown command 'evaluate' \(did you mean 'eval'\?\)" -- "$UNIF" evaluate configs/demo.yaml
expect predict_batch_zero 2 "batch-size: Value 0 not in range 1 to 1048576 " -- \
    "$UNIF" predict --model tests/fixtures/tiny-bert-zh --input - --batch-size 0
expect moved_lr 2 "training.lr: unknown key 'lr' \(did you mean 'training.optimizer.lr'\?\)" -- \
    "$UNIF" train configs/demo.yaml --set training.lr=1e-3 --set output_dir="$tmp/o_lr"
expect moved_warmup 2 "did you mean 'training.schedule.warmup_ratio'" -- \
    "$UNIF" train configs/demo.yaml --set training.warmup_ratio=0.2 --set output_dir="$tmp/o_lr"
# --- 8: path errors name the key and say how relative paths resolve ---
expect pretrained_typo 2 "model.pretrained: 'tests/fixtures/tiny-bert-zhh' is not a directory.*relative paths resolve against the current directory" -- \
    "$UNIF" train configs/demo.yaml --set model.pretrained=tests/fixtures/tiny-bert-zhh --set output_dir="$tmp/o_p"
nothing_written pretrained_typo "$tmp/o_p"
# A Hub id reads the Hugging Face cache (tests/regression/test_hub_models.sh downloads); offline and
# not cached: the key, the cache and how to fill it.
expect pretrained_hub_name 2 "model.pretrained: 'FacebookAI/roberta-base' is not in the Hugging Face cache \(HF_HUB_CACHE=$tmp/hub\) and HF_HUB_OFFLINE is set: run \`huggingface-cli download FacebookAI/roberta-base\`" -- \
    env HF_HUB_OFFLINE=1 HF_HUB_CACHE="$tmp/hub" "$UNIF" train configs/demo.yaml --set model.pretrained=FacebookAI/roberta-base \
    --set output_dir="$tmp/o_hub"
nothing_written pretrained_hub_name "$tmp/o_hub"
( cd "$tmp" && "$UNIF" train "$2/configs/demo.yaml" --set output_dir="$tmp/o_cwd" ) > "$tmp/out" 2> "$tmp/err"
grep -q "^error: .*model.pretrained: 'tests/fixtures/tiny-bert-zh' .*relative paths resolve against the current directory, $tmp" "$tmp/err" &&
  ok "run from elsewhere: $(cat "$tmp/err")" || { fail "run from elsewhere:"; cat "$tmp/err"; }
expect vocab_missing 2 "model.vocab: '.*novocab.txt' does not exist" -- \
    "$UNIF" train configs/demo.yaml --set model.vocab="$tmp/novocab.txt" --set output_dir="$tmp/o_v"
# --- 5 / 10: errors the loader can know, before output_dir is written ---
expect test_missing 2 "data.test: 'nope.jsonl' does not exist" -- \
    "$UNIF" train configs/demo.yaml --set data.test=nope.jsonl --set output_dir="$tmp/o_t"
nothing_written test_missing "$tmp/o_t"
expect smart_regression 2 "adversarial.method: .*regression.*got smart" -- \
    "$UNIF" train configs/regression.yaml --set adversarial.method=smart --set output_dir="$tmp/o_s"
nothing_written smart_regression "$tmp/o_s"
if ! "$UNIF" --version | grep -q '^GPUs: [1-9]'; then  # a CUDA build on a GPU machine accepts cuda:0
  expect cuda_on_cpu 2 "parallel.devices\[0\]: 'cuda:0'" -- \
      "$UNIF" train configs/demo.yaml --set 'parallel.devices=[cuda:0]' --set output_dir="$tmp/o_c"
  nothing_written cuda_on_cpu "$tmp/o_c"
fi
# --- 5: data.test is scored with the final model, into metrics.jsonl and the closing log line ---
"$UNIF" train configs/demo.yaml $small --set data.test=data/sib200_zh/dev.jsonl --set output_dir="$tmp/run" \
    > /dev/null 2> "$tmp/train.log" || { fail "train with data.test:"; cat "$tmp/train.log"; }
tail -n 1 "$tmp/run/metrics.jsonl" | grep -q '"split":"test"' &&
  tail -n 1 "$tmp/run/metrics.jsonl" | grep -q '"accuracy"' &&
  grep -q 'done: 4 steps.*test (data/sib200_zh/dev.jsonl, final model): accuracy=' "$tmp/train.log" &&
  ok "data.test: $(tail -n 1 "$tmp/run/metrics.jsonl")" || { fail "data.test not scored:"; tail -n 3 "$tmp/run/metrics.jsonl"; }
# --- 8: eval on a run directory says to use final/ or best/ ---
expect eval_rundir 2 "is a run's output_dir, not a model directory: use .*run/final .* or .*run/best" -- \
    "$UNIF" eval configs/demo.yaml --model "$tmp/run"
# --- 3: resume refuses a checkpoint of a run with other settings ---
cp "$tmp/run/config.yaml" "$tmp/config.before"
expect resume_changed 2 "output_dir '.*run': checkpoint '.*step-4' .*model.max_seq_length: 64 -> 32.*training.batch_size: 16 -> 8.*new output_dir.*training.resume: overwrite" -- \
    "$UNIF" train configs/demo.yaml --set training.max_steps=8 --set training.batch_size=8 \
    --set model.max_seq_length=32 --set output_dir="$tmp/run"
cmp -s "$tmp/config.before" "$tmp/run/config.yaml" && ok "resume_changed: config.yaml kept" ||
  fail "resume_changed: config.yaml was overwritten"
expect resume_task 2 "checkpoint '.*step-4' .*task: 'classification' -> 'multilabel'" -- \
    "$UNIF" train configs/demo.yaml --set task=multilabel --set output_dir="$tmp/run"
# What extends the run may change under resume: auto (max_steps, cadence, data.test); another learning
# rate is another run: refused, naming the key and both ways on; continued from an explicit checkpoint.
expect resume_lr 2 "holds a run with other settings \(training.optimizer.lr .* -> 0.001\).*training.resume: overwrite.*training.resume: .*run/checkpoints/step-4" -- \
    "$UNIF" train configs/demo.yaml $small --set training.max_steps=6 --set training.optimizer.lr=1e-3 \
    --set data.test=null --set output_dir="$tmp/run"
"$UNIF" train configs/demo.yaml $small --set training.max_steps=6 --set training.optimizer.lr=1e-3 \
    --set data.test=null --set training.resume="$tmp/run/checkpoints/step-4" --set output_dir="$tmp/run" \
    > /dev/null 2> "$tmp/resume.log" &&
  grep -q 'resumed from .*step-4' "$tmp/resume.log" && ok "resume from an explicit checkpoint with another max_steps and lr" ||
  { fail "resume with allowed changes:"; cat "$tmp/resume.log"; }
# A checkpoint of an older unif (no identity) resumes with a warning.
sed -i '/"identity"/,/^  }/d' "$tmp/run/checkpoints/step-6/trainer_state.json"
"$UNIF" train configs/demo.yaml $small --set training.max_steps=8 --set training.optimizer.lr=1e-3 \
    --set output_dir="$tmp/run" > /dev/null 2> "$tmp/old.log" &&
  grep -q 'stores no run identity' "$tmp/old.log" && grep -q 'resumed from .*step-6' "$tmp/old.log" &&
  ok "old checkpoint without identity: warned and resumed" || { fail "old checkpoint:"; cat "$tmp/old.log"; }
# --- 11: Ctrl-C during start-up (here: blocked opening a config that is a FIFO) says so, exit 130 ---
mkfifo "$tmp/cfg.yaml"
"$UNIF" train "$tmp/cfg.yaml" > /dev/null 2> "$tmp/int.log" &
pid=$!
# unif blocks SIGINT from its first instruction until its handler is in place (across its re-exec,
# where this background job's inherited "ignore SIGINT" would otherwise drop it), so the signal may
# come at any moment; waiting for the handler (bit 2 of SigCgt) makes it arrive during start-up.
i=0
caught() { sig=$(sed -n 's/^SigCgt:[[:space:]]*//p' /proc/$pid/status 2>/dev/null); [ -n "$sig" ] && [ $((0x$sig & 2)) -ne 0 ]; }
while [ $i -lt 300 ] && ! caught; do
  sleep 0.05; i=$((i + 1))
done
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] && grep -q 'interrupted before training started' "$tmp/int.log" &&
  ok "Ctrl-C at start-up: exit 130, $(tr -d '\n' < "$tmp/int.log")" || { fail "Ctrl-C at start-up: exit $rc"; cat "$tmp/int.log"; }

echo "new user: $passes passed, $fails failed"
[ $fails -eq 0 ]
