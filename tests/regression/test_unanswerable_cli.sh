#!/bin/sh
# Span extraction with unanswerable questions (SQuAD 2.0 style) through the command line, on
# data/cmrc2018_zh_v2 with the tiny BERT: `unif train` says how many training questions have no
# answer, the dev lines carry the SQuAD 2.0 names (HasAns_*, NoAns_*, best_*), unif.yaml records
# that the model may answer nothing; `unif eval` repeats the last dev numbers, and its squad_exact_match
# and squad_f1 equal the official evaluate-v2.0.py's logic (tests/fixtures/squad2/make_reference.py)
# run on `unif predict`'s answers; a threshold below every null odds answers nothing everywhere
# (NoAns 1, HasAns 0) and predict then writes {"answer": "", "no_answer": true, "score"}. With
# span.verifier the directory holds verifier.* and HF's AutoModelForQuestionAnswering still loads it
# (where a Python with transformers is found).
# Usage: test_unanswerable_cli.sh UNIF_BINARY SOURCE_DIR
set -u
UNIF=$1
cd "$2"
. tests/regression/lib.sh
test_setup

head -n 80 data/cmrc2018_zh_v2/train.jsonl > "$tmp/train.jsonl"  # 40 questions, each also unanswerable
head -n 24 data/cmrc2018_zh_v2/dev.jsonl > "$tmp/dev.jsonl"
train() {  # OUTPUT_DIR [--set ...]
  out=$1
  shift
  "$UNIF" train configs/span_extraction.yaml --set "data.train=$tmp/train.jsonl" --set "data.dev=$tmp/dev.jsonl" \
    --set training.max_steps=24 --set training.eval_every=12 --set training.log_every=12 --set training.batch_size=16 \
    --set "output_dir=$out" --set training.resume=never \
    --set 'model.bert={hidden_dropout_prob: 0.0, attention_probs_dropout_prob: 0.0}' "$@"
}
train "$tmp/run" > "$tmp/train.log" 2>&1 || { cat "$tmp/train.log"; echo "FAIL unif train"; exit 1; }
grep -q "span: 40 of 80 training questions have no answer" "$tmp/train.log" && ok "train.log counts the unanswerable questions" ||
  fail "train.log: $(grep 'span:' "$tmp/train.log")"
python3 - "$tmp/run" <<'PY' && ok "dev lines carry the SQuAD 2.0 names; unif.yaml says unanswerable" || fail "dev metrics or unif.yaml"
import json, sys
dev = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl") if '"split":"dev"' in l]
assert dev, "no dev line"
for key in ("exact_match", "f1", "HasAns_exact", "HasAns_f1", "HasAns_total", "NoAns_exact", "NoAns_f1", "NoAns_total",
            "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh", "squad_f1", "cmrc_f1"):
    assert key in dev[-1], (key, dev[-1])
assert dev[-1]["HasAns_total"] == 12 and dev[-1]["NoAns_total"] == 12, dev[-1]
meta = open(sys.argv[1] + "/final/unif.yaml").read()
assert "unanswerable: true" in meta, meta
PY

"$UNIF" eval --model "$tmp/run/final" --data "$tmp/dev.jsonl" > "$tmp/eval.json" 2> "$tmp/eval.err" || { cat "$tmp/eval.err"; fail "unif eval"; }
"$UNIF" predict --model "$tmp/run/final" --input "$tmp/dev.jsonl" > "$tmp/pred.jsonl" 2> "$tmp/pred.err" || { cat "$tmp/pred.err"; fail "unif predict"; }
python3 - "$tmp/eval.json" "$tmp/run/metrics.jsonl" "$tmp/pred.jsonl" "$tmp/dev.jsonl" <<'PY' && ok "eval = the last dev line; squad_* = the official v2 logic on predict's answers" || fail "eval's numbers"
import importlib.util, json, sys
got = json.load(open(sys.argv[1]))
dev = [json.loads(l) for l in open(sys.argv[2]) if '"split":"dev"' in l][-1]
for k in ("exact_match", "f1", "HasAns_f1", "NoAns_f1", "best_f1", "best_f1_thresh", "squad_f1"):
    assert abs(got[k] - dev[k]) < 1e-9, (k, got[k], dev[k])
