#!/bin/sh
# Every encoder family end to end on its tiny checkpoint (tests/fixtures/families): `unif train` on
# SIB-200 Chinese topic classification (7 topics) learns above the majority class (0.2525), with a
# model.config field by the family's own name, the output directory is the family's (that field kept,
# config.json's model_type and architectures, its tokenizer files),
# `unif eval` and `unif predict` read it, and HF's Auto classes load it with the same logits (where a
# Python with torch and transformers is found: $UNIF_HF_PYTHON, .cache/venv-pypi, .cache/hf-families-venv).
# Then distillation across families: an ELECTRA teacher for a DistilBERT student (one vocab.txt), and a
# RoBERTa teacher refused for it (another tokenizer).
# Usage: test_families.sh UNIF_BINARY SOURCE_DIR [FAMILY...]
set -u
UNIF=$1
cd "$2"
shift 2
families=${*:-roberta xlm-roberta distilbert electra albert deberta-v2 modernbert mpnet}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ok() { echo "ok   $*"; }
hf_checks=""  # MODEL_DIR PREDICTIONS pairs for check_hf_family.py

py=""
for p in "${UNIF_HF_PYTHON:-}" .cache/venv-pypi/bin/python .cache/hf-families-venv/bin/python; do
  if [ -n "$p" ] && [ -x "$p" ] && "$p" -c 'import torch, transformers' 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || echo "note: no Python with torch and transformers: HF's reading of the output directories is not checked"

for family in $families; do
  out="$tmp/$family"
  # model.config: a field by the family's own config.json name, kept in the output's config.json.
  case $family in
    distilbert) field=seq_classif_dropout ;;
    albert) field=classifier_dropout_prob ;;
    deberta-v2) field=cls_dropout ;;
    modernbert) field=classifier_dropout ;;
    mpnet) field=initializer_range ;;
    *) field=classifier_dropout ;;
  esac
  cat > "$tmp/$family.yaml" <<YAML
task: classification
output_dir: $out
seed: 42
model:
  pretrained: tests/fixtures/families/$family
  bert: {hidden_dropout_prob: 0.0, attention_probs_dropout_prob: 0.0}
  config: {$field: 0.05}
  max_seq_length: 64
data:
  train: data/sib200_zh/train.jsonl
  dev: data/sib200_zh/dev.jsonl
  text_fields: [text]
  label_field: label
training:
  batch_size: 16
  epochs: 4
  optimizer: {name: adamw, lr: 5.0e-3}
  schedule: {name: linear, warmup_ratio: 0.1}
  log_every: 20
YAML
  if ! "$UNIF" train "$tmp/$family.yaml" > "$tmp/$family.log" 2>&1; then
    fail "$family: unif train:"; tail -5 "$tmp/$family.log"; continue
  fi
  best=$(sed -n 's/.*best dev accuracy=\([0-9.]*\).*/\1/p' "$tmp/$family.log" | tail -n 1)
  if awk -v a="${best:-0}" 'BEGIN { exit !(a > 0.30) }'; then ok "$family: best dev accuracy $best (majority 0.2525)"
  else fail "$family: best dev accuracy ${best:-none} is not above 0.30"; fi

  model_type=$(sed -n 's/.*"model_type": "\([^"]*\)".*/\1/p' "$out/final/config.json")
  [ "$model_type" = "$family" ] && ok "$family: final/config.json model_type $model_type" ||
    fail "$family: final/config.json model_type '$model_type'"
  grep -q 'ForSequenceClassification"' "$out/final/config.json" || fail "$family: no <Family>ForSequenceClassification"
  # The tokenizer's files travel with the model: MPNet's added tokens live in tokenizer.json.
  if [ "$family" = mpnet ]; then
    cmp -s "tests/fixtures/families/mpnet/tokenizer.json" "$out/final/tokenizer.json" &&
      ok "mpnet: final/tokenizer.json (its added tokens) saved with the model" || fail "mpnet: final/ lacks tokenizer.json"
  fi
  grep -q "\"$field\": 0.05" "$out/final/config.json" && ok "$family: model.config's $field in final/config.json" ||
    fail "$family: model.config's $field is not in final/config.json"

  if "$UNIF" eval "$tmp/$family.yaml" --model "$out/best" > "$tmp/eval.json" 2> "$tmp/eval.err" &&
     grep -q '"accuracy"' "$tmp/eval.json"; then
    acc=$(sed -n 's/.*"accuracy": *\([0-9.]*\).*/\1/p' "$tmp/eval.json")
    awk -v a="$acc" -v b="$best" 'BEGIN { d = a - b; exit !(d < 0.00006 && d > -0.00006) }' && ok "$family: unif eval of best/ gives the run's accuracy $acc" ||
      fail "$family: unif eval of best/ gives accuracy '$acc', the run said $best"
  else
    fail "$family: unif eval:"; cat "$tmp/eval.err" "$tmp/eval.json"
  fi

  head -n 8 data/sib200_zh/dev.jsonl > "$tmp/in.jsonl"
  if ! "$UNIF" predict --model "$out/final" --input "$tmp/in.jsonl" --output "$tmp/$family.pred.jsonl" 2> "$tmp/pred.err"; then
    fail "$family: unif predict:"; cat "$tmp/pred.err"; continue
  fi
  [ "$(grep -c '"label"' "$tmp/$family.pred.jsonl")" -eq 8 ] && ok "$family: unif predict answers 8 lines" ||
    fail "$family: unif predict answered $(grep -c '' "$tmp/$family.pred.jsonl") lines"
  hf_checks="$hf_checks $out/final $tmp/$family.pred.jsonl"
