#!/bin/sh
# What a run does when it meets an earlier one, and the edges of training.nonfinite and masked_lm,
# from the command line on the tiny fixture model (seconds each):
#  1. a finished run re-run trains nothing, says so, and changes no file; a re-run with another lr
#     is refused under resume: auto and continues from an explicit checkpoint, logging every key
#     that changed; training.resume: overwrite starts over; never refuses
#     and names overwrite; overwrite that would remove the model the run starts from is refused;
#  2. early stopping whose patience runs out at the last step records no early stop, and a resume
#     with patience 0 trains on;
#  3. a resumed run's metrics.jsonl holds one test line;
#  4. nonfinite: skip with an lr that wrecks the model stops with exit 3 and no final/;
#  5. masked_lm: a step with nothing masked is no update; a dev set whose fixed masks select nothing
#     is reported when the data is loaded;
#  6. the label set is logged with its counts, and suspicious labels are warned about.
# Usage: test_rerun.sh UNIF_BINARY SOURCE_DIR
set -eu
UNIF=$1
cd "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
head -n 64 data/sib200_zh/train.jsonl > "$tmp/train.jsonl"
head -n 16 data/sib200_zh/dev.jsonl > "$tmp/dev.jsonl"
BASE="configs/demo.yaml --set data.train=$tmp/train.jsonl --set data.dev=$tmp/dev.jsonl --set parallel.devices=[cpu]
  --set training.log_every=1"

# ---- 1. a finished run, changed keys, overwrite ----------------------------------------------------
run=$tmp/run
"$UNIF" train $BASE --set output_dir=$run --set training.max_steps=2 --set training.save_every=1 > "$tmp/1a.log" 2>&1 ||
  { cat "$tmp/1a.log"; fail "first run"; }
cp "$run/config.yaml" "$tmp/config.before"
cp "$run/metrics.jsonl" "$tmp/metrics.before"
cp "$run/final/model.safetensors" "$tmp/final.before"
"$UNIF" train $BASE --set output_dir=$run --set training.max_steps=2 --set training.save_every=1 \
  > "$tmp/1b.log" 2>&1 || { cat "$tmp/1b.log"; fail "re-run of a finished run"; }
grep -q "holds a finished run (done at step 2 of 2" "$tmp/1b.log" || { cat "$tmp/1b.log"; fail "no plain 'finished' message"; }
grep -q "training.resume: overwrite" "$tmp/1b.log" || fail "the way to start over is not named"
# Another learning rate is another run: refused under resume: auto (a sweep over --set into one
# output_dir used to continue the first run's checkpoint), naming the key and both ways on.
rc=0
"$UNIF" train $BASE --set output_dir=$run --set training.max_steps=3 --set training.save_every=1 \
  --set training.optimizer.lr=1e-4 > "$tmp/1s.log" 2>&1 || rc=$?
[ $rc -eq 2 ] || { cat "$tmp/1s.log"; fail "a changed lr under resume: auto: exit $rc, expected 2"; }
grep -q "^error: output_dir '$run' holds a run with other settings (training.optimizer.lr 0.005 -> 0.0001).*training.resume: overwrite.*training.resume: $run/checkpoints/step-2" \
  "$tmp/1s.log" || { cat "$tmp/1s.log"; fail "a changed lr: message"; }
cmp -s "$run/config.yaml" "$tmp/config.before" || fail "config.yaml rewritten although no step ran"
cmp -s "$run/metrics.jsonl" "$tmp/metrics.before" || fail "metrics.jsonl changed although no step ran"
cmp -s "$run/final/model.safetensors" "$tmp/final.before" || fail "final/ changed although no step ran"
# A resume from an explicit checkpoint trains on with the new settings: every changed key logged.
"$UNIF" train $BASE --set output_dir=$run --set training.max_steps=3 --set training.save_every=1 \
  --set training.optimizer.lr=1e-4 --set training.resume=$run/checkpoints/step-2 > "$tmp/1c.log" 2>&1 ||
  { cat "$tmp/1c.log"; fail "resume to step 3"; }
grep -q "changed on resume: .*training.max_steps 2 -> 3" "$tmp/1c.log" && grep -q "changed on resume: .*training.optimizer.lr 0.005 -> 0.0001" "$tmp/1c.log" ||
  { cat "$tmp/1c.log"; fail "changed keys on resume"; }
grep -q '"step":3' "$run/metrics.jsonl" || fail "no step 3 after the resume"
grep -q 'lr: 0.0001' "$run/config.yaml" || fail "config.yaml of the resumed run"
# never: refused, naming overwrite; overwrite: a fresh run.
if "$UNIF" train $BASE --set output_dir=$run --set training.resume=never > "$tmp/1d.log" 2>&1; then fail "never accepted"; fi
grep -q "^error: .*training.resume: overwrite" "$tmp/1d.log" || { cat "$tmp/1d.log"; fail "never: overwrite not named"; }
touch "$run/notes.txt"   # a file of the user's stays
"$UNIF" train $BASE --set output_dir=$run --set training.max_steps=1 --set training.resume=overwrite > "$tmp/1e.log" 2>&1 ||
  { cat "$tmp/1e.log"; fail "overwrite"; }
