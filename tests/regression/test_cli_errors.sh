#!/bin/sh
# One test per class of bad input to `unif train/eval/predict` (SPEC §2): exit code 2, exactly one
# stderr line starting "error: " that names the file / key / line, and nothing half-written.
# Usage: test_cli_errors.sh UNIF_BINARY SOURCE_DIR
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
    echo "FAIL $name: exit code $code (expected 2)"; cat "$tmp/err"; fails=$((fails + 1)); return
  fi
  if [ "$lines" -ne 1 ] || ! echo "$first" | grep -q '^error: '; then
    echo "FAIL $name: stderr is not one 'error: ' line:"; cat "$tmp/err"; fails=$((fails + 1)); return
  fi
  if ! echo "$first" | grep -Eq "$pattern"; then
    echo "FAIL $name: '$first' does not match /$pattern/"; fails=$((fails + 1)); return
  fi
  echo "ok   $name: $first"
  passes=$((passes + 1))
}

small="--set training.max_steps=2 --set training.log_every=1"
# --- config ---
expect missing_config 'nope\.yaml' -- "$UNIF" train "$tmp/nope.yaml"
printf 'task: classification\ntraining: [1, 2\n' > "$tmp/bad.yaml"
expect yaml_syntax 'bad\.yaml.*line' -- "$UNIF" train "$tmp/bad.yaml"
printf 'task: classification\ntrainig: {}\n' > "$tmp/typo.yaml"
expect unknown_key "trainig.*did you mean 'training'" -- "$UNIF" train "$tmp/typo.yaml"
expect wrong_type 'training.batch_size' -- "$UNIF" train configs/demo.yaml --set training.batch_size=abc
expect bad_enum 'adversarial.method' -- "$UNIF" train configs/demo.yaml --set adversarial.method=xyz
expect bad_override 'training.nope' -- "$UNIF" train configs/demo.yaml --set training.nope=1
# --- data ---
expect missing_data 'missing\.jsonl' -- "$UNIF" train configs/demo.yaml --set data.train="$tmp/missing.jsonl" --set output_dir="$tmp/o1"
head -n 5 data/sib200_zh/train.jsonl > "$tmp/broken.jsonl"
echo '{"text": "x", "label": ' >> "$tmp/broken.jsonl"
expect bad_json_line 'broken\.jsonl:6' -- "$UNIF" train configs/demo.yaml --set data.train="$tmp/broken.jsonl" --set output_dir="$tmp/o2"
test ! -e "$tmp/o2" || { echo "FAIL bad_json_line: output_dir was created"; fails=$((fails + 1)); }
head -n 3 data/sib200_zh/dev.jsonl > "$tmp/dev.jsonl"
echo '{"text": "x", "label": "cooking"}' >> "$tmp/dev.jsonl"
expect unknown_label "dev\.jsonl:4: label 'cooking'" -- "$UNIF" train configs/demo.yaml --set data.dev="$tmp/dev.jsonl" --set output_dir="$tmp/o3"
echo '{"txt": "x", "label": "travel"}' > "$tmp/nofield.jsonl"
expect missing_field "nofield\.jsonl:1: missing field 'text'" -- "$UNIF" train configs/demo.yaml --set data.dev="$tmp/nofield.jsonl" --set output_dir="$tmp/o4"
# --- checkpoint / vocab ---
mkdir -p "$tmp/ckpt"
cp tests/fixtures/tiny-bert-zh/config.json tests/fixtures/tiny-bert-zh/vocab.txt "$tmp/ckpt/"
head -c 100000 tests/fixtures/tiny-bert-zh/model.safetensors > "$tmp/ckpt/model.safetensors"
expect truncated_checkpoint 'model\.safetensors' -- "$UNIF" train configs/demo.yaml --set model.pretrained="$tmp/ckpt" --set output_dir="$tmp/o5"
test ! -e "$tmp/o5" || { echo "FAIL truncated_checkpoint: output_dir was created"; fails=$((fails + 1)); }
mkdir -p "$tmp/nockpt"
expect missing_vocab 'has no tokenizer files \(vocab\.txt, vocab\.json \+ merges\.txt or tokenizer\.json, sentencepiece\.bpe\.model, spiece\.model, spm\.model\); set model\.vocab' -- \
    "$UNIF" train configs/demo.yaml --set model.pretrained="$tmp/nockpt"
expect pad_past_vocab 'model\.bert\.pad_token_id: must be in \[0, vocab_size 21128\), got 999999$' -- \
    "$UNIF" train configs/demo.yaml --set model.bert.pad_token_id=999999 --set output_dir="$tmp/o_pad"
