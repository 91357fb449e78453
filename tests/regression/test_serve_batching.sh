#!/bin/sh
# `unif serve`'s batches and dropped clients (docs/spec.md, "unif serve"): --max-batch-tokens bounds
# a batch's padded tokens (concurrent requests run in several batches, the unif_batch_tokens
# histogram within the budget) while a request over it alone is still answered; a client that
# sends a whole request and closes its connection while the request waits in the queue is dropped
# before its batch runs (unif_requests_dropped_total, a 499 access log line), and the server stays
# healthy and answers the next request; --help names the flag; --api-key guards every route but
# /health.
# Usage: test_serve_batching.sh UNIF SOURCE_DIR
set -u
UNIF=$1
cd "$2"
. tests/regression/serve_lib.sh
MODEL=tests/fixtures/tiny-bert-zh
J='Content-Type: application/json'

"$UNIF" serve --help > "$tmp/help" 2>&1
grep -q -- '--max-batch-tokens' "$tmp/help" && grep -q 'default 16384' "$tmp/help" && ok "--help names --max-batch-tokens" ||
  fail "--help: $(cat "$tmp/help")"

# start ARGS...: unif serve --port 0 --model the fixture ARGS; sets pid and PORT.
start() { serve_start --model $MODEL "$@"; }
stop() { serve_stop; }
metric() { curl -s -m 10 "http://127.0.0.1:$PORT/metrics" | sed -n "s/^$1 //p"; }

# ---- a token budget: 8 concurrent requests of 20 characters (22 tokens each) within 64 tokens ----
start --max-batch 64 --max-batch-tokens 64 --max-wait-ms 300
text=$(python3 -c 'print("天" * 20)')
clients=""
for i in 1 2 3 4 5 6 7 8; do
  curl -s -m 30 -o "$tmp/r.$i" -w '%{http_code}' -H "$J" -d "{\"inputs\": [{\"text\": \"$text\"}]}" \
    "http://127.0.0.1:$PORT/v1/predict" > "$tmp/r.$i.code" &
  clients="$clients $!"
done
for c in $clients; do wait $c; done
answered=0
for i in 1 2 3 4 5 6 7 8; do [ "$(cat "$tmp/r.$i.code")" = 200 ] && answered=$((answered + 1)); done
batches=$(metric unif_batch_size_count) tokens=$(metric unif_batch_tokens_sum)
over=$(curl -s -m 10 "http://127.0.0.1:$PORT/metrics" | sed -n 's/^unif_batch_tokens_bucket{le="64"} //p')
[ $answered = 8 ] && [ "$batches" -ge 3 ] && [ "$tokens" = 176 ] && [ "$over" = "$batches" ] &&
  ok "--max-batch-tokens 64: 8 requests of 22 tokens in $batches batches, each within 64 padded tokens" ||
  fail "token budget: $answered answered, $batches batches, $tokens tokens, $over within 64"
# A request over the budget on its own (4 x 22 tokens): answered, as a batch of its own.
code=$(curl -s -m 30 -o "$tmp/big" -w '%{http_code}' -H "$J" \
  -d "{\"inputs\": [{\"text\": \"$text\"}, {\"text\": \"$text\"}, {\"text\": \"$text\"}, {\"text\": \"$text\"}]}" \
  "http://127.0.0.1:$PORT/v1/predict")
[ "$code" = 200 ] && python3 -c 'import json, sys; sys.exit(0 if len(json.load(open(sys.argv[1]))["outputs"]) == 4 else 1)' "$tmp/big" &&
  [ "$(metric unif_batch_size_count)" = $((batches + 1)) ] && ok "a request over the budget alone is answered" ||
  fail "a request over the budget: $code $(head -c 300 "$tmp/big")"
stop

# ---- a client that sends its request and closes while it waits in the queue ----
start --max-wait-ms 1500
python3 - "$PORT" <<'PY'
import json, socket, sys, time
port = int(sys.argv[1])
body = json.dumps({"inputs": [{"text": "北京"}]}).encode()
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
          + str(len(body)).encode() + b"\r\n\r\n" + body)
