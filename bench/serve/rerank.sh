#!/usr/bin/env bash
# `unif serve`'s POST /rerank against sentence-transformers' CrossEncoder.rank on the same reranker
# and the same machine: one query over 100 paragraphs a request (the query's 8 candidates of
# data/xquad_en_ranking/dev.jsonl and 92 other paragraphs), answered by the server in one batch
# (--max-batch 128), one request at a time; latency p50 / mean over QUERIES queries after a warm-up.
# Both sides read the same model directory and cut pairs at the model's max_seq_length.
#
#   bench/serve/rerank.sh [MODEL_DIR]   # default runs/minilm/reranker/final, which
#                                       # `build/bin/unif train configs/minilm/reranker.yaml` makes
#   QUERIES=20 bench/serve/rerank.sh
#
# Needs build/bin/unif and the pypi toolchain's Python environment (.cache/venv-pypi, made by
# scripts/pypi_torch.sh) with sentence-transformers 6.3.0 (installed into it when missing).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
model=${1:-$root/runs/minilm/reranker/final}
queries=${QUERIES:-20}
venv=${UNIF_PYPI_VENV:-$root/.cache/venv-pypi}
need_unif
[ -f "$model/config.json" ] || { echo "error: $model is not a model directory (train configs/minilm/reranker.yaml)" >&2; exit 2; }
[ -x "$venv/bin/python" ] || { echo "error: $venv is missing (scripts/pypi_torch.sh makes it)" >&2; exit 2; }
"$venv/bin/python" -c 'import sentence_transformers' 2> /dev/null ||
  "$venv/bin/pip" install --disable-pip-version-check -q sentence-transformers==6.3.0
out=$root/.cache/bench-rerank
mkdir -p "$out"
"$unif" serve --model "$model" --port 0 --max-batch 128 2> "$out/serve.log" &
pid=$!
trap 'kill $pid 2> /dev/null || true' EXIT
port=""
for _ in $(seq 1 3000); do
  port=$(sed -n 's|^listening on http://127.0.0.1:\([0-9]*\)$|\1|p' "$out/serve.log")
  [ -n "$port" ] && break
  kill -0 $pid 2> /dev/null || { echo "error: unif serve exited: $(cat "$out/serve.log")" >&2; exit 1; }
  sleep 0.01
done
max_len=$(sed -n 's/^max_seq_length: //p' "$model/unif.yaml")
"$venv/bin/python" "$root/bench/serve/rerank.py" "$port" "$model" "${max_len:-128}" "$queries" \
  "$root/data/xquad_en_ranking/dev.jsonl"
echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores, $("$unif" --version 2>&1 | head -1); command: bench/serve/rerank.sh $*"
