"""unif against sentence-transformers on sentence embeddings, side by side in one run (bench/embedding/run.sh).

  1. quality and training speed: MultipleNegativesRankingLoss on the (anchor, positive, hard
     negative) triplets of data/snli_en/triplets.jsonl from all-MiniLM-L6-v2, 1 epoch, batch 32,
     AdamW lr 5e-5, the same hyperparameters and file order on both sides, evaluated on data/stsb_en/dev.jsonl (Spearman of the cosines);
     SEEDS seeds a side; training samples/s from each side's own training time (no evaluation);
  2. embedding throughput: every STS-B sentence (train and dev) through `unif embed` and through
     SentenceTransformer.encode, batch 32, each a whole process (load included);
  3. memory: peak resident memory of one training step at batch 256, mnrl against cached_mnrl
     (mini_batch_size 32), one CPU replica;
  4. with --base-model DIR (all-mpnet-base-v2, scripts/fetch-model.sh all-mpnet-base-v2): the
     embedding throughput of 2. on that base-size model, over the STS-B dev sentences.

Prints a Markdown table and writes the numbers to .cache/bench-embedding/results.json.
  compare.py --unif build-pypi/bin/unif --model DIR [--seeds 3] [--base-model DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRIPLETS = os.path.join(ROOT, "data/snli_en/triplets.jsonl")
DEV = os.path.join(ROOT, "data/stsb_en/dev.jsonl")
ST_SIDE = os.path.join(ROOT, "bench/embedding/st_side.py")

CONFIG = """task: embedding
output_dir: {out}
seed: {seed}
model: {{pretrained: {model}, max_seq_length: 64}}
data:
  train: {triplets}
  dev: {dev}
  text_fields: {fields}
  label_field: label
training:
  batch_size: {batch}
  epochs: 1
  max_steps: {max_steps}
  shuffle: false
  optimizer: {{name: adamw, lr: 5.0e-5, weight_decay: 0.0, eps: 1.0e-8}}
  schedule: {{name: linear, warmup_ratio: 0.1}}
  max_grad_norm: 1.0
  log_every: 1
  eval_every: 0
