#!/bin/sh
# Objectives from the command line, on the tiny fixture model (seconds each):
#  1. masked_lm: train on a .txt corpus and on JSONL; final/ is BertForMaskedLM; dev reports loss
#     and perplexity and `unif eval` reproduces the last dev loss (fixed evaluation masks); `unif
#     predict` fills each [MASK] with 5 tokens and descending probabilities; a classifier fine-tunes
#     from the MLM directory (model.pretrained).
#  2. early stopping: with a learning rate too small to change anything the dev metric never
#     improves, the run stops after `patience` evaluations with the reason logged and best/ kept;
#     stopped before the patience ran out and resumed with a larger max_steps, it stops at the
#     same step (the counter is in the checkpoint); resuming a stopped run ends at once.
#  3. distillation: a 1-layer student from a 2-layer teacher trains and saves the student only; a
#     teacher with another label set (the fixture's neg/pos head) is an `error:` (exit 2).
#  4. gradient checkpointing: a classification run (dropout on, 2 replicas) with
#     training.gradient_checkpointing ends with the weights of the run without it, bitwise.
# Usage: test_objectives_cli.sh UNIF_BINARY SOURCE_DIR
set -eu
UNIF=$1
cd "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
FIX=tests/fixtures/tiny-bert-zh
NODROP='model.bert={hidden_dropout_prob: 0.0, attention_probs_dropout_prob: 0.0}'

# ---- 1. masked_lm --------------------------------------------------------------------------------
head -n 60 data/sib200_zh/train.jsonl | sed 's/^{"text":"\([^"]*\)".*/\1/' > "$tmp/corpus.txt"
printf '\n' >> "$tmp/corpus.txt"   # a blank line is skipped
head -n 12 data/sib200_zh/dev.jsonl > "$tmp/dev.jsonl"
cat > "$tmp/mlm.yaml" <<YAML
task: masked_lm
output_dir: $tmp/mlm
model: {pretrained: $FIX, max_seq_length: 48, mlm_probability: 0.2}
data: {train: $tmp/corpus.txt, dev: $tmp/dev.jsonl, text_fields: [text]}
training: {batch_size: 8, max_steps: 8, eval_every: 8, log_every: 4, optimizer: {name: adamw, lr: 1.0e-3}}
YAML
"$UNIF" train "$tmp/mlm.yaml" > "$tmp/mlm.log" 2>&1 || { cat "$tmp/mlm.log"; fail "masked_lm training"; }
grep -q '"BertForMaskedLM"' "$tmp/mlm/final/config.json" || fail "final/ is not BertForMaskedLM"
grep -q 'training: 60 examples' "$tmp/mlm.log" || { cat "$tmp/mlm.log"; fail "the .txt corpus is not 60 texts"; }
dev=$(grep '"split":"dev"' "$tmp/mlm/metrics.jsonl" | tail -n 1)
echo "$dev" | grep -q '"perplexity":' || fail "no perplexity in the dev metrics: $dev"
dev_loss=$(echo "$dev" | sed 's/.*"loss":\([-0-9.e+]*\).*/\1/')
"$UNIF" eval "$tmp/mlm.yaml" --model "$tmp/mlm/final" > "$tmp/eval.json" 2> "$tmp/eval.err" ||
  { cat "$tmp/eval.err"; fail "unif eval on the MLM directory"; }
eval_loss=$(sed 's/.*"loss":\([-0-9.e+]*\).*/\1/' "$tmp/eval.json")
awk -v a="$dev_loss" -v b="$eval_loss" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-5 * (a < 0 ? -a : a) + 1e-6) }' ||
  fail "unif eval loss $eval_loss differs from the run's last dev loss $dev_loss"
grep -q '"perplexity":' "$tmp/eval.json" || fail "unif eval: no perplexity"

printf '%s\n' '{"text":"北京是中国的[MASK]都。","id":7}' '' '{"text":"[MASK][MASK]很好"}' '{"text":"没有掩码"}' > "$tmp/masked.jsonl"
"$UNIF" predict --model "$tmp/mlm/final" --input "$tmp/masked.jsonl" --output "$tmp/fill.jsonl" 2> "$tmp/pred.err" ||
  { cat "$tmp/pred.err"; fail "fill-mask predict"; }
[ "$(grep -c '' "$tmp/fill.jsonl")" -eq 4 ] || fail "predict: one line per input line"
sed -n 1p "$tmp/fill.jsonl" | grep -Eq '^\{"input":\{"id":7,[^}]*\},"masks":\[\{"scores":\[[^],]+(,[^],]+){4}\],"tokens":\[("[^"]*",){4}"[^"]*"\]\}\]\}$' ||
  { cat "$tmp/fill.jsonl"; fail "fill-mask output shape (one mask, 5 tokens, 5 scores, input carried)"; }
sed -n 2p "$tmp/fill.jsonl" | grep -q '"error":"blank line"' || fail "blank line"
[ "$(sed -n 3p "$tmp/fill.jsonl" | grep -o '"tokens"' | wc -l)" -eq 2 ] || fail "two [MASK]s, two entries"
sed -n 4p "$tmp/fill.jsonl" | grep -q '"error":"no \[MASK\]' || fail "a text without [MASK]"
# scores descending
sed -n 1p "$tmp/fill.jsonl" | sed 's/.*"scores":\[\([^]]*\)\].*/\1/' | tr ',' '\n' |
  awk 'NR > 1 && $1 > prev + 1e-12 { bad = 1 } { prev = $1 } END { exit bad }' || fail "scores not highest first"

