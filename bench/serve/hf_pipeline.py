"""HF's peer of `unif serve` (bench/serve/run.sh): transformers' pipeline("text-classification") on
the same model directory and texts, every core (HF_THREADS overrides), at batch sizes 1-64; the best
one's records/s, and the one-record latency p50 (what a single request costs).

  python hf_pipeline.py MODEL_DIR TEXTS.jsonl N OUT.json
"""
import json
import os
import sys
import time

import torch

torch.set_num_threads(int(os.environ.get("HF_THREADS", "0")) or len(os.sched_getaffinity(0)))
import transformers  # noqa: E402
from transformers import pipeline  # noqa: E402

model_dir, path, n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
texts = [json.loads(x)["text"] for x in open(path, encoding="utf-8") if x.strip()]
texts = (texts * (n // len(texts) + 1))[:n]
t0 = time.perf_counter()
pipe = pipeline("text-classification", model=model_dir, tokenizer=model_dir, device=-1)
pipe(texts[:1])
startup = time.perf_counter() - t0
results = {}
for bs in (1, 8, 16, 32, 64):
    t0 = time.perf_counter()
    pipe(texts, batch_size=bs, truncation=True, max_length=64)
    results[bs] = len(texts) / (time.perf_counter() - t0)
single = []
for t in texts[:50]:
    t0 = time.perf_counter()
    pipe(t, truncation=True, max_length=64)
    single.append(time.perf_counter() - t0)
single.sort()
best = max(results, key=results.get)
json.dump({"records_per_s": results, "best_batch": best, "best": results[best],
           "single_p50_ms": 1e3 * single[len(single) // 2], "startup_s": startup,
           "threads": torch.get_num_threads(),
           "versions": "transformers %s, torch %s" % (transformers.__version__, torch.__version__)}, open(out, "w"))
