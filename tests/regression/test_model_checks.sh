#!/bin/sh
# Model / run mismatches refused up front (SPEC §2: exit code 2, exactly one stderr line starting
# "error: ", nothing written): a sentence pair (two data.text_fields, or span_extraction's question
# and context) needs token types 0 and 1, which a model with type_vocab_size 1 (RoBERTa-style
# configs) lacks - in train, eval, predict and as a distillation teacher; a distillation teacher
# whose do_lower_case or text fields differ from the run's; crafted config.json / model.config values
# (ids beyond vocab_size, negative initializer_range, dropouts >= 1, sizes the checkpoint does not have
# or that would not fit in memory).
# Usage: test_model_checks.sh UNIF_BINARY SOURCE_DIR
set -u
UNIF=$1
cd "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
passes=0

# expect NAME PATTERN -- command...: exit 2, one "error: " line matching PATTERN (grep -E).
expect() {
  name=$1 pattern=$2
  shift 3
  "$@" > "$tmp/out" 2> "$tmp/err"
  code=$?
  lines=$(grep -c '' "$tmp/err")
  first=$(head -n 1 "$tmp/err")
  if [ $code -ne 2 ]; then
    echo "FAIL $name: exit code $code (expected 2)"; head -n 5 "$tmp/err"; fails=$((fails + 1)); return
  fi
  if [ "$lines" -ne 1 ] || ! echo "$first" | grep -q '^error: '; then
    echo "FAIL $name: stderr is not one 'error: ' line:"; head -n 5 "$tmp/err"; fails=$((fails + 1)); return
  fi
  if ! echo "$first" | grep -Eq "$pattern"; then
    echo "FAIL $name: '$first' does not match /$pattern/"; fails=$((fails + 1)); return
  fi
  echo "ok   $name: $first"
  passes=$((passes + 1))
}
# no_output NAME DIR: the refused run wrote nothing.
no_output() {
  test ! -e "$2" || { echo "FAIL $1: $2 was created"; fails=$((fails + 1)); }
}

# A tiny BERT from scratch with one token type (type_vocab_size 1), one step on CPU.
tiny="--set model.pretrained=null --set model.vocab=tests/fixtures/tiny-bert-zh/vocab.txt
  --set model.bert.hidden_size=32 --set model.bert.num_hidden_layers=1 --set model.bert.num_attention_heads=2
  --set model.bert.intermediate_size=32 --set model.bert.max_position_embeddings=64
  --set data.dev=null --set training.max_steps=1 --set parallel.devices=[cpu]"
one_type="--set model.bert.type_vocab_size=1"
head -n 32 data/sib200_zh/train.jsonl > "$tmp/single.jsonl"
head -n 32 data/snli_en/train.jsonl > "$tmp/pair.jsonl"
head -n 8 data/snli_en/dev.jsonl > "$tmp/pair_dev.jsonl"
sed 's/"text":/"sentence":/' "$tmp/single.jsonl" > "$tmp/sentence.jsonl"
printf '{"text_a": "A man sells donuts.", "text_b": "A man sells food."}\n' > "$tmp/pair_in.jsonl"
pair="--set data.train=$tmp/pair.jsonl --set data.text_fields=[text_a,text_b]"

# Models to refuse against: one token type, trained on one text field (sib200, 7 labels; snli's
# text_a, 3 labels).
# shellcheck disable=SC2086
"$UNIF" train configs/demo.yaml $tiny $one_type --set data.train="$tmp/single.jsonl" --set output_dir="$tmp/m1" \
    > "$tmp/m1.log" 2>&1 || { echo "FAIL setup: training m1"; cat "$tmp/m1.log"; exit 1; }
# shellcheck disable=SC2086
"$UNIF" train configs/demo.yaml $tiny $one_type --set data.train="$tmp/pair.jsonl" --set data.text_fields=[text_a] \
    --set output_dir="$tmp/m2" > "$tmp/m2.log" 2>&1 || { echo "FAIL setup: training m2"; cat "$tmp/m2.log"; exit 1; }
# m2 as a plain HF directory (no unif.yaml: its text fields are not recorded).
cp -r "$tmp/m2/final" "$tmp/m2hf"
rm "$tmp/m2hf/unif.yaml" "$tmp/m2hf/COMPLETE"
# m1 whose unif.yaml says it reads a pair.
cp -r "$tmp/m1/final" "$tmp/m1pair"
sed 's/^text_fields: .*/text_fields: [text_a, text_b]/' "$tmp/m1/final/unif.yaml" > "$tmp/m1pair/unif.yaml"

