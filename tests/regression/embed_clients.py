"""The official Python clients against `unif serve` on an embedding model: OpenAI's (`openai`,
POST /v1/embeddings, its default base64 encoding and float) and Hugging Face's InferenceClient
(`huggingface_hub`, the text-embeddings-inference route). Each must give the embeddings `unif embed`
wrote (L2-normalized, as both APIs answer), to float32 precision.

Usage: embed_clients.py PORT REFERENCE_JSONL TEXTS_JSON
"""
import json
import sys

import numpy as np
from huggingface_hub import InferenceClient
from openai import OpenAI

port, reference_path, texts_path = sys.argv[1], sys.argv[2], sys.argv[3]
texts = json.load(open(texts_path, encoding="utf-8"))
ref = np.array([json.loads(l)["embedding"] for l in open(reference_path, encoding="utf-8")], dtype=np.float64)
unit = ref / np.linalg.norm(ref, axis=1, keepdims=True)
failures = 0


def check(name, got, want, atol=1e-5):
    global failures
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape or not np.allclose(got, want, atol=atol, rtol=0):
        failures += 1
        print(f"FAIL: {name}: shape {got.shape} vs {want.shape}, max diff "
              f"{np.abs(got - want).max() if got.shape == want.shape else 'n/a'}")
    else:
        print(f"ok: {name}")


client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused")
r = client.embeddings.create(model="tiny", input=texts)  # the client asks for base64 and decodes it
check("openai embeddings.create (base64 on the wire)", [d.embedding for d in r.data], unit)
r = client.embeddings.create(model="tiny", input=texts, encoding_format="float")
check("openai embeddings.create (float)", [d.embedding for d in r.data], unit)
if r.model != "tiny" or r.usage.prompt_tokens <= len(texts) or r.usage.total_tokens != r.usage.prompt_tokens:
    failures += 1
    print(f"FAIL: openai model/usage: {r.model} {r.usage}")
r = client.embeddings.create(model="tiny", input=texts[0], dimensions=8, encoding_format="float")
cut = ref[:1, :8] / np.linalg.norm(ref[:1, :8], axis=1, keepdims=True)
check("openai dimensions=8", [d.embedding for d in r.data], cut)

hf = InferenceClient(model=f"http://127.0.0.1:{port}")
check("huggingface_hub feature_extraction (list)", hf.feature_extraction(texts), unit)
check("huggingface_hub feature_extraction (one text)", hf.feature_extraction(texts[0]), unit[:1])
check("huggingface_hub feature_extraction normalize=False", hf.feature_extraction(texts, normalize=False), ref)
sys.exit(1 if failures else 0)
