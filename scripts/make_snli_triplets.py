#!/usr/bin/env python3
"""Builds data/snli_en/triplets.jsonl from data/snli_en/train.jsonl: for every premise with an
entailment and a contradiction hypothesis, one record {"text_a": premise, "text_b": entailment,
"text_neg": contradiction} (the first of each, in file order): (anchor, positive, hard negative)
for in-batch-negative losses, as sentence-transformers' NLI training data is built. Stdlib only.

Usage: python3 scripts/make_snli_triplets.py  (from the repository root; rewrites the file)
"""
import json
from collections import OrderedDict

SOURCE = "data/snli_en/train.jsonl"
TARGET = "data/snli_en/triplets.jsonl"


def main():
    by_premise = OrderedDict()
    with open(SOURCE, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            by_premise.setdefault(r["text_a"], {}).setdefault(r["label"], r["text_b"])
    n = 0
    with open(TARGET, "w", encoding="utf-8") as out:
        for premise, hyps in by_premise.items():
            if "entailment" in hyps and "contradiction" in hyps:
                out.write(json.dumps({"text_a": premise, "text_b": hyps["entailment"],
                                      "text_neg": hyps["contradiction"]}, ensure_ascii=False) + "\n")
                n += 1
    print(f"{TARGET}: {n} triplets from {len(by_premise)} premises")


if __name__ == "__main__":
    main()
