#!/usr/bin/env python3
"""HF's twin of bench_train_step: one training step of BertForSequenceClassification (forward,
backward, global-norm clipping, torch.optim.AdamW with unif's parameter groups, zero_grad) on random
token ids, with the same shapes and options, timed per phase; --profile writes one step's operator
trace (chrome format) for bench/profile_summary.py; --checkpointing: HF's gradient checkpointing.
Prints the process's peak resident memory.

Runs in bench/hf_compare's virtual environment (transformers on Debian's python3-torch 1.13):
  .cache/hf-venv/bin/python bench/hf_train_step.py --hidden 384 --layers 6 --heads 12 \
      --intermediate 1536 --vocab 30522 --batch 32 --seq 32 [--profile /tmp/hf.json]
Threads: all cores (torch.set_num_threads; Debian's Torch starts with 1 here), OMP_WAIT_POLICY as
the environment sets it (hf_compare runs HF with PASSIVE).
"""
import argparse
import os
import resource
import sys
import time

import torch
from transformers import BertConfig, BertForSequenceClassification

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf_compare"))
from hf_train import param_groups  # noqa: E402  (hf_compare's groups: the same rule as unif's)


def main():
    p = argparse.ArgumentParser()
    for name, default in [("steps", 10), ("warmup", 2), ("batch", 16), ("seq", 128), ("hidden", 256),
                          ("layers", 4), ("heads", 4), ("intermediate", 1024), ("vocab", 21128)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--profile", default="")
    p.add_argument("--checkpointing", action="store_true", help="model.gradient_checkpointing_enable()")
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                   help="bf16: the forward under torch.autocast('cpu', bfloat16), as unif's training.precision")
    a = p.parse_args()
    torch.set_num_threads(int(os.environ.get("HF_THREADS", os.cpu_count())))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=a.vocab, hidden_size=a.hidden, num_hidden_layers=a.layers,
                     num_attention_heads=a.heads, intermediate_size=a.intermediate, max_position_embeddings=512,
                     hidden_dropout_prob=a.dropout, attention_probs_dropout_prob=a.dropout, num_labels=7)
    model = BertForSequenceClassification(cfg)
    if a.checkpointing:
        model.gradient_checkpointing_enable()
    model.train()
    opt = torch.optim.AdamW(param_groups(model, 0.01), lr=1e-4)
    n_nonemb = sum(w.numel() for n, w in model.named_parameters() if "embeddings." not in n)
    ids = torch.randint(1000, a.vocab, (a.batch, a.seq))
    mask = torch.ones(a.batch, a.seq, dtype=torch.long)
    types = torch.zeros(a.batch, a.seq, dtype=torch.long)
    labels = torch.randint(0, 7, (a.batch,))
    phase = [0.0] * 5

    def step():
        t = time.perf_counter()

        def lap(i):
            nonlocal t
            now = time.perf_counter()
            phase[i] += now - t
            t = now
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            loss = model(input_ids=ids, attention_mask=mask, token_type_ids=types, labels=labels).loss
        lap(0)
        loss.backward()
        lap(1)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        lap(2)
        opt.step()
        lap(3)
        opt.zero_grad(set_to_none=True)
        lap(4)

    for _ in range(a.warmup):
        step()
    phase = [0.0] * 5
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    dt = (time.perf_counter() - t0) / a.steps
    ms = [x / a.steps * 1e3 for x in phase]
    if a.profile:
        with torch.autograd.profiler.profile() as prof:
            step()
        prof.export_chrome_trace(a.profile)
    tokens = a.batch * a.seq
    flops = 6.0 * n_nonemb * tokens + 12.0 * a.layers * a.batch * a.seq * a.seq * a.hidden
    x, y = torch.randn(1024, 1024), torch.randn(1024, 1024)
    torch.mm(x, y)
    t0 = time.perf_counter()
    for _ in range(20):
        torch.mm(x, y)
    peak = 2.0 * 1024 ** 3 * 20 / (time.perf_counter() - t0) / 1e9
    print("hf_train_step: hidden %d, %d layers, %d heads, intermediate %d, vocab %d, batch %d x seq %d, dropout %.2f, "
          "%s, %d threads, OMP_WAIT_POLICY=%s" % (a.hidden, a.layers, a.heads, a.intermediate, a.vocab, a.batch, a.seq,
                                                 a.dropout, a.precision, torch.get_num_threads(), os.environ.get("OMP_WAIT_POLICY", "")))
    print("  non-embedding parameters: %d" % n_nonemb)
    print("  step: %.1f ms   %.1f samples/s   %.0f tokens/s" % (dt * 1e3, a.batch / dt, tokens / dt))
    print("  phases (ms): forward %.1f  backward %.1f  clip %.1f  optimizer %.1f  zero_grad %.1f" % tuple(ms))
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("  gradient checkpointing: %s   peak resident memory: %.0f MiB" % ("on" if a.checkpointing else "off", peak_mib))
    print("  achieved: %.1f GFLOP/s   matmul 1024^3 float32: %.1f GFLOP/s   ratio: %.0f%%" %
          (flops / dt / 1e9, peak, 100.0 * flops / dt / 1e9 / peak))


if __name__ == "__main__":
    main()
