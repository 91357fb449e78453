#!/bin/sh
# `unif serve`'s text-embeddings-inference routes (docs/spec.md, "unif serve") against the answers of
# `unif predict`, `unif tokenize` and `unif embed` on the same inputs: POST /predict (one text, a
# pair, a batch, raw_scores, truncate false), POST /rerank (order, indices, texts, raw scores), POST
# / on a classifier, POST /tokenize (ids as `unif tokenize`'s, offsets), GET /info, OpenAI's GET
# /v1/models, TEI's error shapes and statuses; POST /similarity on an embedding model; and Hugging
# Face's InferenceClient (text_classification, sentence_similarity) from the pinned client venv.
# Usage: test_serve_tei.sh UNIF SOURCE_DIR
set -u
UNIF=$1
cd "$2"
SRC=$PWD
. tests/regression/serve_lib.sh
J='Content-Type: application/json'
MODEL=tests/fixtures/tiny-bert-zh

# post PATH BODY: the answer in $tmp/out, its status printed.
post() { curl -s -m 30 -o "$tmp/out" -w '%{http_code}' -H "$J" -d "$2" "http://127.0.0.1:$PORT$1"; }
get() { curl -s -m 30 -o "$tmp/out" -w '%{http_code}' "http://127.0.0.1:$PORT$1"; }
# check 'PYTHON': runs the Python lines with `out` (the last answer), `ref` (unif predict's lines) and
# `close(a, b)` defined; a failed assert fails the check.
check() { python3 - "$tmp/out" "$tmp/ref.jsonl" "$1" <<'PY'
import json, math, sys
out = json.load(open(sys.argv[1], encoding="utf-8"))
ref = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
def close(a, b, tol=1e-5):
    return abs(a - b) <= tol
def sigmoid(x):
    return 1 / (1 + math.exp(-x))
def tei(r, raw=False):
    """unif predict's answer r as TEI's list: every label, highest first."""
    scores = r["logits"] if raw else r["probs"]
    pairs = sorted(((s, l) for l, s in zip(["neg", "pos"], scores)), key=lambda p: p[0], reverse=True)
    return [{"label": l, "score": s} for s, l in pairs]
def same(got, want):
    assert [g["label"] for g in got] == [w["label"] for w in want], (got, want)
    assert all(close(g["score"], w["score"]) for g, w in zip(got, want)), (got, want)
exec(sys.argv[3])
PY
}

# ---- references: unif predict on the same inputs ----
A=今天天气很好
B=明天下雨
C=我们一起去公园散步吧
LONG=$(python3 -c 'print("天" * 100)')
cat > "$tmp/ref_in.jsonl" <<EOF
{"text": "$A"}
{"text_a": "$A", "text_b": "$B"}
{"text": "$C"}
{"text_a": "$A", "text_b": "$C"}
{"text": "$LONG"}
EOF
"$UNIF" predict --model "$MODEL" --input "$tmp/ref_in.jsonl" --output "$tmp/ref.jsonl" 2> "$tmp/predict.log" ||
  { cat "$tmp/predict.log"; fail "unif predict"; exit 1; }
printf '%s\n%s\n' "$A" "Héllo, wörld!" | "$UNIF" tokenize --model "$MODEL" > "$tmp/tok.jsonl" 2> "$tmp/tok.log" ||
  { cat "$tmp/tok.log"; fail "unif tokenize"; exit 1; }

serve_start --model "$MODEL"