spec = importlib.util.spec_from_file_location("squad2", "tests/fixtures/squad2/make_reference.py")
squad2 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(squad2)
rows = [json.loads(l) for l in open(sys.argv[4])]
preds = [json.loads(l) for l in open(sys.argv[3])]
questions = [{"id": r["id"], "answers": [a["text"] for a in r["answers"]]} for r in rows]
answers = {r["id"]: ("" if p.get("no_answer") else p["answer"]) for r, p in zip(rows, preds)}
official, _, _ = squad2.evaluate(questions, answers, None, 1.0)
assert abs(official["exact"] / 100 - got["squad_exact_match"]) < 1e-12, (official, got)
assert abs(official["f1"] / 100 - got["squad_f1"]) < 1e-12, (official, got)
print("official v2:", {k: round(v, 4) for k, v in official.items()}, "unif f1", round(got["f1"], 4))
PY
# The same with a threshold above every null odds: every question gets its best span.
sed 's/^\(  null_score_diff_threshold:\).*/\1 1.0e+30/' "$tmp/run/final/unif.yaml" > "$tmp/unif.yaml" && cp "$tmp/unif.yaml" "$tmp/run/final/unif.yaml"
"$UNIF" eval --model "$tmp/run/final" --data "$tmp/dev.jsonl" > "$tmp/all.json" 2> "$tmp/eval.err" || { cat "$tmp/eval.err"; fail "unif eval (threshold 1e30)"; }
"$UNIF" predict --model "$tmp/run/final" --input "$tmp/dev.jsonl" > "$tmp/all.jsonl" 2> "$tmp/pred.err" || { cat "$tmp/pred.err"; fail "unif predict (threshold 1e30)"; }
python3 - "$tmp/all.json" "$tmp/all.jsonl" "$tmp/dev.jsonl" <<'PY' && ok "never null: squad_* = the official v2 logic on predict's spans, NoAns 0" || fail "eval's numbers at threshold 1e30"
import importlib.util, json, sys
got = json.load(open(sys.argv[1]))
spec = importlib.util.spec_from_file_location("squad2", "tests/fixtures/squad2/make_reference.py")
squad2 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(squad2)
rows = [json.loads(l) for l in open(sys.argv[3])]
preds = [json.loads(l) for l in open(sys.argv[2])]
assert all(not p.get("no_answer") and p["answer"] for p in preds), preds[:2]
questions = [{"id": r["id"], "answers": [a["text"] for a in r["answers"]]} for r in rows]
answers = {r["id"]: p["answer"] for r, p in zip(rows, preds)}
official, _, _ = squad2.evaluate(questions, answers, None, 1.0)
assert got["NoAns_exact"] == 0.0, got
assert abs(official["exact"] / 100 - got["squad_exact_match"]) < 1e-12, (official, got)
assert abs(official["f1"] / 100 - got["squad_f1"]) < 1e-12, (official, got)
assert abs(official["HasAns_f1"] / 100 - got["squad_f1"] * 2) < 1e-12, (official, got)  # NoAns scores 0
print("official v2:", {k: round(v, 4) for k, v in official.items()})
PY

"$UNIF" eval --model "$tmp/run/final" --data "$tmp/dev.jsonl" --set span.null_score_diff_threshold=-1e30 > "$tmp/none.json" 2>&1 &&
python3 - "$tmp/none.json" <<'PY' && ok "a threshold below every null odds answers nothing: NoAns 1, HasAns 0" || fail "threshold -1e30: $(cat "$tmp/none.json")"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["NoAns_exact"] == 1.0 and m["HasAns_exact"] == 0.0 and m["exact_match"] == 0.5, m
PY
sed 's/^\(  null_score_diff_threshold:\).*/\1 -1.0e+30/' "$tmp/run/final/unif.yaml" > "$tmp/unif.yaml" && cp "$tmp/unif.yaml" "$tmp/run/final/unif.yaml"
"$UNIF" predict --model "$tmp/run/final" --input "$tmp/dev.jsonl" > "$tmp/none.jsonl" 2>&1
python3 - "$tmp/none.jsonl" <<'PY' && ok 'predict writes {"answer": "", "no_answer": true, "score"} for a null answer' || fail "predict's null answers: $(head -2 "$tmp/none.jsonl")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 24, len(rows)
for r in rows:
    assert sorted(k for k in r if k != "input") == ["answer", "no_answer", "score"], sorted(r)
    assert r["answer"] == "" and r["no_answer"] is True, r
PY

# The verifier: trained with the spans, saved beside HF's tensors.
train "$tmp/ver" --set span.verifier=true > "$tmp/ver.log" 2>&1 || { cat "$tmp/ver.log"; fail "unif train with span.verifier"; }
python3 - "$tmp/ver" <<'PY' && ok "span.verifier: verifier.weight [1, H] saved; the dev lines have the SQuAD 2.0 names" || fail "the verifier run"
import json, struct, sys
with open(sys.argv[1] + "/final/model.safetensors", "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
hidden = json.load(open(sys.argv[1] + "/final/config.json"))["hidden_size"]
assert header["verifier.weight"]["shape"] == [1, hidden], header.get("verifier.weight")
assert header["verifier.bias"]["shape"] == [1]
dev = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl") if '"split":"dev"' in l]
assert dev and "NoAns_f1" in dev[-1], dev
PY
"$UNIF" eval --model "$tmp/ver/final" --data "$tmp/dev.jsonl" > /dev/null 2> "$tmp/ver_eval.err" && ok "unif eval reads the verifier's directory" ||
  { cat "$tmp/ver_eval.err"; fail "unif eval with a verifier"; }
find_hf_python
if [ -n "$HF_PY" ]; then
  "$HF_PY" -c "
import sys
from transformers import AutoModelForQuestionAnswering
AutoModelForQuestionAnswering.from_pretrained(sys.argv[1])
" "$tmp/ver/final" > "$tmp/hf.log" 2>&1 && ok "HF's AutoModelForQuestionAnswering loads the verifier's directory" || { cat "$tmp/hf.log"; fail "HF's reading"; }
fi
[ "$fails" -eq 0 ]
