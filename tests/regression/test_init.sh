#!/bin/sh
# `unif init` prints a config that `unif train` accepts as is: classification from a CSV and from
# a JSONL sentence-pair file, token_classification from CoNLL, with --model, and with no options
# (token_classification, and embedding on the SNLI triplets with STS-B dev)
# (the bundled tiny model and sample data); a bad task name lists the tasks. `unif help keys` lists
# every key with its default; `unif train --help` points to init and docs/spec.md; an HF
# TrainingArguments name in a config names the unif key.
# Usage: test_init.sh UNIF_BINARY SOURCE_DIR
set -u
UNIF=$1
cd "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
passes=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ok() { echo "ok   $*"; passes=$((passes + 1)); }
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
F=tests/fixtures/formats

# init_and_train NAME GREP -- init arguments...: init's config holds GREP (a fixed string) and
# trains 2 steps as is (only max_steps and output_dir overridden).
init_and_train() {
  name=$1 want=$2
  shift 3
  if ! "$UNIF" init "$@" > "$tmp/$name.yaml" 2> "$tmp/err"; then fail "$name: unif init $*:"; cat "$tmp/err"; return; fi
  if ! grep -qF -- "$want" "$tmp/$name.yaml"; then fail "$name: the config lacks '$want':"; cat "$tmp/$name.yaml"; return; fi
  if "$UNIF" train "$tmp/$name.yaml" --set training.max_steps=2 --set output_dir="$tmp/run_$name" > "$tmp/log" 2>&1 &&
      [ -f "$tmp/run_$name/final/COMPLETE" ]; then
    ok "$name: unif init $* trains as is"
  else
    fail "$name: unif train on the config of unif init $*:"; tail -5 "$tmp/log"; cat "$tmp/$name.yaml"
  fi
}

init_and_train csv "text_fields: [text]" -- classification --data $F/sib200_zh.train.csv
grep -qF "dev: $F/sib200_zh.dev.csv" "$tmp/csv.yaml" && ok "csv: the dev file next to the train file is data.dev" ||
  fail "csv: no data.dev: $(grep 'dev:' "$tmp/csv.yaml")"
grep -q "# The 7 labels in data.train: \[" "$tmp/csv.yaml" && ok "csv: the labels are listed in a comment" ||
  fail "csv: no label comment"
init_and_train conll "label_field: tags" -- token_classification --data $F/weibo_ner_zh.train.conll
grep -q "labels in data.train: \[.*B-PER.NAM" "$tmp/conll.yaml" && ok "conll: the tags are listed" || fail "conll: no tag list"
init_and_train pair "text_fields: [text_a, text_b]" -- classification --data data/snli_en/dev.jsonl
init_and_train model "pretrained: tests/fixtures/tiny-bert-zh" -- classification --model tests/fixtures/tiny-bert-zh \
    --data data/banking77_en/dev.jsonl
init_and_train bare "pretrained: tests/fixtures/tiny-bert-zh" -- token_classification
# Embedding: the SNLI triplets' three text fields, STS-B dev pairs scored by their `label`.
init_and_train embedding "text_fields: [text_a, text_b, text_neg]" -- embedding
grep -qF "label_field: label" "$tmp/embedding.yaml" && grep -q '"spearman_cosine"' "$tmp/run_embedding/metrics.jsonl" &&
  ok "embedding: the dev pairs report spearman_cosine" || fail "embedding: no spearman_cosine in metrics.jsonl"
# A retrieval dev set alone (data.retrieval, no data.dev): ranked at every dev evaluation, ndcg@10
# chooses best/; unif eval ranks it for the saved model, with the same numbers.
Q=data/xquad_en_retrieval/queries.jsonl C=data/xquad_en_retrieval/corpus.jsonl
if "$UNIF" train "$tmp/embedding.yaml" --set training.max_steps=2 --set output_dir="$tmp/run_retrieval" \
    --set data.dev=null --set data.retrieval.queries=$Q --set data.retrieval.corpus=$C > "$tmp/log" 2>&1 &&
    grep '"split":"dev"' "$tmp/run_retrieval/metrics.jsonl" | grep -q '"ndcg@10"' && grep -q 'new best ndcg@10=' "$tmp/log" &&
    [ -f "$tmp/run_retrieval/best/COMPLETE" ]; then
  ok "embedding: data.retrieval alone is ranked at each evaluation and picks best/ by ndcg@10"
else
  fail "embedding with data.retrieval:"; tail -5 "$tmp/log"; cat "$tmp/run_retrieval/metrics.jsonl"
