#!/usr/bin/env python3
"""Builds the bundled retrieval sample data/xquad_en_retrieval from data/xquad_en: each question of
xquad_en's dev.jsonl is a query whose one relevant document is the paragraph it was asked on; the
corpus is every distinct paragraph of dev.jsonl and train.jsonl (the train paragraphs are
distractors from other articles).

  python3 scripts/make_retrieval_sample.py          (from the repository root; Python stdlib only)

Writes data/xquad_en_retrieval/queries.jsonl ({"id", "text", "relevant": [corpus id]}, the SQuAD
question ids, in dev.jsonl's order) and corpus.jsonl ({"id", "text"}, ids p000.., paragraphs in
order of first appearance, dev.jsonl's first). Deterministic: re-running gives the same bytes.
"""
import json
import os

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SOURCE = os.path.join(ROOT, "data", "xquad_en")
OUT = os.path.join(ROOT, "data", "xquad_en_retrieval")


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")


def main():
    dev = read_jsonl(os.path.join(SOURCE, "dev.jsonl"))
    train = read_jsonl(os.path.join(SOURCE, "train.jsonl"))
    paragraph_id = {}
    corpus = []
    for row in dev + train:
        if row["context"] not in paragraph_id:
            paragraph_id[row["context"]] = f"p{len(corpus):03d}"
            corpus.append({"id": paragraph_id[row["context"]], "text": row["context"]})
    dev_paragraphs = {row["context"] for row in dev}
    assert not dev_paragraphs & {row["context"] for row in train}, "a paragraph is in both splits"
    queries = []
    seen = set()
    for row in dev:
        assert row["id"] not in seen, row["id"]
        seen.add(row["id"])
        queries.append({"id": row["id"], "text": row["question"], "relevant": [paragraph_id[row["context"]]]})
    os.makedirs(OUT, exist_ok=True)
    write_jsonl(os.path.join(OUT, "queries.jsonl"), queries)
    write_jsonl(os.path.join(OUT, "corpus.jsonl"), corpus)
    print(f"{len(queries)} queries, {len(corpus)} documents ({len(dev_paragraphs)} from dev.jsonl) -> {OUT}")


if __name__ == "__main__":
    main()
