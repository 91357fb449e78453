"""POST /rerank of unif serve against CrossEncoder.rank (bench/serve/rerank.sh runs it):
  rerank.py PORT MODEL_DIR MAX_LENGTH QUERIES RANKING_FILE"""
import json
import statistics
import sys
import time
import urllib.request

from sentence_transformers import CrossEncoder

port, model_dir, max_length, n_queries, ranking = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
groups = [json.loads(line) for line in open(ranking)]
pool = []  # every distinct paragraph, in file order
for g in groups:
    for t in g["texts"]:
        if t not in pool:
            pool.append(t)
requests = []
for i, g in enumerate(groups[:n_queries]):
    others = [t for t in pool[(i * 37) % len(pool):] + pool if t not in g["texts"]]
    requests.append((g["query"], g["texts"] + others[: 100 - len(g["texts"])]))


def call(route, payload):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{route}", data=json.dumps(payload).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=600))


def post(query, texts):
    return call("/rerank", {"query": query, "texts": texts, "raw_scores": True})


def post_v1(query, texts):  # the same 100 pairs through unif's own route
    return call("/v1/predict", {"inputs": [[query, t] for t in texts]})


def post_tei_predict(query, texts):  # and through text-embeddings-inference's /predict
    return call("/predict", {"inputs": [[query, t] for t in texts], "raw_scores": True})


def timed(fn):
    times, answers = [], []
    fn(*requests[0])  # warm-up
    for query, texts in requests:
        t = time.perf_counter()
        answers.append(fn(query, texts))
        times.append(time.perf_counter() - t)
    return times, answers


unif_times, unif_answers = timed(post)
v1_times, _ = timed(post_v1)
tei_times, _ = timed(post_tei_predict)
ce = CrossEncoder(model_dir, max_length=max_length)


def ce_rank(query, texts):
    # CrossEncoder.rank takes one-output models only; a 2-label classifier is ranked as rank()
    # does it, on predict()'s scores (here logit "1" minus logit "0", /rerank's raw score).
    if ce.num_labels == 1:
        return [r["corpus_id"] for r in ce.rank(query, texts, batch_size=len(texts))]
    logits = ce.predict([[query, t] for t in texts], batch_size=len(texts))
    margin = [float(l[1] - l[0]) for l in logits]
    return sorted(range(len(texts)), key=lambda i: -margin[i])


ce_times, ce_answers = timed(ce_rank)
same_top = sum(u[0]["index"] == c[0] for u, c in zip(unif_answers, ce_answers))
print(f"| one query, 100 texts ({len(requests)} queries, max_length {max_length}) | p50 ms | mean ms | pairs/s |")
print("| --- | ---: | ---: | ---: |")
for name, times in (("unif serve POST /rerank", unif_times), ("unif serve POST /v1/predict, the same 100 pairs", v1_times),
                    ("unif serve POST /predict (TEI), the same 100 pairs", tei_times), ("sentence-transformers CrossEncoder (rank, or predict + sort)", ce_times)):
    p50, mean = statistics.median(times) * 1e3, statistics.mean(times) * 1e3
    print(f"| {name} | {p50:.0f} | {mean:.0f} | {100 / statistics.mean(times):.0f} |")
print(f"\nspeed-up (p50): {statistics.median(ce_times) / statistics.median(unif_times):.2f}x; "
      f"same top text on {same_top} of {len(requests)} queries")