! grep -q "resumed from" "$tmp/1e.log" || fail "overwrite resumed"
[ "$(grep -c '"split":"train"' "$run/metrics.jsonl")" -eq 1 ] || { cat "$run/metrics.jsonl"; fail "overwrite kept old metrics"; }
[ "$(ls "$run/checkpoints")" = "step-1" ] || fail "overwrite kept old checkpoints: $(ls "$run/checkpoints")"
[ -f "$run/notes.txt" ] || fail "overwrite removed a file the run did not write"
grep -q "max_steps: 1" "$run/config.yaml" || fail "config.yaml after overwrite"
# overwrite starting from the run's own final/: refused before anything is removed (it used to
# remove final/, train, and fail at the first save with nothing left).
cp "$run/final/model.safetensors" "$tmp/final.kept"
rc=0
"$UNIF" train $BASE --set output_dir=$run --set training.max_steps=1 --set training.resume=overwrite \
  --set model.pretrained=$run/final > "$tmp/1f.log" 2>&1 || rc=$?
[ $rc -eq 2 ] || { cat "$tmp/1f.log"; fail "overwrite from its own final/: exit $rc, expected 2"; }
grep -q "^error: .*model.pretrained: '$run/final' lies inside '$run/final', which training.resume: overwrite removes" \
  "$tmp/1f.log" || { cat "$tmp/1f.log"; fail "overwrite from its own final/: message"; }
cmp -s "$run/final/model.safetensors" "$tmp/final.kept" || fail "overwrite removed the model it starts from"
[ -d "$run/checkpoints/step-1" ] || fail "a refused overwrite removed checkpoints"

# ---- 2. early stopping at the last step ------------------------------------------------------------
es=$tmp/es
"$UNIF" train $BASE --set output_dir=$es --set training.max_steps=2 --set training.eval_every=1 \
  --set training.early_stopping.patience=1 --set training.early_stopping.min_delta=100 > "$tmp/2a.log" 2>&1 ||
  { cat "$tmp/2a.log"; fail "early stopping run"; }
! grep -q "stopped early\|early stopping:" "$tmp/2a.log" || { cat "$tmp/2a.log"; fail "a run that reached max_steps recorded as stopped early"; }
"$UNIF" train $BASE --set output_dir=$es --set training.max_steps=4 --set training.eval_every=1 > "$tmp/2b.log" 2>&1 ||
  { cat "$tmp/2b.log"; fail "resume with patience 0"; }
grep -q '"split":"train","step":4\|"step":4' "$es/metrics.jsonl" || { cat "$tmp/2b.log"; fail "patience 0 did not train on"; }

# ---- 3. one test line after a resume ---------------------------------------------------------------
tr=$tmp/test
"$UNIF" train $BASE --set output_dir=$tr --set data.test=$tmp/dev.jsonl --set training.max_steps=2 > "$tmp/3a.log" 2>&1 ||
  { cat "$tmp/3a.log"; fail "run with data.test"; }
"$UNIF" train $BASE --set output_dir=$tr --set data.test=$tmp/dev.jsonl --set training.max_steps=3 > "$tmp/3b.log" 2>&1 ||
  { cat "$tmp/3b.log"; fail "resume with data.test"; }
[ "$(grep -c '"split":"test"' "$tr/metrics.jsonl")" -eq 1 ] || { cat "$tr/metrics.jsonl"; fail "duplicate test lines"; }
grep '"split":"test"' "$tr/metrics.jsonl" | grep -q '"step":3' || fail "the test line is not the resumed run's"

# ---- 4. nonfinite: skip with a wrecked model ------------------------------------------------------
rc=0
"$UNIF" train $BASE --set output_dir=$tmp/nan --set training.optimizer.lr=1e38 --set training.nonfinite=skip \
  --set training.epochs=3 > "$tmp/4.log" 2>&1 || rc=$?
[ $rc -eq 3 ] || { cat "$tmp/4.log"; fail "a wrecked model under skip: exit $rc, expected 3"; }
grep -q "^error: training.nonfinite: step [0-9]*: .*\(not finite\|broken\)" "$tmp/4.log" || { cat "$tmp/4.log"; fail "message"; }
[ ! -e "$tmp/nan/final" ] || fail "final/ written for a wrecked model"

