"""HF reads unif's masked_lm output: BertForMaskedLM.from_pretrained(DIR) loads a unif masked_lm
model directory with nothing missing but HF's tied decoder keys, and computes the same MLM loss on
held-out texts as `unif eval` (unif's fixed evaluation masks, restated here: framework/data/mlm.cpp).

Needs transformers (not part of the build or CI):
    python3 -m venv --system-site-packages .cache/hfvenv && .cache/hfvenv/bin/pip install transformers==4.30.2
    build/bin/unif train CONFIG.yaml                       # task: masked_lm
    build/bin/unif eval CONFIG.yaml --model DIR            # prints {"loss": ..., "perplexity": ...}
    .cache/hfvenv/bin/python tests/pretrained/check_hf_mlm.py DIR DEV_FILE TEXT_FIELD SEED MLM_PROBABILITY MAX_SEQ_LENGTH UNIF_EVAL_LOSS
Exit 0 when the losses agree within 1e-5 (relative).
"""
import json
import sys

import torch
from transformers import BertForMaskedLM, BertTokenizer

M64 = (1 << 64) - 1


class Stream:  # SplitMix64, as framework/data/mlm.cpp
    def __init__(self, state):
        self.state = state & M64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next() >> 11) * (1.0 / 9007199254740992.0)


def stream_for(seed, epoch, index):
    s = Stream((seed * 0x9E3779B97F4A7C15) ^ 0x4D4C4D61736B73)
    v = s.next()
    s.state ^= (v + (epoch & M64) * 0xD1B54A32D192ED03) & M64
    v = s.next()
    s.state ^= (v + index * 0x8CB92BA72F3D8DD7) & M64
    s.next()
    return s


def main():
    model_dir, dev, field, seed, p, max_len, unif_loss = sys.argv[1:8]
    seed, p, max_len, unif_loss = int(seed), float(p), int(max_len), float(unif_loss)
    model, info = BertForMaskedLM.from_pretrained(model_dir, output_loading_info=True)
    print("loading info:", info)
    bad = [k for k in info["missing_keys"] if not k.startswith("cls.predictions.decoder.")]
    assert not bad and not info["unexpected_keys"], info
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    model.eval()
    tok = BertTokenizer(model_dir + "/vocab.txt", do_lower_case=True)
    vocab_size = len(tok.vocab)
    texts = []
    with open(dev, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            texts.append(json.loads(line)[field] if not dev.endswith(".txt") else line.rstrip("\n"))
    total, count = 0.0, 0
    for i, text in enumerate(texts):
        ids = tok.convert_tokens_to_ids(tok.tokenize(text)[: max_len - 2])
        ids = [tok.cls_token_id] + ids + [tok.sep_token_id]
        rng = stream_for(seed, -1, i)
        selected = [0 < q < len(ids) - 1 and rng.uniform() < p for q in range(len(ids))]
        inputs, labels = list(ids), [-100] * len(ids)
        for q in range(len(ids)):
            if not selected[q]:
                continue
            labels[q] = ids[q]
            if rng.uniform() < 0.8:
                inputs[q] = tok.mask_token_id
            elif rng.uniform() < 0.5:
                inputs[q] = rng.next() % vocab_size
        n = sum(l != -100 for l in labels)
        if n == 0:
            continue
        with torch.no_grad():
            out = model(input_ids=torch.tensor([inputs]), labels=torch.tensor([labels]))
        total += out.loss.item() * n
        count += n
    hf_loss = total / count
    print(f"HF loss {hf_loss:.7f} over {count} masked tokens; unif eval loss {unif_loss:.7f}")
    sys.exit(0 if abs(hf_loss - unif_loss) <= 1e-5 * abs(unif_loss) + 1e-6 else 1)


if __name__ == "__main__":
    main()