time.sleep(0.3)  # the request is in the queue (its batch waits 1.5 s for others)
s.close()
PY
sleep 2
dropped=$(metric unif_requests_dropped_total)
[ "$dropped" = 1 ] && grep -q '"POST /v1/predict" 499 ' "$tmp/serve.log" &&
  ok "a client gone while its request waited: dropped before its batch ran (counted, logged 499)" ||
  fail "dropped client: unif_requests_dropped_total $dropped; $(grep 'POST /v1/predict' "$tmp/serve.log")"
[ "$(metric unif_batch_size_count)" = 0 ] && ok "the dropped request did not run" ||
  fail "the dropped request ran: $(metric unif_batch_size_count) batches"
code=$(curl -s -m 30 -o "$tmp/after" -w '%{http_code}' -H "$J" -d '{"inputs": [{"text": "上海"}]}' \
  "http://127.0.0.1:$PORT/v1/predict")
[ "$code" = 200 ] && grep -q '"label"' "$tmp/after" && [ "$(curl -s -m 10 "http://127.0.0.1:$PORT/health")" = '{"status":"ok"}' ] &&
  ok "the server answers the next request and /health" || fail "after the dropped client: $code $(cat "$tmp/after")"
stop

# ---- --api-key, here from UNIF_API_KEY: 401 without the key or with another, 200 with it; /health
# needs none; the key is never in the log. A server on a non-loopback address without a key warns. ----
export UNIF_API_KEY=k3y-Secret-0123
start
unset UNIF_API_KEY
url="http://127.0.0.1:$PORT"
code_of() { curl -s -m 30 -o "$tmp/auth" -D "$tmp/auth.head" -w '%{http_code}' "$@"; }
c1=$(code_of -H "$J" -d '{"inputs": [{"text": "北京"}]}' "$url/v1/predict")
grep -qi '^WWW-Authenticate: Bearer' "$tmp/auth.head" && grep -q 'needs an API key' "$tmp/auth" && h1=yes || h1=no
c2=$(code_of -H "$J" -H 'Authorization: Bearer k3y-Secret-012' -d '{"inputs": [{"text": "北京"}]}' "$url/v1/predict")
c3=$(code_of -H "$J" -H 'Authorization: Bearer k3y-Secret-0123' -d '{"inputs": [{"text": "北京"}]}' "$url/v1/predict")
grep -q '"label"' "$tmp/auth" && l3=yes || l3=no
c4=$(code_of "$url/health")
c5=$(code_of "$url/metrics")
c6=$(code_of -H "$J" -d '{"input": "x"}' "$url/v1/embeddings")
python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; sys.exit(0 if e["code"] == "invalid_api_key" else 1)' \
  "$tmp/auth" && o6=yes || o6=no
[ "$c1 $h1 $c2 $c3 $l3 $c4 $c5 $c6 $o6" = "401 yes 401 200 yes 200 401 401 yes" ] &&
  ok "--api-key: 401 without it or with another key (OpenAI's error shape on /v1/embeddings), 200 with it, /health open" ||
  fail "--api-key: $c1 $h1 $c2 $c3 $l3 $c4 $c5 $c6 $o6 (expected 401 yes 401 200 yes 200 401 401 yes)"
stop
! grep -q 'k3y-Secret' "$tmp/serve.log" && ok "the API key is not in the log" || fail "the API key is in the log"
serve_start --model $MODEL --host 0.0.0.0
grep -q '^warning: 0.0.0.0 is reachable from other machines and the server has no API key' "$tmp/serve.log" &&
  ok "no key on a non-loopback address: a warning" || fail "no warning for 0.0.0.0 without a key: $(head -3 "$tmp/serve.log")"
stop
if "$UNIF" serve --model $MODEL --api-key 'two words' > "$tmp/out" 2>&1; then
  fail "a key with a space was taken"
else
  grep -q '^error: --api-key: the key must not hold spaces' "$tmp/out" && ok "a key with a space: an error" ||
    fail "a key with a space: $(cat "$tmp/out")"
fi

[ $fails = 0 ] && echo "all serve batching checks passed" || { echo "$fails serve batching checks failed"; exit 1; }
