#!/bin/sh
# `unif serve` (SPEC §8) with real clients on loopback, every wait bounded: curl for /health,
# /metrics and each class of bad request (bad JSON, no inputs, wrong Content-Type, body over the
# limit, unknown path), answers equal to `unif predict`'s for the same lines, 32 concurrent
# clients (tests/regression/serve_client.py) batched together, a slow client and dropped
# connections, the queue full (503), token classification from text (entities), SIGTERM with
# requests in flight (all answered, exit 0), a port in use (error:, exit 2).
# Usage: test_serve.sh UNIF SOURCE_DIR
set -u
UNIF=$1
cd "$2"
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill -9 $p 2>/dev/null; done; rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
MODEL=tests/fixtures/tiny-bert-zh

# start NAME ARGS...: unif serve --port 0 ARGS in the background; sets PID and PORT (log: $tmp/NAME.log).
start() {
  name=$1
  shift
  "$UNIF" serve --port 0 "$@" 2> "$tmp/$name.log" &
  PID=$!
  pids="$pids $PID"
  i=0
  until grep -q '^listening on http://' "$tmp/$name.log"; do
    i=$((i + 1))
    if [ $i -gt 6000 ] || ! kill -0 $PID 2>/dev/null; then cat "$tmp/$name.log"; fail "$name: no 'listening on' line"; PORT=0; return 1; fi
    sleep 0.01
  done
  PORT=$(sed -n 's|^listening on http://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$tmp/$name.log")
}
# code METHOD PATH [CURL ARGS...]: the HTTP status (body in $tmp/body)
code() {
  m=$1 p=$2
  shift 2
  curl -s -m 30 -o "$tmp/body" -w '%{http_code}' -X "$m" "$@" "http://127.0.0.1:$PORT$p"
}
# queued N: wait (at most 5 s) until N requests wait in the queue (/metrics), so they are in flight.
queued() {
  i=0
  until curl -s -m 5 "http://127.0.0.1:$PORT/metrics" | grep -q "^unif_queue_requests $1\$"; do
    i=$((i + 1))
    [ $i -gt 100 ] && { echo "(only $(curl -s -m 5 "http://127.0.0.1:$PORT/metrics" | sed -n 's/^unif_queue_requests //p') queued)"; return 1; }
    sleep 0.05
  done
}
J='Content-Type: application/json'

# ---- a classification model: curl, answers as predict's, concurrent clients ----
start cls --model $MODEL || exit 1
CLS_PID=$PID CLS_PORT=$PORT
[ "$(code GET /health)" = 200 ] && grep -q '"status":"ok"' "$tmp/body" && ok "GET /health" || fail "GET /health: $(cat "$tmp/body")"

# The texts of 24 dev lines (their labels are another model's).
head -24 data/sib200_zh/dev.jsonl | python3 -c '
import json, sys
for l in sys.stdin: print(json.dumps({"text": json.loads(l)["text"], "id": len(l)}, ensure_ascii=False))' > "$tmp/in.jsonl"
printf '{"text_a": "今天天气很好", "text_b": "明天下雨"}\n' >> "$tmp/in.jsonl"
"$UNIF" predict --model $MODEL --input "$tmp/in.jsonl" --output "$tmp/predict.jsonl" 2> "$tmp/predict.err" ||
  { cat "$tmp/predict.err"; fail "unif predict"; }
python3 -c '
import json, sys
print(json.dumps({"inputs": [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]}))' "$tmp/in.jsonl" > "$tmp/request.json"
if [ "$(code POST /v1/predict -H "$J" --data-binary @"$tmp/request.json")" = 200 ] &&
   python3 -c '
import json, sys
outputs = json.load(open(sys.argv[1], encoding="utf-8"))["outputs"]
want = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
sys.exit(0 if outputs == want else 1)' "$tmp/body" "$tmp/predict.jsonl"; then
  ok "POST /v1/predict answers 25 records exactly as unif predict does"
else
  fail "POST /v1/predict differs from unif predict: $(head -c 400 "$tmp/body")"
fi
# A bad record is answered in its place, the others as usual.
if [ "$(code POST /v1/predict -H "$J" -d '{"inputs": [{"text": "a"}, {"nope": 1}, 7, {"text": "b"}]}')" = 200 ] &&
   python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))["outputs"]