printf 'only\nthree\nlines\n' > "$tmp/small_vocab.txt"
expect vocab_without_unk 'small_vocab\.txt' -- "$UNIF" train configs/demo.yaml --set model.vocab="$tmp/small_vocab.txt"
expect seq_too_long 'max_seq_length' -- "$UNIF" train configs/demo.yaml --set model.max_seq_length=512
# --- output dir ---
: > "$tmp/afile"
expect output_is_file 'output_dir' -- "$UNIF" train configs/demo.yaml $small --set output_dir="$tmp/afile/run"
# --- eval / predict ---
expect eval_missing_model 'nomodel' -- "$UNIF" eval configs/demo.yaml --model "$tmp/nomodel"
mkdir -p "$tmp/half"
cp tests/fixtures/tiny-bert-zh/config.json tests/fixtures/tiny-bert-zh/vocab.txt tests/fixtures/tiny-bert-zh/model.safetensors "$tmp/half/"
echo "task: classification" > "$tmp/half/unif.yaml"
expect eval_incomplete_model 'COMPLETE' -- "$UNIF" eval configs/demo.yaml --model "$tmp/half"
printf '{"text": "ok"}\nnot json\n' > "$tmp/in.jsonl"
expect predict_bad_line 'in\.jsonl:2' -- "$UNIF" predict --model tests/fixtures/tiny-bert-zh --input "$tmp/in.jsonl" --output "$tmp/pred.jsonl"
test ! -e "$tmp/pred.jsonl" || { echo "FAIL predict_bad_line: a partial output file was left"; fails=$((fails + 1)); }
expect predict_missing_input 'nothere\.jsonl' -- "$UNIF" predict --model tests/fixtures/tiny-bert-zh --input "$tmp/nothere.jsonl"
# --- crafted files (tests/fuzz/corpus): deep JSON crashed (139), invalid UTF-8 ended in
# "error: internal" or was dropped silently, an --output that cannot be renamed left OUTPUT.tmp ---
corpus=tests/fuzz/corpus
brackets() { head -c 200000 /dev/zero | tr '\0' "$1"; }
head -n 20 data/sib200_zh/train.jsonl > "$tmp/deep.jsonl"
{ printf '{"text": "x", "label": "travel", "extra": '; brackets '['; brackets ']'; echo '}'; } >> "$tmp/deep.jsonl"
expect train_deep_json 'deep\.jsonl:21: invalid JSON.*nested deeper than 256 levels' -- \
    "$UNIF" train configs/demo.yaml $small --set data.train="$tmp/deep.jsonl" --set output_dir="$tmp/o6"
expect predict_deep_json 'deep_unused_field\.jsonl:1: invalid JSON.*nested deeper than 256 levels' -- \
    "$UNIF" predict --model tests/fixtures/tiny-bert-zh --input $corpus/jsonl_data/deep_unused_field.jsonl
mkdir -p "$tmp/deepcfg"
cp tests/fixtures/tiny-bert-zh/vocab.txt tests/fixtures/tiny-bert-zh/model.safetensors "$tmp/deepcfg/"
{ printf '{"extra": '; brackets '['; brackets ']'; printf ', '; tail -c +2 tests/fixtures/tiny-bert-zh/config.json; } \
    > "$tmp/deepcfg/config.json"
expect train_deep_config 'deepcfg/config\.json: invalid JSON.*nested deeper than 256 levels' -- \
    "$UNIF" train configs/demo.yaml $small --set model.pretrained="$tmp/deepcfg" --set output_dir="$tmp/o7"
expect predict_tsv_bad_utf8 'invalid_utf8_text_only\.tsv:3: invalid UTF-8' -- "$UNIF" predict \
    --model tests/fixtures/tiny-bert-zh --input $corpus/tsv_data/invalid_utf8_text_only.tsv --output "$tmp/pred8.jsonl"
test ! -e "$tmp/pred8.jsonl" && test ! -e "$tmp/pred8.jsonl.tmp" ||
  { echo "FAIL predict_tsv_bad_utf8: an output file was left"; fails=$((fails + 1)); }
expect train_tsv_bad_utf8 'invalid_utf8\.tsv:3: invalid UTF-8' -- "$UNIF" train configs/demo.yaml $small \
    --set data.train=$corpus/tsv_data/invalid_utf8.tsv --set data.dev=$corpus/tsv_data/invalid_utf8.tsv --set output_dir="$tmp/o8"
expect eval_jsonl_bad_utf8 'invalid_utf8\.jsonl:2: invalid UTF-8' -- "$UNIF" eval configs/demo.yaml \
    --model tests/fixtures/tiny-bert-zh --set data.dev=$corpus/jsonl_data/invalid_utf8.jsonl
mkdir -p "$tmp/outdir/x"
printf '{"text": "ok"}\n' > "$tmp/in_ok.jsonl"
expect predict_output_is_dir 'outdir' -- \
    "$UNIF" predict --model tests/fixtures/tiny-bert-zh --input "$tmp/in_ok.jsonl" --output "$tmp/outdir"
test ! -e "$tmp/outdir.tmp" || { echo "FAIL predict_output_is_dir: outdir.tmp was left"; fails=$((fails + 1)); }

echo "cli errors: $passes passed, $fails failed"
[ $fails -eq 0 ]
