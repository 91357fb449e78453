"""HF tokenizer throughput for bench/hf_compare: tokenizers' BertWordPieceTokenizer (Rust) on the same
vocab.txt, lower-casing, no special tokens; checks its ids against `unif tokenize`'s output first.
RAYON_RS_NUM_CPUS=1 (set by the caller) makes encode_batch single-threaded.

  python hf_tokenize.py VOCAB TEXTS.txt UNIF_TOKENIZE.jsonl REPEAT OUT.json
"""
import json
import sys
import time

from tokenizers import BertWordPieceTokenizer

vocab, texts_path, unif_path, repeat, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
texts = [x.rstrip("\n") for x in open(texts_path, encoding="utf-8")]
tok = BertWordPieceTokenizer(vocab, lowercase=True)
encs = tok.encode_batch(texts, add_special_tokens=False)
unif = [json.loads(x)["ids"] for x in open(unif_path, encoding="utf-8")]
same, first = 0, ""
for t, e, u in zip(texts, encs, unif):
    if e.ids == u:
        same += 1
    elif not first:
        first = json.dumps({"text": t, "hf": e.tokens, "unif_ids": u, "hf_ids": e.ids}, ensure_ascii=False)[:600]
tokens = 0
t0 = time.perf_counter()
for _ in range(repeat):
    tokens += sum(len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False))
s = time.perf_counter() - t0
json.dump({"texts": len(texts), "same": same, "first_diff": first, "lines_per_s": len(texts) * repeat / s,
           "tokens_per_s": tokens / s, "seconds": s}, open(out, "w"))
