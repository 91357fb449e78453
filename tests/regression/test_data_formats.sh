#!/bin/sh
# Data file formats from the command line: a few training steps (and unif eval) on a CSV
# (sib200_zh, RFC 4180 with CRLF, quotes and a line break in a cell) and on CoNLL files (weibo_ner_zh),
# both made from data/ (tests/fixtures/formats); then one error per class of bad file: a headerless
# TSV, a CSV header without the label column, a ragged CSV row, an unsupported extension, CoNLL for
# classification, a CSV named .jsonl. Each error is one `error:` line, exit 2, nothing written.
# Usage: test_data_formats.sh UNIF_BINARY SOURCE_DIR
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
  grep -v '^\[20[0-9][0-9]-' "$tmp/err.all" > "$tmp/err"
  first=$(head -n 1 "$tmp/err")
  if [ $code -ne "$want" ]; then fail "$name: exit code $code (expected $want)"; cat "$tmp/err"; return; fi
  if [ "$(grep -c '' "$tmp/err")" -ne 1 ] || ! echo "$first" | grep -q '^error: '; then
    fail "$name: stderr is not one 'error: ' line:"; cat "$tmp/err"; return
  fi
  if ! echo "$first" | grep -Eq -e "$pattern"; then fail "$name: '$first' does not match /$pattern/"; return; fi
  ok "$name: $first"
}
nothing_written() {
  if [ -e "$2" ]; then fail "$1: $2 was written: $(ls "$2" | tr '\n' ' ')"; else ok "$1: nothing written"; fi
}
F=tests/fixtures/formats
small="--set training.max_steps=3 --set training.eval_every=3 --set training.log_every=1 --set parallel.devices=[cpu]"

# --- CSV: classification trains, evaluates on the dev CSV, and unif eval reads it ---
if "$UNIF" train configs/demo.yaml --set data.train=$F/sib200_zh.train.csv --set data.dev=$F/sib200_zh.dev.csv \
    --set output_dir="$tmp/csv" $small > "$tmp/log" 2>&1 && [ -f "$tmp/csv/final/COMPLETE" ] &&
    grep -q '"split":"dev"' "$tmp/csv/metrics.jsonl"; then
  ok "train on CSV (train and dev)"
else
  fail "train on CSV:"; tail -5 "$tmp/log"
fi
if "$UNIF" eval configs/demo.yaml --model "$tmp/csv/final" --set data.dev=$F/sib200_zh.dev.csv > "$tmp/eval" 2> "$tmp/log" &&
    grep -q '"accuracy"' "$tmp/eval"; then
  ok "unif eval on a CSV dev file"
else
  fail "unif eval on CSV:"; tail -5 "$tmp/log"
fi
# The CSV's 60 examples were all read (a quoted line break, a quoted quote and CRLF line ends).
grep -q 'training: 60 examples' "$tmp/csv/train.log" && ok "all 60 CSV records read" ||
  { fail "train.log does not say 60 training examples:"; grep -m3 'examples' "$tmp/csv/train.log"; }

# unif predict reads a CSV input too: one answer per record (quoted line breaks inside a record).
records=0
"$UNIF" predict --model "$tmp/csv/final" --input $F/sib200_zh.dev.csv --output "$tmp/pred.jsonl" 2> "$tmp/log" &&
  records=$(grep -c '"label"' "$tmp/pred.jsonl")
dev_records=$(grep -c '' "$F/sib200_zh.dev.csv")
if [ "$records" -gt 0 ] && [ "$records" -le "$dev_records" ] && ! grep -q '"error"' "$tmp/pred.jsonl"; then
  ok "unif predict on a CSV input ($records answers)"
else
  fail "unif predict on CSV ($records answers):"; tail -5 "$tmp/log"
fi

# --- CoNLL: token classification trains and evaluates ---
if "$UNIF" train configs/token_classification.yaml --set data.train=$F/weibo_ner_zh.train.conll \
    --set data.dev=$F/weibo_ner_zh.dev.conll --set output_dir="$tmp/conll" $small > "$tmp/log" 2>&1 &&
    [ -f "$tmp/conll/final/COMPLETE" ] && grep -q '"split":"dev"' "$tmp/conll/metrics.jsonl"; then
  ok "train on CoNLL (train and dev)"
else
  fail "train on CoNLL:"; tail -5 "$tmp/log"
fi

# --- one error per class of bad file ---
sed -n '2,6p' $F/sib200_zh.dev.csv | tr ',' '\t' | tr -d '\r' > "$tmp/nohead.tsv"
expect headerless_tsv 2 "nohead.tsv:1: the header has columns \[.*\] but the config asks for text_fields \[text\] and label_field label.*a file without a header row is not supported: add one" -- \
    "$UNIF" train configs/demo.yaml --set data.train="$tmp/nohead.tsv" --set output_dir="$tmp/o1"
nothing_written headerless_tsv "$tmp/o1"
printf 'sentence,category\nhello,a\nbye,b\n' > "$tmp/cols.csv"
expect csv_columns 2 "cols.csv:1: the header has columns \[sentence, category\] but the config asks for text_fields \[text\] and label_field label" -- \
    "$UNIF" train configs/demo.yaml --set data.train="$tmp/cols.csv" --set output_dir="$tmp/o2"
printf 'text,label\nhello,a\nhello, world,b\n' > "$tmp/ragged.csv"
expect csv_ragged 2 "ragged.csv:3: expected 2 comma-separated cells \(as the header\), got 3" -- \
    "$UNIF" train configs/demo.yaml --set data.train="$tmp/ragged.csv" --set output_dir="$tmp/o3"
printf 'hello\tpos\n' > "$tmp/train.txt"
expect extension 2 "train.txt: unsupported data file extension '.txt'; data files are .jsonl .*\.tsv or \.csv.*\.conll, \.bio or \.iob" -- \
    "$UNIF" train configs/demo.yaml --set data.train="$tmp/train.txt" --set output_dir="$tmp/o4"
expect conll_for_classification 2 "a .conll file holds token classification data.*task classification reads .jsonl, .tsv or .csv" -- \
    "$UNIF" train configs/demo.yaml --set data.train=$F/weibo_ner_zh.train.conll --set output_dir="$tmp/o5"
cp $F/sib200_zh.dev.csv "$tmp/really_csv.jsonl"
expect csv_named_jsonl 2 "really_csv.jsonl:1: invalid JSON.*the file does not look like JSONL: data files are" -- \
    "$UNIF" train configs/demo.yaml --set data.train="$tmp/really_csv.jsonl" --set output_dir="$tmp/o6"
printf 'EU B-ORG\nrejects\n\n' > "$tmp/untagged.conll"
expect conll_without_tag 2 "untagged.conll:2: expected a token and its tag" -- \
    "$UNIF" train configs/token_classification.yaml --set data.train="$tmp/untagged.conll" --set output_dir="$tmp/o7"

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
