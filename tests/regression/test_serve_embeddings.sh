#!/bin/sh
# `unif serve` on an embedding model (docs/spec.md, "unif serve"): text-embeddings-inference's
# POST /embed and the OpenAI API's POST /v1/embeddings answer in their APIs' shapes with the
# embeddings `unif embed` writes (cut to `dimensions`, L2-normalized as each API does), count the
# tokens, refuse bad requests in each API's error shape, and a classification model refuses them;
# then the official Python clients of both APIs (openai, huggingface_hub; pinned, installed into
# .cache/venv-clients) get the same embeddings (tests/regression/embed_clients.py).
# Usage: test_serve_embeddings.sh UNIF SOURCE_DIR
set -u
UNIF=$1
cd "$2"
SRC=$PWD
. tests/regression/serve_lib.sh
J='Content-Type: application/json'

# The tiny fixture as a plain HF BertModel directory: an embedding model (mean pooling, no Normalize).
mkdir "$tmp/emb"
cp tests/fixtures/tiny-bert-zh/vocab.txt tests/fixtures/tiny-bert-zh/model.safetensors "$tmp/emb/"
python3 - "$tmp/emb" <<'PY'
import json, sys
c = json.load(open("tests/fixtures/tiny-bert-zh/config.json"))
c["architectures"] = ["BertModel"]
json.dump(c, open(sys.argv[1] + "/config.json", "w"), indent=2)
PY
printf '["今天天气很好", "明天下雨", "我们一起去公园散步吧"]' > "$tmp/texts.json"
python3 -c 'import json,sys; [print(json.dumps({"text": t}, ensure_ascii=False)) for t in json.load(open(sys.argv[1]))]' \
  "$tmp/texts.json" > "$tmp/texts.jsonl"
"$UNIF" embed --model "$tmp/emb" --input "$tmp/texts.jsonl" --output "$tmp/ref.jsonl" 2> "$tmp/embed.log" ||
  { cat "$tmp/embed.log"; fail "unif embed"; exit 1; }

# start MODEL: unif serve --port 0 --model MODEL; sets pid and PORT.
start() { serve_start --model "$1"; }
stop() { serve_stop; }
# post PATH BODY: the answer in $tmp/out, its status printed.
post() { curl -s -m 30 -o "$tmp/out" -w '%{http_code}' -H "$J" -d "$2" "http://127.0.0.1:$PORT$1"; }
# compare KIND ROWS DIMS NORMALIZE: $tmp/out (tei or openai) holds the reference rows ROWS, cut to
# DIMS features (0: all), L2-normalized when NORMALIZE is 1.
compare() { python3 - "$tmp/ref.jsonl" "$tmp/out" "$@" <<'PY'
import json, math, sys
ref = [json.loads(l)["embedding"] for l in open(sys.argv[1])]
out = json.load(open(sys.argv[2]))
kind, rows, dims, normalize = sys.argv[3], [int(x) for x in sys.argv[4].split(",")], int(sys.argv[5]), sys.argv[6] == "1"
if kind == "openai":
    assert out["object"] == "list" and [d["index"] for d in out["data"]] == list(range(len(rows))), out
    assert all(d["object"] == "embedding" for d in out["data"]), out
    vectors = [d["embedding"] for d in out["data"]]
else:
    vectors = out
assert len(vectors) == len(rows), (len(vectors), rows)
for got, i in zip(vectors, rows):
    want = ref[i][:dims] if dims else ref[i]
    if normalize:
        n = math.sqrt(sum(x * x for x in want))
        want = [x / n for x in want]
    assert len(got) == len(want), (len(got), len(want))
    assert max(abs(a - b) for a, b in zip(got, want)) < 1e-5, (got[:4], want[:4])
PY
}