# --- type_vocab_size 1 and a sentence pair ---
# shellcheck disable=SC2086
expect train_pair_scratch 'data\.text_fields.*text_a, text_b.*type_vocab_size 1' -- \
    "$UNIF" train configs/demo.yaml $tiny $one_type $pair --set output_dir="$tmp/o1"
no_output train_pair_scratch "$tmp/o1"
# shellcheck disable=SC2086
expect train_pair_pretrained 'data\.text_fields.*text_a, text_b.*m1/final/config\.json.*type_vocab_size 1' -- \
    "$UNIF" train configs/demo.yaml $pair --set model.pretrained="$tmp/m1/final" --set data.dev=null \
    --set output_dir="$tmp/o2"
no_output train_pair_pretrained "$tmp/o2"
# shellcheck disable=SC2086
expect eval_pair 'data\.text_fields.*text_a, text_b.*type_vocab_size 1' -- \
    "$UNIF" eval configs/demo.yaml --model "$tmp/m2/final" --set data.dev="$tmp/pair_dev.jsonl" \
    --set data.text_fields=[text_a,text_b]
expect predict_pair_model 'm1pair.*text_a, text_b.*type_vocab_size 1' -- \
    "$UNIF" predict --model "$tmp/m1pair" --input "$tmp/pair_in.jsonl" --output "$tmp/pred.jsonl"
no_output predict_pair_model "$tmp/pred.jsonl"
expect predict_pair_plain_hf 'pair_in\.jsonl:1.*text_a, text_b.*type_vocab_size 1' -- \
    "$UNIF" predict --model "$tmp/m2hf" --input "$tmp/pair_in.jsonl" --output "$tmp/pred2.jsonl"
no_output predict_pair_plain_hf "$tmp/pred2.jsonl"

# --- distillation teachers ---
# shellcheck disable=SC2086
expect distill_lower_case 'distill\.teacher.*do_lower_case true.*false' -- \
    "$UNIF" train configs/demo.yaml $tiny --set data.train="$tmp/single.jsonl" --set model.do_lower_case=false \
    --set distill.teacher="$tmp/m1/final" --set output_dir="$tmp/o3"
no_output distill_lower_case "$tmp/o3"
# shellcheck disable=SC2086
expect distill_text_fields 'distill\.teacher.*\[text\].*\[sentence\]' -- \
    "$UNIF" train configs/demo.yaml $tiny --set data.train="$tmp/sentence.jsonl" --set data.text_fields=[sentence] \
    --set distill.teacher="$tmp/m1/final" --set output_dir="$tmp/o4"
no_output distill_text_fields "$tmp/o4"
# shellcheck disable=SC2086
expect distill_pair_type_vocab 'data\.text_fields.*text_a, text_b.*distill\.teacher.*m2hf.*type_vocab_size 1' -- \
    "$UNIF" train configs/demo.yaml $tiny $pair --set distill.teacher="$tmp/m2hf" --set output_dir="$tmp/o5"
no_output distill_pair_type_vocab "$tmp/o5"

# --- what still runs: the teachers where they fit, a pair on a model with two token types ---
# shellcheck disable=SC2086
"$UNIF" train configs/demo.yaml $tiny --set data.train="$tmp/single.jsonl" --set distill.teacher="$tmp/m1/final" \
    --set output_dir="$tmp/ok1" > "$tmp/ok1.log" 2>&1 && test -f "$tmp/ok1/final/COMPLETE" &&
  { echo "ok   distill_fits"; passes=$((passes + 1)); } ||
  { echo "FAIL distill_fits: a fitting teacher was refused"; tail -n 3 "$tmp/ok1.log"; fails=$((fails + 1)); }
# shellcheck disable=SC2086
"$UNIF" train configs/demo.yaml $tiny $pair --set output_dir="$tmp/ok2" > "$tmp/ok2.log" 2>&1 &&
  test -f "$tmp/ok2/final/COMPLETE" && { echo "ok   pair_two_types"; passes=$((passes + 1)); } ||
  { echo "FAIL pair_two_types: a pair on type_vocab_size 2 was refused"; tail -n 3 "$tmp/ok2.log"; fails=$((fails + 1)); }

