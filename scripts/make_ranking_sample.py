#!/usr/bin/env python3
"""Builds the bundled reranking sample data/xquad_en_ranking from data/xquad_en: for each question, its
paragraph (relevant) among other paragraphs (not relevant), as a pair model ranks them.

  python3 scripts/make_ranking_sample.py          (from the repository root; Python stdlib only)

Writes
  dev.jsonl    {"query", "texts": [8 paragraphs], "labels": [1 or 0, ...]} for every other question
               of xquad_en's dev.jsonl (102): its paragraph and the 7 paragraphs after it in file
               order (mostly of the same article: hard negatives), in an order fixed by a hash of the
               question id (so the relevant one is not always first);
  dev_pairs.jsonl  the same questions as pairs {"text_a", "text_b", "label"}: each with its
               paragraph ("1") and the paragraph after it ("0"), a classifier's dev set;
  train.jsonl  {"text_a": question, "text_b": paragraph, "label": "1" | "0"} from the first 400
               questions of xquad_en's train.jsonl: each with its paragraph, and with the paragraph
               after it in file order ("0"), to train a pair classifier as a reranker.
Deterministic: re-running gives the same bytes.
"""
import hashlib
import json
import os

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SOURCE = os.path.join(ROOT, "data", "xquad_en")
OUT = os.path.join(ROOT, "data", "xquad_en_ranking")
CANDIDATES = 8


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")


def key(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def paragraphs_of(rows):
    """The distinct paragraphs in order of first appearance (grouped by article, as the file is)."""
    out = []
    for r in rows:
        if r["context"] not in out:
            out.append(r["context"])
    return out


def main():
    dev = read_jsonl(os.path.join(SOURCE, "dev.jsonl"))
    train = read_jsonl(os.path.join(SOURCE, "train.jsonl"))
    os.makedirs(OUT, exist_ok=True)
    paragraphs = paragraphs_of(dev)
    ranking = []
    for r in dev[::2]:
        start = paragraphs.index(r["context"])
        negatives = [paragraphs[(start + k) % len(paragraphs)] for k in range(1, CANDIDATES)]
        texts = sorted([r["context"]] + negatives, key=lambda p: key(r["id"] + p))
        ranking.append({"query": r["question"], "texts": texts,
                        "labels": [1 if p == r["context"] else 0 for p in texts]})
    write_jsonl(os.path.join(OUT, "dev.jsonl"), ranking)
    dev_pairs = []
    for r in dev[::2]:
        negative = paragraphs[(paragraphs.index(r["context"]) + 1) % len(paragraphs)]
        dev_pairs.append({"text_a": r["question"], "text_b": r["context"], "label": "1"})
        dev_pairs.append({"text_a": r["question"], "text_b": negative, "label": "0"})
    write_jsonl(os.path.join(OUT, "dev_pairs.jsonl"), dev_pairs)
    paragraphs = paragraphs_of(train)
    pairs = []
    for r in train[:400]:
        negative = paragraphs[(paragraphs.index(r["context"]) + 1) % len(paragraphs)]
        pairs.append({"text_a": r["question"], "text_b": r["context"], "label": "1"})
        pairs.append({"text_a": r["question"], "text_b": negative, "label": "0"})
    write_jsonl(os.path.join(OUT, "train.jsonl"), pairs)
    print(f"{OUT}: dev.jsonl {len(ranking)} queries x {CANDIDATES} texts, dev_pairs.jsonl {len(dev_pairs)} pairs, "
          f"train.jsonl {len(pairs)} pairs")


if __name__ == "__main__":
    main()