start "$tmp/emb"
T1='"今天天气很好"'
T3='["今天天气很好", "明天下雨", "我们一起去公园散步吧"]'
[ "$(post /embed "{\"inputs\": $T1}")" = 200 ] && compare tei 0 0 1 && ok "/embed one string: [[...]], normalized" ||
  fail "/embed one string: $(head -c 300 "$tmp/out")"
[ "$(post /embed "{\"inputs\": $T3, \"normalize\": false}")" = 200 ] && compare tei 0,1,2 0 0 &&
  ok "/embed a list, normalize false: unif embed's vectors" || fail "/embed list: $(head -c 300 "$tmp/out")"
[ "$(post /embed "{\"inputs\": $T3, \"dimensions\": 8, \"truncate\": true}")" = 200 ] && compare tei 0,1,2 8 1 &&
  ok "/embed dimensions 8: the first 8 features, normalized" || fail "/embed dimensions: $(head -c 300 "$tmp/out")"
[ "$(post /v1/embeddings "{\"input\": $T3, \"model\": \"tiny\"}")" = 200 ] && compare openai 0,1,2 0 1 &&
  ok "/v1/embeddings a list: OpenAI's list object, normalized" || fail "/v1/embeddings: $(head -c 300 "$tmp/out")"
# 今天天气很好: 6 characters + [CLS] and [SEP]; 明天下雨 4 + 2.
python3 -c 'import json,sys; o = json.load(open(sys.argv[1])); u = o["usage"]; assert o["model"] == "tiny" and u == {"prompt_tokens": 8 + 6 + 12, "total_tokens": 26}, o["usage"]' "$tmp/out" &&
  ok "/v1/embeddings usage counts the tokens" || fail "/v1/embeddings usage: $(head -c 300 "$tmp/out")"
[ "$(post /v1/embeddings "{\"input\": $T1, \"encoding_format\": \"base64\", \"dimensions\": 4}")" = 200 ] &&
  python3 - "$tmp/ref.jsonl" "$tmp/out" <<'PY' && ok "/v1/embeddings base64: little-endian float32" || fail "/v1/embeddings base64: $(head -c 300 "$tmp/out")"
import base64, json, math, struct, sys
ref = json.loads(open(sys.argv[1]).readline())["embedding"][:4]
n = math.sqrt(sum(x * x for x in ref))
got = struct.unpack("<4f", base64.b64decode(json.load(open(sys.argv[2]))["data"][0]["embedding"]))
assert max(abs(a - b / n) for a, b in zip(got, ref)) < 1e-6, (got, ref)
PY

# ---- bad requests: each API's error shape ----
code=$(post /embed '{"inputs": 5}')
[ "$code" = 422 ] && python3 -c 'import json,sys; o = json.load(open(sys.argv[1])); assert o["error_type"] == "Validation" and "inputs" in o["error"]' "$tmp/out" &&
  ok "/embed inputs 5: 422 {error, error_type}" || fail "/embed bad inputs: $code $(cat "$tmp/out")"
code=$(post /embed '{"inputs": ["a"], "prompt_name": "query"}')
[ "$code" = 422 ] && grep -q 'prompt_name' "$tmp/out" && ok "/embed prompt_name: 422" || fail "/embed prompt_name: $code $(cat "$tmp/out")"
code=$(post /v1/embeddings '{"input": [], "model": "tiny"}')
[ "$code" = 400 ] && python3 -c 'import json,sys; e = json.load(open(sys.argv[1]))["error"]; assert e["type"] == "invalid_request_error" and e["param"] == "input" and e["message"]' "$tmp/out" &&
  ok "/v1/embeddings input []: 400 {error: {message, type, param}}" || fail "/v1/embeddings empty: $code $(cat "$tmp/out")"
code=$(post /v1/embeddings '{"input": "a", "encoding_format": "int8"}')
[ "$code" = 400 ] && grep -q 'encoding_format' "$tmp/out" && ok "/v1/embeddings encoding_format int8: 400" || fail "encoding_format: $code $(cat "$tmp/out")"
code=$(post /v1/embeddings '{"input": [[1, 2, 3]]}')
[ "$code" = 400 ] && grep -q 'token ids' "$tmp/out" && ok "/v1/embeddings token ids: 400 naming them" || fail "token ids: $code $(cat "$tmp/out")"
code=$(curl -s -m 10 -o "$tmp/out" -w '%{http_code}' "http://127.0.0.1:$PORT/embed")
[ "$code" = 405 ] && ok "GET /embed: 405" || fail "GET /embed: $code"
reqs=$(curl -s -m 10 "http://127.0.0.1:$PORT/metrics" | sed -n "s/^unif_requests_total //p")
[ "${reqs:-0}" -ge 6 ] && ok "the embedding routes count in /metrics ($reqs answered)" || fail "metrics: $reqs"

# ---- the official clients ----
venv=$SRC/.cache/venv-clients
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import openai, huggingface_hub, numpy' 2>/dev/null; then
  python3 -m venv "$venv" && "$venv/bin/pip" install -q openai==3.63.0 huggingface_hub==2.4.0 numpy > "$tmp/pip.log" 2>&1 ||
    { cat "$tmp/pip.log"; fail "pip install openai huggingface_hub into $venv"; }
fi
"$venv/bin/python" tests/regression/embed_clients.py "$PORT" "$tmp/ref.jsonl" "$tmp/texts.json" || fail "the Python clients"
stop

# ---- a classification model refuses the embedding routes ----
start tests/fixtures/tiny-bert-zh
code=$(post /embed '{"inputs": "a"}')
[ "$code" = 424 ] && grep -q 'not an embedding model' "$tmp/out" && ok "a classifier: /embed 424" || fail "classifier /embed: $code $(cat "$tmp/out")"
code=$(post /v1/embeddings '{"input": "a"}')
[ "$code" = 400 ] && grep -q 'not an embedding model' "$tmp/out" && ok "a classifier: /v1/embeddings 400" || fail "classifier /v1/embeddings: $code"
stop

[ $fails = 0 ] && echo "PASS" || { echo "$fails failed"; exit 1; }