fi
"$UNIF" eval --model "$tmp/run_retrieval/best" --set data.retrieval.queries=$Q --set data.retrieval.corpus=$C \
  > "$tmp/eval.json" 2> "$tmp/err"
python3 - "$tmp/eval.json" "$tmp/run_retrieval/metrics.jsonl" <<'PY' && ok "embedding: unif eval ranks data.retrieval as training did" ||
import json, sys
got = json.load(open(sys.argv[1]))
dev = [json.loads(l) for l in open(sys.argv[2]) if '"split":"dev"' in l.replace(" ", "")]
best = max(dev, key=lambda d: d["ndcg@10"])
assert got["examples"] == 203, got
for k in ("ndcg@10", "mrr@10", "map@100", "recall@10", "accuracy@1"):
    assert abs(got[k] - best[k]) < 1e-6, (k, got[k], best[k])
PY
  { fail "unif eval with data.retrieval:"; cat "$tmp/eval.json" "$tmp/err"; }
# RoBERTa's positions start after its padding id: 66 position embeddings take 64 tokens.
init_and_train roberta "max_seq_length: 64 " -- classification --model tests/fixtures/families/roberta \
    --data data/banking77_en/dev.jsonl
# A model under $UNIF_HOME is written $UNIF_HOME/..., given either way.
mkdir -p "$tmp/home/models"
cp -r tests/fixtures/tiny-bert-zh "$tmp/home/models/tiny"
for given in "$tmp/home/models/tiny" '$UNIF_HOME/models/tiny'; do
  if UNIF_HOME="$tmp/home" "$UNIF" init classification --model "$given" > "$tmp/home.yaml" 2> "$tmp/err" &&
      grep -qF 'pretrained: $UNIF_HOME/models/tiny' "$tmp/home.yaml"; then
    ok "--model $given under UNIF_HOME: written \$UNIF_HOME/models/tiny"
  else
    fail "--model $given under UNIF_HOME:"; cat "$tmp/err"; grep pretrained "$tmp/home.yaml"
  fi
done
init_and_train regression "label_field: label" -- regression --data data/stsb_en/dev.jsonl

expect bad_task 2 "unknown task 'clasification': expected one of classification \| multilabel \| regression \| token_classification \| span_extraction \| masked_lm \| embedding \| replaced_token_detection \(did you mean 'classification'\?\)" -- \
    "$UNIF" init clasification
expect no_task 2 "unif init TASK: name the task, one of classification \| multilabel" -- "$UNIF" init
expect rtd_without_model 2 "unif init replaced_token_detection: name the ELECTRA discriminator to start from with --model" -- \
    "$UNIF" init replaced_token_detection
expect missing_data 2 "--data: '$tmp/none.csv' does not exist" -- "$UNIF" init classification --data "$tmp/none.csv"
expect list_label_for_classification 2 "field 'label' holds a list of labels: that is task multilabel" -- \
    "$UNIF" init classification --data data/nlupp_en/dev.jsonl

# --- unif help keys, unif train --help ---
if "$UNIF" help keys > "$tmp/keys" 2>&1 && grep -Eq '^training\.optimizer\.lr +5\.0e-5' "$tmp/keys" &&
    grep -Eq '^data\.train +null' "$tmp/keys" && ! grep -q '`' "$tmp/keys"; then
  ok "unif help keys lists keys with defaults"
else
  fail "unif help keys:"; head -20 "$tmp/keys"
fi
n=$(grep -cE '^[a-z_]+(\.[a-z_]+)* +' "$tmp/keys")
[ "$n" -ge 60 ] && ok "unif help keys: $n keys" || fail "unif help keys lists only $n keys"
"$UNIF" train --help > "$tmp/help" 2>&1
grep -q "unif init TASK" "$tmp/help" && grep -q "unif help keys" "$tmp/help" && grep -q "docs/spec.md" "$tmp/help" &&
  grep -q "training (batch_size" "$tmp/help" && ok "unif train --help names the sections, init and docs/spec.md" ||
  { fail "unif train --help:"; cat "$tmp/help"; }

# --- an HF TrainingArguments name ---
expect hf_learning_rate 2 "learning_rate: unknown key 'learning_rate' \(did you mean training.optimizer.lr \(HF: learning_rate\)\?\)" -- \
    "$UNIF" train "$tmp/csv.yaml" --set learning_rate=1e-4 --set output_dir="$tmp/o_hf"
printf 'training:\n  fp16: true\n' > "$tmp/hf.yaml"
expect hf_fp16 2 "training.fp16: unknown key 'fp16' \(did you mean training.precision: fp16 \(HF: fp16\)\?\)" -- \
    "$UNIF" train "$tmp/hf.yaml"

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
