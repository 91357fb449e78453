"""HF reads a model directory unif wrote: AutoTokenizer and AutoModelForSequenceClassification load it
(the family's own classes, from config.json's model_type) and give the logits `unif predict` gave.

    python check_hf_family.py MODEL_DIR PREDICTIONS_JSONL [TEXT_FIELD]

PREDICTIONS_JSONL is `unif predict`'s output ({"input": {...}, "label", "logits", ...} per line).
Exit 0 when every logit agrees within 1e-4 and the predicted labels are equal; 1 otherwise.
Needs torch and transformers (tests skip it where they are not installed).
"""
import json
import sys

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer


def main():
    model_dir, predictions = sys.argv[1], sys.argv[2]
    field = sys.argv[3] if len(sys.argv) > 3 else "text"
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    worst, bad = 0.0, 0
    lines = [json.loads(l) for l in open(predictions, encoding="utf-8") if l.strip()]
    for line in lines:
        enc = tok(line["input"][field], return_tensors="pt", truncation=True,
                  max_length=tok.model_max_length)
        with torch.no_grad():
            logits = model(**enc).logits[0]
        diff = (logits - torch.tensor(line["logits"])).abs().max().item()
        worst = max(worst, diff)
        label = model.config.id2label[int(logits.argmax())]
        if label != line["label"]:
            bad += 1
    print("%s: %s (%s), %d texts, max |logit diff| %.3g, %d labels differ" % (
        model_dir, type(model).__name__, type(tok).__name__, len(lines), worst, bad))
    sys.exit(0 if worst < 1e-4 and bad == 0 and lines else 1)


if __name__ == "__main__":
    main()