# ---- /predict ----
[ "$(post /predict "{\"inputs\": \"$A\"}")" = 200 ] && check 'same(out, tei(ref[0]))' &&
  ok "/predict one text: every label, highest first, unif predict's probabilities" ||
  fail "/predict one text: $(head -c 300 "$tmp/out")"
[ "$(post /predict "{\"inputs\": [\"$A\", \"$B\"]}")" = 200 ] && check 'same(out, tei(ref[1]))' &&
  ok "/predict a pair [text, text_pair]: unif predict's text_a/text_b answer" ||
  fail "/predict pair: $(head -c 300 "$tmp/out")"
[ "$(post /predict "{\"inputs\": [[\"$A\"], [\"$A\", \"$B\"], [\"$C\"]]}")" = 200 ] &&
  check 'assert len(out) == 3
for got, r in zip(out, [ref[0], ref[1], ref[2]]): same(got, tei(r))' &&
  ok "/predict a batch of texts and pairs: a list per input, in order" || fail "/predict batch: $(head -c 300 "$tmp/out")"
[ "$(post /predict "{\"inputs\": [[\"$A\"], [\"$C\"]], \"raw_scores\": true}")" = 200 ] &&
  check 'same(out[0], tei(ref[0], raw=True)); same(out[1], tei(ref[2], raw=True))' &&
  ok "/predict raw_scores: the logits" || fail "/predict raw_scores: $(head -c 300 "$tmp/out")"
[ "$(post / "{\"inputs\": \"$A\", \"parameters\": {}}")" = 200 ] && check 'same(out, tei(ref[0]))' &&
  ok "POST / on a classifier is /predict (TEI's root route)" || fail "POST /: $(head -c 300 "$tmp/out")"
# 100 characters are 102 tokens: over the model's 64.
[ "$(post /predict "{\"inputs\": \"$LONG\"}")" = 200 ] && check 'same(out, tei(ref[4]))' &&
  ok "/predict a long text: truncated as unif predict truncates it" || fail "/predict long: $(head -c 300 "$tmp/out")"
code=$(post /predict "{\"inputs\": \"$LONG\", \"truncate\": false}")
[ "$code" = 413 ] && check 'assert out == {"error": "Input validation error: `inputs` must have less than 64 tokens. Given: 102", "error_type": "Validation"}, out' &&
  ok "/predict truncate false, 102 tokens: 413 as TEI" || fail "/predict truncate false: $code $(cat "$tmp/out")"

# ---- /rerank: a pair classifier scores (query, text) by its last label ----
[ "$(post /rerank "{\"query\": \"$A\", \"texts\": [\"$B\", \"$C\"], \"return_text\": true}")" = 200 ] &&
  check 'want = sorted([(ref[1]["probs"][1], 0, "'"$B"'"), (ref[3]["probs"][1], 1, "'"$C"'")], reverse=True)
assert [r["index"] for r in out] == [w[1] for w in want], (out, want)
assert [r["text"] for r in out] == [w[2] for w in want], out
assert all(close(r["score"], w[0]) for r, w in zip(out, want)), (out, want)' &&
  ok "/rerank: highest score first, indices and texts, the last label's probability" ||
  fail "/rerank: $(head -c 300 "$tmp/out")"
[ "$(post /rerank "{\"query\": \"$A\", \"texts\": [\"$B\", \"$C\"], \"raw_scores\": true}")" = 200 ] &&
  check 'raw = {0: ref[1]["logits"][1] - ref[1]["logits"][0], 1: ref[3]["logits"][1] - ref[3]["logits"][0]}
assert all("text" not in r and close(r["score"], raw[r["index"]]) for r in out), out
assert out[0]["score"] >= out[1]["score"], out' &&
  ok "/rerank raw_scores: the logit difference, no text unless asked" || fail "/rerank raw: $(head -c 300 "$tmp/out")"

# ---- /tokenize: unif tokenize's ids ----
[ "$(post /tokenize "{\"inputs\": [\"$A\", \"Héllo, wörld!\"], \"add_special_tokens\": false}")" = 200 ] &&
  python3 - "$tmp/out" "$tmp/tok.jsonl" <<'PY' && ok "/tokenize add_special_tokens false: unif tokenize's ids, the input's slices" || fail "/tokenize: $(head -c 300 "$tmp/out")"
import json, sys
out = json.load(open(sys.argv[1], encoding="utf-8"))
ref = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
texts = ["今天天气很好", "Héllo, wörld!"]
assert len(out) == 2
for tokens, r, text in zip(out, ref, texts):
    assert [t["id"] for t in tokens] == r["ids"], (tokens, r)
    assert not any(t["special"] for t in tokens)
    for t in tokens:
        assert t["text"] == text[t["start"]:t["stop"]], t
assert "".join(t["text"] for t in out[1]) == "Héllo,wörld!", out[1]  # the input's own characters
PY
[ "$(post /tokenize "{\"inputs\": \"$A\"}")" = 200 ] && python3 - "$tmp/out" "$tmp/tok.jsonl" <<'PY' &&
import json, sys
out = json.load(open(sys.argv[1], encoding="utf-8"))
ids = json.loads(open(sys.argv[2], encoding="utf-8").readline())["ids"]
assert len(out) == 1 and [t["id"] for t in out[0]] == [101] + ids + [102], out
first, last = out[0][0], out[0][-1]
assert first == {"id": 101, "text": "[CLS]", "special": True, "start": None, "stop": None}, first
assert last["text"] == "[SEP]" and last["special"] and last["start"] is None
assert out[0][1] == {"id": ids[0], "text": "今", "special": False, "start": 0, "stop": 1}, out[0][1]
PY
  ok "/tokenize one string: [[...]] with [CLS] and [SEP] flagged special, null offsets" ||
  fail "/tokenize specials: $(head -c 300 "$tmp/out")"

# ---- /info, /v1/models ----
[ "$(get /info)" = 200 ] && check 'assert out["model_id"] == "tiny-bert-zh", out
assert out["model_type"] == {"classifier": {"id2label": {"0": "neg", "1": "pos"}, "label2id": {"neg": 0, "pos": 1}}}, out
assert out["max_input_length"] == 64 and out["max_client_batch_size"] == 2048 and out["auto_truncate"] is True
assert out["model_sha"] is None and out["model_dtype"] == "float32" and out["version"]
assert out["max_batch_tokens"] == 16384 and out["max_concurrent_requests"] == 1024 and out["tokenization_workers"] >= 1
assert out["task"] == "classification" and "text_a" in out["accepted_records"], out' &&
  ok "/info: TEI's Info, a classifier with id2label; unif's task and accepted records" ||
  fail "/info: $(head -c 400 "$tmp/out")"
[ "$(get /v1/models)" = 200 ] && check 'assert out["object"] == "list" and len(out["data"]) == 1, out
m = out["data"][0]
assert m["id"] == "tiny-bert-zh" and m["object"] == "model" and isinstance(m["created"], int) and m["owned_by"], m' &&
  ok "/v1/models: OpenAI's list, the model directory's name" || fail "/v1/models: $(cat "$tmp/out")"

# ---- errors: TEI's shape and statuses ----
code=$(post /predict '{"inputs": ["a", "b", "c"]}')
[ "$code" = 422 ] && check 'assert out["error_type"] == "Validation" and "batch" in out["error"], out' &&
  ok "/predict three strings (TEI: not a batch): 422 {error, error_type}" || fail "/predict 3 strings: $code $(cat "$tmp/out")"
code=$(post /rerank '{"query": "a", "texts": []}')
[ "$code" = 400 ] && check 'assert out == {"error": "`texts` cannot be empty", "error_type": "Empty"}, out' &&
  ok "/rerank texts []: 400 Empty" || fail "/rerank empty: $code $(cat "$tmp/out")"
body=$(python3 -c 'import json; print(json.dumps({"inputs": [["a"]] * 2049}))')
code=$(post /predict "$body")
[ "$code" = 413 ] && grep -q 'batch size 2049 > maximum allowed batch size 2048' "$tmp/out" &&
  ok "/predict 2049 inputs: 413" || fail "/predict 2049: $code $(head -c 200 "$tmp/out")"
for route in /predict /rerank /tokenize /similarity; do
  for bad in 'not json' '{"inputs": {"x": 1}, "query": 5, "texts": 7}' '[]' '{"inputs": "a", "prompt_name": "query"}'; do
    code=$(post $route "$bad")
    case $code in
      4[0-9][0-9]) grep -q '"error_type"' "$tmp/out" || fail "$route '$bad': $code without error_type: $(cat "$tmp/out")" ;;
      *) fail "$route '$bad': $code" ;;
    esac
  done
done
ok "malformed bodies on each route: a 4xx in TEI's shape"
code=$(post /predict '{"inputs": "a", "truncation_direction": "left"}')
[ "$code" = 422 ] && grep -q 'only \\"right\\"' "$tmp/out" && ok "/predict truncation_direction left: 422" ||
  fail "/predict left: $code $(cat "$tmp/out")"
code=$(post /similarity '{"inputs": {"source_sentence": "a", "sentences": ["b"]}}')
[ "$code" = 424 ] && grep -q 'not an embedding model' "$tmp/out" && ok "a classifier: /similarity 424" || fail "/similarity on a classifier: $code"
code=$(curl -s -m 10 -o "$tmp/out" -w '%{http_code}' -D "$tmp/head" "http://127.0.0.1:$PORT/rerank")
[ "$code" = 405 ] && grep -qi '^allow: POST' "$tmp/head" && ok "GET /rerank: 405, Allow: POST" || fail "GET /rerank: $code"
code=$(post /info '{}')
[ "$code" = 405 ] && ok "POST /info: 405" || fail "POST /info: $code"
code=$(get /v2/nothing)
[ "$code" = 404 ] && grep -q '/rerank' "$tmp/out" && grep -q '/tokenize' "$tmp/out" && ok "404 names the TEI routes" || fail "404: $(cat "$tmp/out")"
reqs=$(curl -s -m 10 "http://127.0.0.1:$PORT/metrics" | sed -n "s/^unif_requests_total //p")
[ "${reqs:-0}" -ge 10 ] && ok "the TEI model routes count in /metrics ($reqs answered)" || fail "metrics: $reqs"

# ---- huggingface_hub's InferenceClient ----
venv=$SRC/.cache/venv-clients
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import openai, huggingface_hub, numpy' 2>/dev/null; then
  python3 -m venv "$venv" && "$venv/bin/pip" install -q openai==3.63.0 huggingface_hub==2.4.0 numpy > "$tmp/pip.log" 2>&1 ||
    { cat "$tmp/pip.log"; fail "pip install openai huggingface_hub into $venv"; }
fi
"$venv/bin/python" - "$PORT" "$tmp/ref.jsonl" "$A" <<'PY' && ok "InferenceClient.text_classification: unif predict's label and probability" || fail "InferenceClient.text_classification"
import json, sys
from huggingface_hub import InferenceClient
port, ref_path, text = sys.argv[1], sys.argv[2], sys.argv[3]
ref = json.loads(open(ref_path, encoding="utf-8").readline())
got = InferenceClient(model=f"http://127.0.0.1:{port}").text_classification(text)
# TEI answers one text with a flat list; the client keeps its first item: the best label.
items = got if isinstance(got, list) else [got]
best = max(range(2), key=lambda i: ref["probs"][i])
assert items[0].label == ["neg", "pos"][best], (got, ref)
assert abs(items[0].score - ref["probs"][best]) < 1e-5, (got, ref)
print(f"text_classification: {items[0].label} {items[0].score:.6f}")
PY
serve_stop

# ---- an embedding model: /similarity, InferenceClient.sentence_similarity, /info's pooling ----
mkdir "$tmp/emb"
cp "$MODEL/vocab.txt" "$MODEL/model.safetensors" "$tmp/emb/"
python3 - "$tmp/emb" <<'PY'
import json, sys
c = json.load(open("tests/fixtures/tiny-bert-zh/config.json"))
c["architectures"] = ["BertModel"]
json.dump(c, open(sys.argv[1] + "/config.json", "w"), indent=2)
PY
printf '{"text": "%s"}\n{"text": "%s"}\n{"text": "%s"}\n' "$A" "$B" "$C" > "$tmp/emb_in.jsonl"
"$UNIF" embed --model "$tmp/emb" --input "$tmp/emb_in.jsonl" --output "$tmp/emb_ref.jsonl" 2> "$tmp/embed.log" ||
  { cat "$tmp/embed.log"; fail "unif embed"; exit 1; }
python3 - "$tmp/emb_ref.jsonl" > "$tmp/cos.json" <<'PY'
import json, math, sys
e = [json.loads(l)["embedding"] for l in open(sys.argv[1])]
cos = lambda a, b: sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
print(json.dumps([cos(e[0], e[1]), cos(e[0], e[2])]))
PY
serve_start --model "$tmp/emb"
[ "$(post /similarity "{\"inputs\": {\"source_sentence\": \"$A\", \"sentences\": [\"$B\", \"$C\"]}}")" = 200 ] &&
  python3 -c 'import json,sys; o = json.load(open(sys.argv[1])); w = json.load(open(sys.argv[2])); assert len(o) == 2 and all(abs(a - b) < 1e-5 for a, b in zip(o, w)), (o, w)' "$tmp/out" "$tmp/cos.json" &&
  ok "/similarity: cosine of unif embed's embeddings" || fail "/similarity: $(head -c 300 "$tmp/out")"
[ "$(get /info)" = 200 ] && python3 -c 'import json,sys; o = json.load(open(sys.argv[1])); assert o["model_type"] == {"embedding": {"pooling": "mean"}} and o["task"] == "embedding", o' "$tmp/out" &&
  ok "/info of an embedding model: its pooling" || fail "/info embedding: $(head -c 300 "$tmp/out")"
code=$(post /predict '{"inputs": "a"}')
[ "$code" = 424 ] && grep -q '"error_type":"Backend"' "$tmp/out" && ok "an embedding model: /predict 424" || fail "embedding /predict: $code $(cat "$tmp/out")"
code=$(post /rerank '{"query": "a", "texts": ["b"]}')
[ "$code" = 424 ] && grep -q 're-ranker' "$tmp/out" && ok "an embedding model: /rerank 424" || fail "embedding /rerank: $code $(cat "$tmp/out")"
"$venv/bin/python" - "$PORT" "$tmp/cos.json" "$A" "$B" "$C" <<'PY' && ok "InferenceClient.sentence_similarity (POST /): the cosines" || fail "InferenceClient.sentence_similarity"
import json, sys
from huggingface_hub import InferenceClient
port, cos_path, a, b, c = sys.argv[1:6]
want = json.load(open(cos_path))
got = InferenceClient(model=f"http://127.0.0.1:{port}").sentence_similarity(a, [b, c])
assert len(got) == 2 and all(abs(x - y) < 1e-5 for x, y in zip(got, want)), (got, want)
PY
serve_stop

[ $fails = 0 ] && echo "PASS" || { echo "$fails failed"; exit 1; }
