"""HF inference for bench/hf_compare: a fine-tuned classifier directory (unif's final/, HF format)
loaded with BertForSequenceClassification; the forward pass alone in torch.inference_mode() on
pre-tokenized batches (dynamic padding) for several batch sizes, and the whole pipeline (tokenize +
forward + softmax) at the best one.

  python hf_infer.py MODEL_DIR INPUT.jsonl OUT.json [BATCH_SIZES, default 16,32,64,128,256]
"""
import json
import os
import sys
import time

import torch

# Debian's Torch 1.13 starts with 1 intra-op thread on some VMs (its cpuinfo sees no cores): HF gets
# every core this process may use, as unif does (HF_THREADS overrides).
torch.set_num_threads(int(os.environ.get("HF_THREADS", "0")) or len(os.sched_getaffinity(0)))
from transformers import BertForSequenceClassification, BertTokenizerFast

model_dir, inp, out = sys.argv[1:4]
sizes = [int(x) for x in (sys.argv[4] if len(sys.argv) > 4 else "16,32,64,128,256").split(",")]
rows = [json.loads(x) for x in open(inp, encoding="utf-8") if x.strip()]
texts = [next(iter(r.values())) for r in rows]
tok = BertTokenizerFast.from_pretrained(model_dir)
model = BertForSequenceClassification.from_pretrained(model_dir).eval()
enc = tok(texts, truncation=True, max_length=64)


def batches(bs):
    out = []
    for s in range(0, len(texts), bs):
        ids = enc["input_ids"][s:s + bs]
        L = max(len(x) for x in ids)
        t = torch.zeros(len(ids), L, dtype=torch.long)
        m = torch.zeros(len(ids), L, dtype=torch.long)
        for b, x in enumerate(ids):
            t[b, :len(x)] = torch.tensor(x)
            m[b, :len(x)] = 1
        out.append((t, m))
    return out


results = []
with torch.inference_mode():
    model(input_ids=torch.ones(1, 8, dtype=torch.long))  # warm-up
    for bs in sizes:
        data = batches(bs)
        t0 = time.perf_counter()
        for t, m in data:
            model(input_ids=t, attention_mask=m, token_type_ids=torch.zeros_like(t)).logits
        results.append((bs, len(texts) / (time.perf_counter() - t0)))
    best = max(results, key=lambda r: r[1])[0]
    t0 = time.perf_counter()
    for s in range(0, len(texts), best):
        e = tok(texts[s:s + best], truncation=True, max_length=64, padding=True, return_tensors="pt")
        torch.softmax(model(**e).logits, -1).tolist()
    pipeline = len(texts) / (time.perf_counter() - t0)
json.dump({"forward": results, "best_batch": best, "pipeline": pipeline, "threads": torch.get_num_threads()},
          open(out, "w"))