embedding: {{loss: {loss}, mini_batch_size: 32, scale: 20.0}}
parallel: {{devices: {devices}}}
"""


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} exited {r.returncode}:\n{r.stderr[-3000:]}")
    return r


def last_json(r):
    """The JSON object a side printed last (a trainer may print its own lines before it)."""
    return json.loads(r.stdout.strip().splitlines()[-1])


def peak_rss_mb(cmd):
    """The command's peak resident memory in MB (GNU time's maximum resident set size)."""
    r = run(["/usr/bin/time", "-f", "PEAK_RSS_KB %M"] + cmd)
    kb = [l for l in r.stderr.splitlines() if l.startswith("PEAK_RSS_KB ")][-1].split()[1]
    return int(kb) / 1024.0


def unif_train(unif, model, tmp, name, seed=42, batch=32, max_steps=0, loss="mnrl", devices="auto", dev=True):
    out = os.path.join(tmp, name)
    cfg = os.path.join(tmp, name + ".yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(out=out, seed=seed, model=model, triplets=TRIPLETS, dev=DEV if dev else "null",
                              batch=batch, max_steps=max_steps, loss=loss, devices=devices,
                              fields="[text_a, text_b, text_neg]" if dev else "[text_a, text_b]"))
    return cfg, out


def metrics(out):
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [json.loads(l) for l in f if l.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--unif", default=os.path.join(ROOT, "build-pypi/bin/unif"))
    ap.add_argument("--model", required=True)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--base-model", default="")
    a = ap.parse_args()
    py = sys.executable
    results = {"date": time.strftime("%Y-%m-%d"), "unif": a.unif, "model": a.model}
    with tempfile.TemporaryDirectory() as tmp:
        # 1. Quality and training speed.
        base_st = last_json(run([py, ST_SIDE, "eval", a.model, DEV]))["spearman_cosine"]
        cfg, _ = unif_train(a.unif, a.model, tmp, "base")
        base_unif = last_json(run([a.unif, "eval", cfg, "--model", a.model]))["spearman_cosine"]
        rows = []
        for seed in range(1, a.seeds + 1):
            cfg, out = unif_train(a.unif, a.model, tmp, f"unif{seed}", seed=seed)
            run([a.unif, "train", cfg])
            m = metrics(out)
            train = [r for r in m if r.get("split") == "train"][-1]
            dev = [r for r in m if r.get("split") == "dev"][-1]
            st = last_json(run([py, ST_SIDE, "train", a.model, TRIPLETS, DEV, str(seed)]))
            rows.append({"seed": seed, "unif_spearman": dev["spearman_cosine"], "unif_train_s": train["train_s"],
                         "st_spearman": st["spearman_cosine"], "st_train_s": st["train_s"], "samples": st["samples"]})
            print(f"seed {seed}: {rows[-1]}", file=sys.stderr)
        n = len(rows)
        mean = lambda k: sum(r[k] for r in rows) / n
        samples = rows[0]["samples"]
        results["quality"] = {"untrained_unif": base_unif, "untrained_st": base_st, "runs": rows,
                              "unif_spearman": mean("unif_spearman"), "st_spearman": mean("st_spearman"),
                              "unif_samples_per_s": samples / mean("unif_train_s"),
                              "st_samples_per_s": samples / mean("st_train_s")}
        # 2. Embedding throughput, whole processes.
        def throughput(model, splits):
            texts = os.path.join(tmp, "texts.jsonl")
            n_texts = 0
            with open(texts, "w") as f:
                for split in splits:
                    for line in open(os.path.join(ROOT, f"data/stsb_en/{split}.jsonl")):
                        if line.strip():
                            r = json.loads(line)
                            for t in (r["text_a"], r["text_b"]):
                                f.write(json.dumps({"text": t}) + "\n")
                                n_texts += 1
            t = time.perf_counter()
            run([a.unif, "embed", "--model", model, "--input", texts, "--output", os.path.join(tmp, "emb.jsonl"),
                 "--batch-size", "32"])
            unif_s = time.perf_counter() - t
            t = time.perf_counter()
            run([py, ST_SIDE, "encode", model, texts])
            st_s = time.perf_counter() - t
            return {"texts": n_texts, "unif_s": unif_s, "st_s": st_s,
                    "unif_texts_per_s": n_texts / unif_s, "st_texts_per_s": n_texts / st_s}
        results["embed"] = throughput(a.model, ("train", "dev"))
        if a.base_model:
            results["embed_base"] = throughput(a.base_model, ("dev",))
        # 3. Peak memory of one step at batch 256 on one replica.
        mem = {}
        for loss in ("mnrl", "cached_mnrl"):
            cfg, _ = unif_train(a.unif, a.model, tmp, loss, batch=256, max_steps=1, loss=loss, devices="[cpu]", dev=False)
            mem[loss] = peak_rss_mb([a.unif, "train", cfg])
        results["memory_mb"] = mem
    os.makedirs(os.path.join(ROOT, ".cache/bench-embedding"), exist_ok=True)
    with open(os.path.join(ROOT, ".cache/bench-embedding/results.json"), "w") as f:
        json.dump(results, f, indent=2)
    q, e = results["quality"], results["embed"]
    print(f"| measure ({results['date']}) | unif | sentence-transformers | ratio |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| STS-B dev Spearman, untrained | {q['untrained_unif']:.4f} | {q['untrained_st']:.4f} | |")
    print(f"| STS-B dev Spearman after MNRL on the SNLI triplets, mean of {n} seeds | {q['unif_spearman']:.4f} | {q['st_spearman']:.4f} | "
          f"{q['unif_spearman'] - q['st_spearman']:+.4f} |")
    print(f"| training samples/s | {q['unif_samples_per_s']:.1f} | {q['st_samples_per_s']:.1f} | "
          f"{q['unif_samples_per_s'] / q['st_samples_per_s']:.2f}x |")
    print(f"| embedding texts/s ({e['texts']} texts, whole process) | {e['unif_texts_per_s']:.1f} | "
          f"{e['st_texts_per_s']:.1f} | {e['unif_texts_per_s'] / e['st_texts_per_s']:.2f}x |")
    print(f"| peak memory of one step at batch 256, MB: mnrl / cached_mnrl | {mem['mnrl']:.0f} / "
          f"{mem['cached_mnrl']:.0f} | | {mem['cached_mnrl'] / mem['mnrl']:.2f} |")
    if "embed_base" in results:
        b = results["embed_base"]
        print(f"| all-mpnet-base-v2 embedding texts/s ({b['texts']} texts, whole process) | "
              f"{b['unif_texts_per_s']:.1f} | {b['st_texts_per_s']:.1f} | "
              f"{b['unif_texts_per_s'] / b['st_texts_per_s']:.2f}x |")


if __name__ == "__main__":
    main()