sys.exit(0 if len(o) == 4 and "label" in o[0] and "record:2: missing field" in o[1]["error"] and "error" in o[2] and "label" in o[3] else 1)' "$tmp/body"; then
  ok "a bad record gets an error object, the rest are answered"
else
  fail "per-record errors: $(cat "$tmp/body")"
fi
[ "$(code POST /v1/predict -H "$J" -d '{"inputs": [')" = 400 ] && grep -q '"error":"invalid JSON' "$tmp/body" &&
  ok "bad JSON: 400" || fail "bad JSON: $(cat "$tmp/body")"
[ "$(code POST /v1/predict -H "$J" -d '{"records": []}')" = 400 ] && grep -q 'inputs' "$tmp/body" &&
  ok "no inputs array: 400" || fail "no inputs: $(cat "$tmp/body")"
[ "$(code POST /v1/predict -H 'Content-Type: text/plain' -d '{"inputs": []}')" = 415 ] &&
  ok "wrong Content-Type: 415" || fail "wrong Content-Type: $(cat "$tmp/body")"
[ "$(code GET /v2/nothing)" = 404 ] && grep -q '"error"' "$tmp/body" && ok "unknown path: 404 with a JSON error" ||
  fail "unknown path: $(cat "$tmp/body")"

python3 tests/regression/serve_client.py concurrent $CLS_PORT 32 8 "$tmp/in.jsonl" "$tmp/predict.jsonl" &&
  ok "32 concurrent clients x 8 requests: all 200, answers as unif predict's" || fail "concurrent clients"
python3 tests/regression/serve_client.py slow $CLS_PORT && ok "a slow client is dropped in bounded time" || fail "slow client"
python3 tests/regression/serve_client.py dropped $CLS_PORT && ok "dropped connections leave the server answering" ||
  fail "dropped connections"
[ "$(code GET /metrics)" = 200 ] || fail "GET /metrics"
for m in unif_requests_total unif_request_errors_total 'unif_batch_size_bucket{le="+Inf"}' unif_batch_size_count \
         'unif_request_duration_seconds_bucket{le="0.1"}' unif_request_duration_seconds_sum; do
  grep -q "^$m " "$tmp/body" || fail "/metrics lacks $m"
done
# Batching across requests: fewer batches than predict requests.
reqs=$(sed -n 's/^unif_requests_total //p' "$tmp/body") batches=$(sed -n 's/^unif_batch_size_count //p' "$tmp/body")
[ -n "$reqs" ] && [ -n "$batches" ] && [ "$batches" -lt "$reqs" ] && ok "/metrics: $reqs requests in $batches batches" ||
  fail "/metrics: $reqs requests, $batches batches"
grep -q '"POST /v1/predict" 200' "$tmp/cls.log" && ok "access log lines" || fail "no access log line"

# A port in use: error:, exit 2.
timeout 60 "$UNIF" serve --model $MODEL --port $CLS_PORT 2> "$tmp/inuse.err"
rc=$?
[ $rc = 2 ] && grep -q "^error: cannot listen on 127.0.0.1:$CLS_PORT" "$tmp/inuse.err" && ok "port in use: error:, exit 2" ||
  fail "port in use: exit $rc, $(cat "$tmp/inuse.err")"
kill -TERM $CLS_PID
wait $CLS_PID
rc=$?
[ $rc = 0 ] && ok "SIGTERM when idle: exit 0" || fail "SIGTERM when idle: exit $rc"

# ---- token classification from text; a queue of 1, a long wait, a body limit ----
ner=$tmp/ner
mkdir -p "$ner"
cp $MODEL/vocab.txt $MODEL/model.safetensors "$ner/"
python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
c["architectures"] = ["BertForTokenClassification"]
c["id2label"] = {"0": "O", "1": "B-LOC"}
c["label2id"] = {"O": 0, "B-LOC": 1}
json.dump(c, open(sys.argv[2], "w"))' $MODEL/config.json "$ner/config.json"
start ner --model "$ner" --queue 1 --max-wait-ms 1500 --max-body-bytes 4096 || exit 1
NER_PID=$PID
printf '{"text": "我爱北京 天安门, ok"}\n' > "$tmp/ner_in.jsonl"
"$UNIF" predict --model "$ner" --input "$tmp/ner_in.jsonl" > "$tmp/ner_predict.jsonl" 2> "$tmp/ner.err" || fail "ner predict"
if [ "$(code POST /v1/predict -H "$J" -d '{"inputs": [{"text": "我爱北京 天安门, ok"}]}')" = 200 ] &&
   python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))["outputs"][0]