# JSONL corpus + whole-word masking, then a classifier from the MLM directory.
"$UNIF" train "$tmp/mlm.yaml" --set "data.train=$tmp/dev.jsonl" --set model.whole_word_mask=true \
  --set "output_dir=$tmp/mlm_wwm" --set training.max_steps=2 > "$tmp/wwm.log" 2>&1 ||
  { cat "$tmp/wwm.log"; fail "masked_lm on JSONL with whole-word masking"; }
"$UNIF" train configs/demo.yaml --set "model.pretrained=$tmp/mlm/final" --set "output_dir=$tmp/cls" \
  --set training.max_steps=2 --set "data.dev=$tmp/dev.jsonl" > "$tmp/cls.log" 2>&1 ||
  { cat "$tmp/cls.log"; fail "fine-tuning from the MLM directory"; }
grep -q 'were not used when initializing BertForSequenceClassification: \[cls.predictions' "$tmp/cls.log" ||
  { cat "$tmp/cls.log"; fail "the MLM head should be reported unused"; }

# ---- 2. early stopping ---------------------------------------------------------------------------
es() {
  out=$1
  shift
  "$UNIF" train configs/demo.yaml --set "output_dir=$out" --set training.optimizer.lr=1.0e-12 \
    --set training.eval_every=2 --set training.save_every=2 --set training.early_stopping.patience=2 \
    --set "data.dev=$tmp/dev.jsonl" --set "$NODROP" "$@"
}
es "$tmp/es" --set training.max_steps=20 > "$tmp/es.log" 2>&1 || { cat "$tmp/es.log"; fail "early stopping run"; }
grep -q 'early stopping: dev accuracy has not improved by more than 0 for 2 evaluations' "$tmp/es.log" ||
  { cat "$tmp/es.log"; fail "the reason is not logged"; }
grep -q 'stopped early at step 6 of 20' "$tmp/es.log" || { cat "$tmp/es.log"; fail "did not stop at step 6"; }
[ -f "$tmp/es/best/COMPLETE" ] && [ -f "$tmp/es/final/COMPLETE" ] || fail "best/ and final/ after early stopping"
grep -q '"stopped": true' "$tmp/es/checkpoints/step-6/trainer_state.json" || fail "the stop is not in the checkpoint"
es "$tmp/es" --set training.max_steps=20 > "$tmp/es2.log" 2>&1 || { cat "$tmp/es2.log"; fail "resuming a stopped run"; }
grep -q 'holds a finished run (stopped early at step 6 of 20' "$tmp/es2.log" || { cat "$tmp/es2.log"; fail "a stopped run trained on"; }
grep -q 'step 8/' "$tmp/es2.log" && fail "a stopped run trained on"
# Stop at step 4 (wait 1), resume to 20: the wait continues and the run stops at 6, as straight.
es "$tmp/es_r" --set training.max_steps=4 > "$tmp/es_r1.log" 2>&1 || { cat "$tmp/es_r1.log"; fail "first half"; }
es "$tmp/es_r" --set training.max_steps=20 > "$tmp/es_r2.log" 2>&1 || { cat "$tmp/es_r2.log"; fail "second half"; }
grep -q 'resumed from' "$tmp/es_r2.log" && grep -q 'stopped early at step 6 of 20' "$tmp/es_r2.log" ||
  { cat "$tmp/es_r2.log"; fail "the early-stopping counter did not survive the resume"; }

# ---- 3. distillation -----------------------------------------------------------------------------
"$UNIF" train configs/demo.yaml --set "output_dir=$tmp/teacher" --set training.max_steps=4 \
  --set "data.dev=$tmp/dev.jsonl" > "$tmp/teacher.log" 2>&1 || { cat "$tmp/teacher.log"; fail "teacher"; }
"$UNIF" train configs/demo.yaml --set "output_dir=$tmp/student" --set training.max_steps=3 \
  --set "data.dev=$tmp/dev.jsonl" --set 'model.bert={num_hidden_layers: 1, hidden_dropout_prob: 0.0}' \
  --set "distill={teacher: $tmp/teacher/final, temperature: 2.0, alpha: 0.7}" > "$tmp/student.log" 2>&1 ||
  { cat "$tmp/student.log"; fail "distillation run"; }
grep -q "distill: teacher $tmp/teacher/final" "$tmp/student.log" || fail "the teacher is not logged"
grep -q '"num_hidden_layers": 1' "$tmp/student/final/config.json" || fail "final/ is not the 1-layer student"
set +e
"$UNIF" train configs/demo.yaml --set "output_dir=$tmp/bad" --set training.max_steps=1 \
  --set "distill={teacher: $FIX}" > /dev/null 2> "$tmp/bad.err"   # the fixture's head: neg/pos
code=$?
set -e
[ $code -eq 2 ] && grep -q '^error: .*distill.teacher.*label set' "$tmp/bad.err" ||
  { cat "$tmp/bad.err"; fail "a teacher with another label set: exit $code"; }

# ---- 4. gradient checkpointing -------------------------------------------------------------------
for ck in false true; do
  "$UNIF" train configs/demo.yaml --set "output_dir=$tmp/ck_$ck" --set training.max_steps=4 \
    --set "parallel.devices=[cpu, cpu]" --set 'model.bert={hidden_dropout_prob: 0.1, attention_probs_dropout_prob: 0.1}' \
    --set "training.gradient_checkpointing=$ck" > "$tmp/ck_$ck.log" 2>&1 || { cat "$tmp/ck_$ck.log"; fail "checkpointing $ck"; }
done
cmp -s "$tmp/ck_false/final/model.safetensors" "$tmp/ck_true/final/model.safetensors" ||
  fail "gradient checkpointing changed the trained weights"
echo "objectives CLI: masked_lm (txt, jsonl, wwm, eval, fill-mask, fine-tune), early stopping (+resume), distill, gradient checkpointing: ok"
