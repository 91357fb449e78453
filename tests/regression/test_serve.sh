#!/bin/sh
# `unif serve` (SPEC §8) with real clients on loopback, every wait bounded: curl for /health,
# /metrics and each class of bad request (bad JSON, no inputs, wrong Content-Type, body over the
# limit, unknown path, another method: 405 with Allow), answers equal to `unif predict`'s for the
# same lines, 32 concurrent clients (tests/regression/serve_client.py) batched together, a slow
# client and dropped connections, the queue full (503), token classification from text
# (entities), a record that makes the model throw batched with other requests (answered in its
# place, the others as usual), connections trickling their requests (dropped after
# --request-timeout, /health answered meanwhile), SIGTERM with requests in flight (all answered,
# exit 0; rounds of clients across it: every request answered or refused), a port in use
# (error:, exit 2).
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

# launch NAME ARGS...: unif serve --port 0 ARGS in the background, not waiting for it (log:
# $tmp/NAME.log, pid: $tmp/NAME.pid).
launch() {
  name=$1
  shift
  "$UNIF" serve --port 0 "$@" 2> "$tmp/$name.log" &
  echo $! > "$tmp/$name.pid"
  pids="$pids $!"
}
# ready NAME: waits (at most 60 s) until NAME listens; sets PID and PORT.
ready() {
  name=$1
  PID=$(cat "$tmp/$name.pid")
  i=0
  until grep -q '^listening on http://' "$tmp/$name.log" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 6000 ] || ! kill -0 $PID 2>/dev/null; then cat "$tmp/$name.log"; fail "$name: no 'listening on' line"; PORT=0; return 1; fi
    sleep 0.01
  done
  PORT=$(sed -n 's|^listening on http://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$tmp/$name.log")
}
# start NAME ARGS...: launch, then ready.
start() {
  launch "$@" && ready "$1"
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
# A path of ours with another method: 405, its methods in Allow, a JSON error.
for mp in "PUT /v1/predict POST" "GET /v1/predict POST" "POST /health GET, HEAD" "DELETE /metrics GET, HEAD"; do
  set -- $mp
  m=$1 p=$2
  shift 2
  [ "$(code $m $p -D "$tmp/headers")" = 405 ] && tr -d '\r' < "$tmp/headers" | grep -qix "Allow: $*" &&
    grep -q '"error"' "$tmp/body" && ok "$m $p: 405, Allow: $*" ||
    fail "$m $p: $(head -1 "$tmp/headers") $(grep -i '^Allow' "$tmp/headers") $(cat "$tmp/body")"
done

python3 tests/regression/serve_client.py concurrent $CLS_PORT 32 8 "$tmp/in.jsonl" "$tmp/predict.jsonl" &&
  ok "32 concurrent clients x 8 requests: all 200, answers as unif predict's" || fail "concurrent clients"
# Memory levels off: 6 rounds of 300 requests; the last 3 add under 8 MB (allocator and LibTorch
# caches fill in the first rounds; a leak per request would add as much in every round).
python3 tests/regression/serve_client.py memory $CLS_PORT $CLS_PID 6 300 "$tmp/in.jsonl" > "$tmp/memory.log" 2>&1 &&
  ok "memory levels off: $(tr '\n' ' ' < "$tmp/memory.log")" || { fail "memory grows:"; cat "$tmp/memory.log"; }
python3 tests/regression/serve_client.py slow $CLS_PORT && ok "a slow client is dropped in bounded time" || fail "slow client"
python3 tests/regression/serve_client.py dropped $CLS_PORT && ok "dropped connections leave the server answering" ||
  fail "dropped connections"
[ "$(code GET /metrics)" = 200 ] || fail "GET /metrics"
for m in unif_requests_total unif_request_errors_total 'unif_batch_size_bucket{le="+Inf"}' unif_batch_size_count \
         'unif_request_duration_seconds_bucket{le="0.1"}' unif_request_duration_seconds_sum; do
  grep -q "^$m " "$tmp/body" || fail "/metrics lacks $m"
done
# Answers by status code, every path: the 404 and the four 405s above.
grep -q '^unif_responses_total{code="404"} 1$' "$tmp/body" && grep -q '^unif_responses_total{code="405"} 4$' "$tmp/body" &&
  grep -q '^unif_responses_total{code="200"} [1-9]' "$tmp/body" && ok "/metrics counts answers by status, 404 and 405 too" ||
  fail "/metrics by status: $(grep '^unif_responses_total' "$tmp/body" | tr '\n' ' ')"
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


# ---- a record that makes the model throw, in a batch with other requests ----
# unif.yaml's max_seq_length (128) over config.json's max_position_embeddings (64): a text of over
# 62 pieces makes the forward pass throw, a short one does not.
bad=$tmp/too_long
mkdir -p "$bad"
cp $MODEL/config.json $MODEL/vocab.txt $MODEL/model.safetensors "$bad/"
printf 'task: classification\nlabels: [neg, pos]\ntext_fields: [text]\nlabel_field: label\nmax_seq_length: 128\n' \
  > "$bad/unif.yaml"
echo ok > "$bad/COMPLETE"
start throws --model "$bad" --max-wait-ms 2000 --max-batch 64 || exit 1
TH_PID=$PID
long=$(python3 -c 'print("长" * 100)')
curl -s -m 30 -D "$tmp/a.headers" -o "$tmp/a.json" -w '%{http_code}' -H "$J" \
  -d "{\"inputs\": [{\"text\": \"今天天气很好\"}, {\"text\": \"$long\"}, {\"text\": \"明天下雨\"}]}" \
  "http://127.0.0.1:$PORT/v1/predict" > "$tmp/a.code" &
a=$!
queued 1 || fail "the first request did not reach the queue"
[ "$(code POST /v1/predict -H "$J" -d '{"inputs": [{"nope": 1}, {"text": "北京"}]}')" = 200 ] || fail "second request: $(cat "$tmp/body")"
cp "$tmp/body" "$tmp/b.json"
wait $a
[ "$(cat "$tmp/a.code")" = 200 ] || fail "first request: $(cat "$tmp/a.code") $(head -c 300 "$tmp/a.json")"
id=$(tr -d '\r' < "$tmp/a.headers" | sed -n 's/^X-Request-Id: //ip')
if python3 -c '
import json, sys
try:
    a = json.load(open(sys.argv[1]))["outputs"]
    b = json.load(open(sys.argv[2]))["outputs"]
except (KeyError, ValueError):
    sys.exit(1)
rid = sys.argv[3]
good = len(a) == 3 and "label" in a[0] and "label" in a[2] and set(a[1]) == {"error"}
good = good and a[1]["error"].startswith("record:2: internal error") and ("request " + rid) in a[1]["error"]
good = good and len(b) == 2 and b[0]["error"].startswith("record:1: missing field") and "label" in b[1]
sys.exit(0 if good and rid else 1)' "$tmp/a.json" "$tmp/b.json" "$id"; then
  ok "a record the model throws on: an error in its place (record:2, request $id), the rest and the other request answered, records numbered per request"
else
  fail "a throwing record: $(cat "$tmp/a.code") $(head -c 400 "$tmp/a.json") | $(head -c 300 "$tmp/b.json")"
fi
# The exception's text (a LibTorch one holds a stack trace and source paths) is in the log only.
if grep -q 'max_position_embeddings' "$tmp/a.json" "$tmp/b.json"; then
  fail "the exception's text is in an answer"
elif grep -q "^request $id: record:2: .*max_position_embeddings" "$tmp/throws.log"; then
  ok "the exception's text is in the log under the request's id"
else
  fail "no log line for request $id: $(grep -v '" 200 ' "$tmp/throws.log" | head -5)"
fi
[ "$(code GET /metrics)" = 200 ] && grep -q '^unif_batch_size_count 1$' "$tmp/body" && grep -q '^unif_batch_size_sum 5$' "$tmp/body" &&
  ok "both requests ran as one batch" || fail "batches: $(grep '^unif_batch_size_[cs]' "$tmp/body" | tr '\n' ' ')"
kill -TERM $TH_PID
wait $TH_PID

# ---- connections trickling their requests: a deadline for each request, /health meanwhile ----
# 16 connections, more than the 8 predict and 4 other workers of --queue 4, each sending a byte of
# a request head every 0.5 s.
start trickle --model $MODEL --queue 4 --request-timeout 3 || exit 1
TR_PID=$PID
python3 tests/regression/serve_client.py trickle $PORT 16 3 &&
  ok "16 trickling connections: /health and /metrics answered within 2 s, each dropped (408) after --request-timeout 3" ||
  fail "trickling connections"
[ "$(code GET /metrics)" = 200 ] && grep -q '^unif_responses_total{code="408"} 16$' "$tmp/body" &&
  [ "$(grep -c '" 408 ' "$tmp/trickle.log")" = 16 ] && ok "408s logged and counted" ||
  fail "408s: $(grep '^unif_responses_total' "$tmp/body" | tr '\n' ' ')"
kill -TERM $TR_PID
wait $TR_PID
rc=$?
[ $rc = 0 ] && ok "SIGTERM after the tricklers: exit 0" || fail "SIGTERM after the tricklers: exit $rc"

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

# ---- SIGTERM across rounds of clients: every request answered or refused, none lost ----
# Each round: 8 idle connections (a server with a thread per connection and --queue 4 would give
# them all its threads), then 3 clients sending requests back to back, each on its own connection
# (a batch waits up to 500 ms), SIGTERM after 0.3 s. The servers start together.
rounds=6
for r in $(seq $rounds); do launch "term$r" --model $MODEL --queue 4 --max-batch 64 --max-wait-ms 500; done
lost_rounds=0
for r in $(seq $rounds); do
  ready "term$r" || exit 1
  python3 tests/regression/serve_client.py sigterm $PORT $PID 3 8 || lost_rounds=$((lost_rounds + 1))
  wait $PID
  rc=$?
  [ $rc = 0 ] || fail "round $r: exit $rc"
done
[ $lost_rounds = 0 ] && ok "SIGTERM across $rounds rounds of 3 clients: every request answered or refused" ||
  fail "SIGTERM across clients: requests lost in $lost_rounds of $rounds rounds"

[ $fails = 0 ] && echo "all serve checks passed" || { echo "$fails serve checks failed"; exit 1; }
