#!/usr/bin/env bash
# `unif serve` under load against HF transformers' pipeline on the same classifier and texts: 32
# concurrent clients of one short text per request (banking77_en dev queries), records/s and latency
# p50 / p99, one request alone (p50), start-up to the first answer, the server's memory after three
# equal loads (flat = no growth per request); fp32 and --quantize int8. Prints a markdown table.
#
#   bench/serve/run.sh [MODEL_DIR]     # default: .cache/bench-int8/classification/final (bench/int8/run.sh
#                                      # trains it: all-MiniLM-L6-v2 on banking77_en)
#   CLIENTS=32 SECONDS_PER_LOAD=10 LOADS=3 bench/serve/run.sh
#   UNIF=build-pypi/bin/unif HF_PY=.cache/hf-families-venv/bin/python bench/serve/run.sh   # the wheel's
#
# Needs build/bin/unif, wrk (apt-get install wrk: the load generator, an event loop in C) and, for
# the HF side, the environment bench/hf_compare/run.sh makes (.cache/hf-venv: transformers 4.30.2 on
# Debian's python3-torch; HF_PY picks another, with the Torch of the unif build measured).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
model=${1:-$root/.cache/bench-int8/classification/final}
texts=$root/data/banking77_en/dev.jsonl
clients=${CLIENTS:-32}
seconds=${SECONDS_PER_LOAD:-10}
out=$root/.cache/bench-serve
mkdir -p "$out"
command -v wrk > /dev/null || { echo "error: wrk is missing (apt-get install wrk)" >&2; exit 2; }
need_unif
[ -f "$model/config.json" ] || { echo "error: $model is not a model directory (bench/int8/run.sh makes one)" >&2; exit 2; }

for q in none int8; do
  log=$out/serve-$q.log
  t0=$(now)
  "$unif" serve --model "$model" --port 0 --quantize "$q" 2> "$log" &
  pid=$!
  port=""
  for _ in $(seq 1 3000); do
    port=$(sed -n 's|^listening on http://127.0.0.1:\([0-9]*\)$|\1|p' "$log")
    [ -n "$port" ] && break
    kill -0 $pid 2> /dev/null || { echo "error: unif serve exited: $(cat "$log")" >&2; exit 1; }
    sleep 0.01
  done
  python3 - "$port" <<'PY'
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
c.request("POST", "/v1/predict", body=json.dumps({"inputs": [{"text": "hello"}]}), headers={"Content-Type": "application/json"})
assert c.getresponse().status == 200
PY
  t1=$(now)
  echo "$t0 $t1" > "$out/startup-$q.txt"
  python3 "$root/bench/serve/load.py" "$port" "$pid" "$texts" "$clients" "$seconds" "$out/load-$q.json"
  kill -TERM $pid
  wait $pid
done

# HF's pipeline on the same model and texts, with the OpenBLAS kernels unif runs with.
hf_py=${HF_PY:-$root/.cache/hf-venv/bin/python}
if [ -x "$hf_py" ]; then
  . "$root/bench/blas_core.sh"
  OMP_WAIT_POLICY=PASSIVE "$hf_py" "$root/bench/serve/hf_pipeline.py" "$model" "$texts" 1280 "$out/hf.json" \
    2> "$out/hf.log" || { echo "error: hf_pipeline.py failed: $(tail -3 "$out/hf.log")" >&2; exit 1; }
else
  echo "note: no $hf_py (bench/hf_compare/run.sh makes it): HF's side is left out" >&2
fi

python3 - "$out" "$clients" <<'PY'
import json, os, sys
out, clients = sys.argv[1], int(sys.argv[2])
hf = json.load(open(os.path.join(out, "hf.json"))) if os.path.exists(os.path.join(out, "hf.json")) else None
print("| server | %d clients: records/s | p50 ms | p99 ms | one request alone: p50 ms | start-up to first answer s | RSS MB after each load |" % clients)
print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
rows = {}
for q in ("none", "int8"):
    d = json.load(open(os.path.join(out, "load-%s.json" % q)))
    t0, t1 = map(float, open(os.path.join(out, "startup-%s.txt" % q)).read().split())
    c = d["concurrent_again"]
    rows[q] = c["records_per_s"]
    print("| unif serve%s | %.0f | %.0f | %.0f | %.1f | %.2f | %s |" % (
        " --quantize int8" if q == "int8" else " (fp32)", c["records_per_s"], c["p50_ms"], c["p99_ms"],
        d["single_p50_ms"], t1 - t0, " / ".join("%.0f" % r for r in d["rss_mb"][1:])))
if hf:
    print("| HF pipeline (%s), batch %d (best of 1-64), %d threads, no HTTP | %.0f | | | %.1f | %.2f (load + first call) | |" % (
        hf["versions"], hf["best_batch"], hf["threads"], hf["best"], hf["single_p50_ms"], hf["startup_s"]))
    print()
    print("unif serve / HF pipeline: fp32 %.2fx, int8 %.2fx; int8 / fp32 %.2fx" % (
        rows["none"] / hf["best"], rows["int8"] / hf["best"], rows["int8"] / rows["none"]))
PY