done
# HF reads every family's final/ with unif predict's logits: one Python process for all of them.
if [ -n "$py" ] && [ -n "$hf_checks" ]; then
  # shellcheck disable=SC2086
  "$py" tests/regression/check_hf_family.py $hf_checks > "$tmp/hf.log" 2>&1
  for family in $families; do
    line=$(grep -F " $tmp/$family/final:" "$tmp/hf.log" | head -n 1)
    case $line in
      ok*) ok "$family: HF: ${line#ok }" ;;
      *) fail "$family: HF does not read final/ with the same logits: ${line:-$(tail -n 3 "$tmp/hf.log")}" ;;
    esac
  done
fi
# Distillation across families that share a tokenizer: ELECTRA and DistilBERT's tiny checkpoints
# share one vocab.txt, so the ELECTRA run's model teaches a DistilBERT student; a teacher with another
# tokenizer (RoBERTa's byte-level BPE) is refused before training.
if [ -f "$tmp/electra/final/COMPLETE" ] && [ -f "$tmp/distilbert.yaml" ]; then
  if "$UNIF" train "$tmp/distilbert.yaml" --set "output_dir=$tmp/student" --set training.epochs=1 \
       --set "distill={teacher: $tmp/electra/final, temperature: 2.0, alpha: 0.5}" > "$tmp/student.log" 2>&1 &&
     grep -q "distill: teacher $tmp/electra/final" "$tmp/student.log" &&
     grep -q '"model_type": "distilbert"' "$tmp/student/final/config.json"; then
    ok "distillation: an ELECTRA teacher trains a DistilBERT student (shared WordPiece vocabulary)"
  else
    fail "distillation ELECTRA -> DistilBERT:"; tail -n 5 "$tmp/student.log"
  fi
  if [ -f "$tmp/roberta/final/COMPLETE" ]; then
    "$UNIF" train "$tmp/distilbert.yaml" --set "output_dir=$tmp/student2" --set training.epochs=1 \
      --set "distill={teacher: $tmp/roberta/final}" > "$tmp/student2.log" 2>&1
    rc=$?
    [ $rc = 2 ] && grep -q "^error: .*distill" "$tmp/student2.log" && [ ! -d "$tmp/student2/final" ] &&
      ok "distillation: a RoBERTa teacher for a DistilBERT student is refused ($(grep '^error:' "$tmp/student2.log" | cut -c1-120)...)" ||
      fail "distillation RoBERTa -> DistilBERT: rc $rc, $(tail -n 2 "$tmp/student2.log")"
  fi
fi
[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all families passed"