want = json.loads(open(sys.argv[2]).readline())
text = "我爱北京 天安门, ok"
good = o == want and len(o["tags"]) == len(o["words"]) == 9 and all(text[e["start"]:e["end"]] == e["text"] for e in o["entities"])
sys.exit(0 if good and o["entities"] else 1)' "$tmp/body" "$tmp/ner_predict.jsonl"; then
  ok "token classification from text: tags, words, entities with offsets, as unif predict"
else
  fail "token classification from text: $(cat "$tmp/body")"
fi
head -c 10000 /dev/zero | tr '\0' 'x' > "$tmp/huge"
[ "$(code POST /v1/predict -H "$J" --data-binary @"$tmp/huge")" = 413 ] && ok "a body over --max-body-bytes: 413" ||
  fail "huge body: $(cat "$tmp/body")"
# Queue of 1: the first request waits out --max-wait-ms 1500; a second meanwhile gets 503.
curl -s -m 30 -o "$tmp/first" -w '%{http_code}' -H "$J" -d '{"inputs": [{"text": "北京"}]}' \
  "http://127.0.0.1:$PORT/v1/predict" > "$tmp/first.code" &
first=$!
sleep 0.5
[ "$(code POST /v1/predict -H "$J" -d '{"inputs": [{"text": "上海"}]}')" = 503 ] && ok "queue full: 503" ||
  fail "queue full: $(cat "$tmp/body")"
wait $first
[ "$(cat "$tmp/first.code")" = 200 ] && ok "the queued request is answered" || fail "queued request: $(cat "$tmp/first")"
# SIGTERM while a request waits in the queue: answered, then exit 0.
curl -s -m 30 -o "$tmp/inflight" -w '%{http_code}' -H "$J" -d '{"inputs": [{"text": "天安门"}]}' \
  "http://127.0.0.1:$PORT/v1/predict" > "$tmp/inflight.code" &
c1=$!
queued 1 || fail "the request did not reach the queue"
kill -TERM $NER_PID
wait $c1
wait $NER_PID
rc=$?
[ $rc = 0 ] && [ "$(cat "$tmp/inflight.code")" = 200 ] && grep -q '"entities"' "$tmp/inflight" &&
  grep -q 'stopping (SIGTERM)' "$tmp/ner.log" && ok "SIGTERM with a request in flight: answered, exit 0" ||
  fail "SIGTERM in flight: exit $rc, $(cat "$tmp/inflight.code") $(cat "$tmp/inflight")"


# ---- SIGINT with 8 concurrent requests in flight (a batch waiting 8 s) ----
start sigint --model $MODEL --max-wait-ms 8000 --max-batch 64 || exit 1
SI_PID=$PID
for i in 1 2 3 4 5 6 7 8; do
  curl -s -m 30 -o "$tmp/si.$i" -w '%{http_code}' -H "$J" -d "{\"inputs\": [{\"text\": \"第$i\"}]}" \
    "http://127.0.0.1:$PORT/v1/predict" > "$tmp/si.$i.code" &
done
queued 8 || fail "8 requests did not reach the queue"
kill -INT $SI_PID
wait $SI_PID
rc=$?
sleep 0.2
answered=0
for i in 1 2 3 4 5 6 7 8; do
  [ "$(cat "$tmp/si.$i.code" 2>/dev/null)" = 200 ] && answered=$((answered + 1))
done
[ $rc = 0 ] && [ $answered = 8 ] && ok "SIGINT with 8 requests in flight: all answered, exit 0" ||
  fail "SIGINT in flight: exit $rc, $answered of 8 answered"

[ $fails = 0 ] && echo "all serve checks passed" || { echo "$fails serve checks failed"; exit 1; }
