"""HF reads a model directory unif wrote: AutoTokenizer and AutoModelForSequenceClassification load it
(the family's own classes, from config.json's model_type) and give the logits `unif predict` gave.

    python check_hf_family.py MODEL_DIR PREDICTIONS_JSONL [MODEL_DIR PREDICTIONS_JSONL ...]

PREDICTIONS_JSONL is `unif predict`'s output ({"input": {"text": ...}, "label", "logits", ...} per
line). One process checks every directory given (torch and transformers are imported once): a line
"ok MODEL_DIR: ..." or "FAIL MODEL_DIR: ..." each. Exit 0 when, for every directory, every logit agrees
within 1e-4 and the predicted labels are equal; 1 otherwise.
Needs torch and transformers (tests skip it where they are not installed).
"""
import json
import sys

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer


def check(model_dir, predictions, field="text"):
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
    good = worst < 1e-4 and bad == 0 and bool(lines)
    print("%s %s: %s (%s), %d texts, max |logit diff| %.3g, %d labels differ" % (
        "ok" if good else "FAIL", model_dir, type(model).__name__, type(tok).__name__, len(lines), worst, bad))
    return good


def main():
    args = sys.argv[1:]
    if not args or len(args) % 2:
        sys.exit("usage: check_hf_family.py MODEL_DIR PREDICTIONS_JSONL [MODEL_DIR PREDICTIONS_JSONL ...]")
    results = []
    for i in range(0, len(args), 2):
        try:
            results.append(check(args[i], args[i + 1]))
        except Exception as e:  # one directory HF cannot read: say so, check the others
            print("FAIL %s: %s: %s" % (args[i], type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
            results.append(False)
    sys.stdout.flush()
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
