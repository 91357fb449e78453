#!/bin/sh
# CLI test of `unif tokenize` (SPEC §2): pipes lines through the binary and compares the JSON
# lines byte for byte; checks that a missing vocab exits 2 with one `error: ` line.
# Usage: test_tokenizer_cli.sh UNIF_BINARY VOCAB_TXT
set -u
UNIF=$1
VOCAB=$2
TMP=${TMPDIR:-/tmp}/unif_tokenize_cli.$$
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
fail=0
check() {  # name expected-file actual-file
  if ! cmp -s "$2" "$3"; then
    echo "FAIL: $1"; echo "--- expected"; cat "$2"; echo "--- got"; cat "$3"; fail=1
  else
    echo "ok: $1"
  fi
}

# 1. word pieces and ids, uncased (default); \r\n line ending; empty line
printf 'Hello World\r\n今天[SEP]好\n\n' | "$UNIF" tokenize --vocab "$VOCAB" > "$TMP/out1"
echo "rc=$?" >> "$TMP/out1"
cat > "$TMP/exp1" <<'JSON'
{"tokens":["hello","world"],"ids":[8701,8572]}
{"tokens":["今","天","[SEP]","好"],"ids":[791,1921,102,1962]}
{"tokens":[],"ids":[]}
rc=0
JSON
check "tokens/ids, uncased" "$TMP/exp1" "$TMP/out1"

# 2. --cased keeps case: "Hello" is not in the vocabulary
printf 'Hello world\n' | "$UNIF" tokenize --vocab "$VOCAB" --cased > "$TMP/out2"
echo '{"tokens":["[UNK]","world"],"ids":[100,8572]}' > "$TMP/exp2"
check "--cased" "$TMP/exp2" "$TMP/out2"

# 3. full model input, sentence pair on a TAB, padded to 8
printf '今天\t好\n' | "$UNIF" tokenize --vocab "$VOCAB" --max-seq-length 8 > "$TMP/out3"
cat > "$TMP/exp3" <<'JSON'
{"tokens":["[CLS]","今","天","[SEP]","好","[SEP]","[PAD]","[PAD]"],"input_ids":[101,791,1921,102,1962,102,0,0],"token_type_ids":[0,0,0,0,1,1,0,0],"attention_mask":[1,1,1,1,1,1,0,0]}
JSON
check "--max-seq-length pair" "$TMP/exp3" "$TMP/out3"

# 4. truncation: LIFO (default) keeps the head, FIFO the tail
printf '一二三四五\n' | "$UNIF" tokenize --vocab "$VOCAB" --max-seq-length 4 > "$TMP/out4"
printf '一二三四五\n' | "$UNIF" tokenize --vocab "$VOCAB" --max-seq-length 4 --truncate-method FIFO >> "$TMP/out4"
cat > "$TMP/exp4" <<'JSON'
{"tokens":["[CLS]","一","二","[SEP]"],"input_ids":[101,671,753,102],"token_type_ids":[0,0,0,0],"attention_mask":[1,1,1,1]}
{"tokens":["[CLS]","四","五","[SEP]"],"input_ids":[101,1724,758,102],"token_type_ids":[0,0,0,0],"attention_mask":[1,1,1,1]}
JSON
check "truncation LIFO/FIFO" "$TMP/exp4" "$TMP/out4"

# 5. bad input: exit 2 and one line starting with `error: ` naming the problem
expect_error() {  # name pattern command...
  name=$1; pattern=$2; shift 2
  "$@" < /dev/null > "$TMP/o" 2> "$TMP/e"; rc=$?
  if [ "$rc" -ne 2 ] || [ "$(wc -l < "$TMP/e")" -ne 1 ] || ! grep -q "^error: .*$pattern" "$TMP/e"; then
    echo "FAIL: $name (rc=$rc)"; cat "$TMP/e"; fail=1
  else
    echo "ok: $name"
  fi
}
expect_error "missing vocab" "/nonexistent/vocab.txt" "$UNIF" tokenize --vocab /nonexistent/vocab.txt
expect_error "bad truncate method" "longer-FO" "$UNIF" tokenize --vocab "$VOCAB" --max-seq-length 8 --truncate-method lifo
expect_error "max-seq-length too small" "at least 3" "$UNIF" tokenize --vocab "$VOCAB" --max-seq-length 2
printf 'a\tb\n' > "$TMP/pair"
"$UNIF" tokenize --vocab "$VOCAB" --max-seq-length 3 < "$TMP/pair" > /dev/null 2> "$TMP/e"; rc=$?
if [ "$rc" -ne 2 ] || ! grep -q '^error: stdin line 1: .*sentence pair' "$TMP/e"; then
  echo "FAIL: pair too long for 3 (rc=$rc)"; cat "$TMP/e"; fail=1
else
  echo "ok: pair needs 4"
fi
exit $fail