# ---- 5. masked_lm: nothing masked ------------------------------------------------------------------
sed 's/^{"text":"\([^"]*\)".*/\1/' "$tmp/train.jsonl" | head -n 16 > "$tmp/corpus.txt"
MLM="--set task=masked_lm --set data.train=$tmp/corpus.txt --set data.dev=null --set data.labels=null
  --set training.max_steps=2 --set training.batch_size=8 --set model.mlm_probability=1e-9"
"$UNIF" train configs/demo.yaml $MLM --set output_dir=$tmp/m1 --set training.optimizer.lr=1e-3 > "$tmp/5a.log" 2>&1 ||
  { cat "$tmp/5a.log"; fail "masked_lm with nothing masked"; }
[ "$(grep -c "nothing to predict in this batch (no masked token): no update" "$tmp/5a.log")" -eq 2 ] ||
  { cat "$tmp/5a.log"; fail "empty steps not reported"; }
"$UNIF" train configs/demo.yaml $MLM --set output_dir=$tmp/m2 --set training.optimizer.lr=0.5 > "$tmp/5b.log" 2>&1 ||
  { cat "$tmp/5b.log"; fail "masked_lm with nothing masked (2)"; }
# No update (weight decay included): any learning rate leaves the same model.
cmp -s "$tmp/m1/final/model.safetensors" "$tmp/m2/final/model.safetensors" || fail "a step with Z = 0 changed the weights"
printf '%s\n' '短' '文' > "$tmp/tiny_dev.txt"
"$UNIF" train configs/demo.yaml $MLM --set output_dir=$tmp/m3 --set data.dev=$tmp/tiny_dev.txt > "$tmp/5c.log" 2>&1 ||
  { cat "$tmp/5c.log"; fail "masked_lm with an empty dev draw"; }
grep -q "warning: data.dev: the fixed evaluation masks select no token in its 2 text(s)" "$tmp/5c.log" ||
  { cat "$tmp/5c.log"; fail "an empty dev draw not reported"; }
rc=0
"$UNIF" train configs/demo.yaml $MLM --set output_dir=$tmp/m4 --set data.dev=$tmp/tiny_dev.txt \
  --set training.early_stopping.patience=1 > "$tmp/5d.log" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "^error: data.dev: the fixed evaluation masks select no token" "$tmp/5d.log" ||
  { cat "$tmp/5d.log"; fail "early stopping on an empty dev draw: exit $rc"; }

# ---- 6. the label set ------------------------------------------------------------------------------
head -n 30 "$tmp/train.jsonl" > "$tmp/odd.jsonl"
printf '%s\n' '{"text":"一个数字标签","label":1}' '{"text":"一个空标签","label":""}' >> "$tmp/odd.jsonl"
"$UNIF" train $BASE --set output_dir=$tmp/odd --set data.train=$tmp/odd.jsonl --set data.dev=null \
  --set training.max_steps=1 > "$tmp/6.log" 2>&1 || { cat "$tmp/6.log"; fail "odd labels"; }
grep -q "labels, with their counts in $tmp/odd.jsonl: \"\" (1), 1 (1), " "$tmp/6.log" || { cat "$tmp/6.log"; fail "label counts"; }
grep -q "warning: $tmp/odd.jsonl:32: field 'label' holds an empty label" "$tmp/6.log" || fail "empty label warning"
grep -q "warning: $tmp/odd.jsonl: field 'label' mixes strings (31, e.g. line 1) and numbers (1, e.g. line 31: 1)" "$tmp/6.log" ||
  { cat "$tmp/6.log"; fail "mixed label types warning"; }
# ---- 7. unif eval computes the run's loss (training.loss) --------------------------------------------
LOSSY="--set training.loss.class_weights=balanced --set training.loss.label_smoothing=0.1 --set training.loss.focal_gamma=0.5"
"$UNIF" train $BASE --set output_dir=$tmp/loss --set training.max_steps=2 $LOSSY > "$tmp/7a.log" 2>&1 ||
  { cat "$tmp/7a.log"; fail "run with training.loss"; }
dev_loss=$(grep '"split":"dev"' "$tmp/loss/metrics.jsonl" | tail -n 1 | sed 's/.*"loss":\([-0-9.e+]*\).*/\1/')
"$UNIF" eval configs/demo.yaml --model "$tmp/loss/final" --set data.train=$tmp/train.jsonl --set data.dev=$tmp/dev.jsonl \
  $LOSSY > "$tmp/7.json" 2> "$tmp/7.err" || { cat "$tmp/7.err"; fail "unif eval with training.loss"; }
eval_loss=$(sed 's/.*"loss":\([-0-9.e+]*\).*/\1/' "$tmp/7.json")
awk -v a="$dev_loss" -v b="$eval_loss" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-5 * (a < 0 ? -a : a) + 1e-6) }' ||
  fail "unif eval loss $eval_loss differs from the run's last dev loss $dev_loss (training.loss not applied?)"
echo "all rerun checks passed"