# --- crafted config values: one error line naming the file (or model.config), the key, the value and
# the range; a config whose sizes are not the checkpoint's, or a model that would not fit in memory,
# refused before anything is allocated ---
# crafted DIR FAMILY SED: a copy of the family's fixture whose config.json is edited by SED.
crafted() {
  cp -r "tests/fixtures/families/$2" "$1"
  sed "$3" "tests/fixtures/families/$2/config.json" > "$1/config.json"
}
printf '{"text": "A man sells donuts."}\n' > "$tmp/one.jsonl"
crafted "$tmp/c_pad" distilbert 's/"pad_token_id": 0,/"pad_token_id": 4000,/'
expect crafted_pad_token_id 'c_pad/config\.json: key .pad_token_id.: must be in \[0, vocab_size 4000\), got 4000$' -- \
    "$UNIF" predict --model "$tmp/c_pad" --input "$tmp/one.jsonl" --output "$tmp/c_pad.jsonl"
no_output crafted_pad_token_id "$tmp/c_pad.jsonl"
crafted "$tmp/c_init" electra 's/"initializer_range": 0.02,/"initializer_range": -1,/'
expect crafted_initializer_range 'c_init/config\.json: key .initializer_range.: must be a finite number >= 0, got -1$' -- \
    "$UNIF" predict --model "$tmp/c_init" --input "$tmp/one.jsonl" --output "$tmp/c_init.jsonl"
crafted "$tmp/c_drop" distilbert 's/"seq_classif_dropout": 0.2,/"seq_classif_dropout": 1.5,/'
expect crafted_dropout 'c_drop/config\.json: key .seq_classif_dropout.: must be a probability in \[0, 1\), got 1\.5$' -- \
    "$UNIF" predict --model "$tmp/c_drop" --input "$tmp/one.jsonl" --output "$tmp/c_drop.jsonl"
crafted "$tmp/c_vocab" distilbert 's/"vocab_size": 4000$/"vocab_size": 2147483647/'
expect crafted_vocab_size \
    'c_vocab/config\.json: its vocab_size, dim make distilbert\.embeddings\.word_embeddings\.weight \[2147483647, 32\], but .*c_vocab/model\.safetensors holds it as \[4000, 32\]' -- \
    "$UNIF" predict --model "$tmp/c_vocab" --input "$tmp/one.jsonl" --output "$tmp/c_vocab.jsonl"
no_output crafted_vocab_size "$tmp/c_vocab.jsonl"
distil="--set model.pretrained=tests/fixtures/families/distilbert --set data.train=$tmp/single.jsonl --set data.dev=null
  --set training.max_steps=1 --set parallel.devices=[cpu]"
# shellcheck disable=SC2086
expect model_config_dropout 'model\.config: key .seq_classif_dropout.: must be a probability in \[0, 1\), got 1\.0$' -- \
    "$UNIF" train configs/demo.yaml $distil --set model.config.seq_classif_dropout=1.0 --set output_dir="$tmp/o6"
no_output model_config_dropout "$tmp/o6"
# shellcheck disable=SC2086
expect model_config_pad_token_id \
    'distilbert/config\.json with model\.config.s fields: key .pad_token_id.: must be in \[0, vocab_size 4000\), got 4000$' -- \
    "$UNIF" train configs/demo.yaml $distil --set model.config.pad_token_id=4000 --set output_dir="$tmp/o7"
no_output model_config_pad_token_id "$tmp/o7"
expect scratch_too_big 'model\.config: its sizes make a model of about 2\.2e\+12 parameters.*more than this machine.s .* of memory$' -- \
    "$UNIF" train configs/demo.yaml --set model.pretrained=null --set model.vocab=tests/fixtures/tiny-bert-zh/vocab.txt \
    --set model.config.vocab_size=2147483647 --set model.bert.hidden_size=1024 --set model.bert.num_hidden_layers=1 \
    --set model.bert.num_attention_heads=4 --set data.train="$tmp/single.jsonl" --set data.dev=null \
    --set parallel.devices=[cpu] --set output_dir="$tmp/o8"
no_output scratch_too_big "$tmp/o8"

echo "model checks: $passes passed, $fails failed"
[ $fails -eq 0 ]
