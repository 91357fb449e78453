"""HuggingFace transformers' run_qa.py recipe for SQuAD 2.0 (--version_2_with_negative) on a unif
span_extraction config: the same JSONL data, model directory and hyperparameters as `unif train
CONFIG`, with HF's own preprocessing and post-processing (not a port of unif's; bench/hf_compare
has that one).

From examples/pytorch/question-answering (run_qa.py, utils_qa.py), transformers 4.30:
- prepare_train_features: questions left-stripped; the fast tokenizer on (question, context) with
  truncation="only_second", max_length = model.max_seq_length (at most the tokenizer's
  model_max_length), stride = span.doc_stride (HF's stride is the overlap between windows, unif's
  doc_stride the step), return_overflowing_tokens, return_offsets_mapping, padding="max_length";
  the question is never cut (unif cuts it to span.max_query_length). A window is labelled with the
  first answer's first and last token when the answer lies wholly inside its context, else [CLS];
  an unanswerable question ("answers": []) is labelled [CLS] in every window.
- prepare_validation_features: the same windows; offsets outside the context set to None.
- postprocess_qa_predictions(version_2_with_negative=True, n_best_size, max_answer_length,
  null_score_diff_threshold from span.*): the null score is the least [CLS] start + end over the
  question's windows; the answer is '' when null score - best span's score > the threshold.
- training as Trainer does by default: AdamW (transformers' AdamW, Trainer's "adamw_hf"), no weight
  decay on biases and LayerNorm weights, a linear schedule with ceil(warmup_ratio * steps) warm-up
  steps, global-norm clipping at max_grad_norm, a RandomSampler, no dropped last batch, the model
  initialised after set_seed(seed). Trainer itself needs accelerate, which this venv lacks; the
  loop below does its steps. Hyperparameters are the unif config's, unif's defaults where the
  config leaves a key out (docs/spec.md section 8: weight_decay 0.01, betas (0.9, 0.999), eps 1e-6,
  max_grad_norm 1.0).
- evaluation once, after training, on data.dev: the official SQuAD 2.0 evaluation
  (squad_v2_eval.py): exact, f1, HasAns_*, NoAns_* from the answers, best_* from the null odds
  (run_qa passes no_answer_probability 0.0, which makes its best_* meaningless); per question by
  SQuAD's or CMRC 2018's scorer as unif's span.metric picks (auto: cmrc for Chinese contexts).

  python hf_run_qa.py CONFIG.yaml OUT_DIR [--set key=value ...]
  python hf_run_qa.py CONFIG.yaml OUT_DIR --eval-only MODEL_DIR   # run_qa's evaluation of a trained
                                                                  # model (unif's final/ included)

OUT_DIR gets metrics.json (the numbers as percentages, the window counts, train_s, eval_s),
predictions.json, null_odds.json and the trained model in final/ (`unif eval --model` reads it
once unif's final/unif.yaml is copied in: that one says the model may answer nothing). Training time counts the steps (collation, forward, backward,
clipping, optimizer), not tokenization or evaluation, as unif's train_s does.
"""
import argparse
import collections
import json
import math
import os
import random
import sys
import time

import numpy as np
import torch

# Debian's Torch 1.13 starts with 1 intra-op thread on some VMs (its cpuinfo sees no cores): HF gets
# every core this process may use, as unif does (HF_THREADS overrides).
torch.set_num_threads(int(os.environ.get("HF_THREADS", "0")) or len(os.sched_getaffinity(0)))
import yaml  # noqa: E402
from transformers import AutoModelForQuestionAnswering, AutoTokenizer, PreTrainedTokenizerFast  # noqa: E402
from transformers.optimization import AdamW, get_linear_schedule_with_warmup  # noqa: E402
from transformers.trainer_pt_utils import get_parameter_names  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import squad_v2_eval  # noqa: E402


def load_config(path, sets):
    with open(path, encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    for s in sets:
        key, _, value = s.partition("=")
        node = cfg
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = yaml.safe_load(value)
    return cfg


def expand(path):
    home = os.environ.get("UNIF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "unif")
    return os.path.expanduser(path.replace("$UNIF_HOME", home).replace("${UNIF_HOME}", home))


def read_records(path, fields, label_field):
    """JSONL records in HF datasets' column layout: answers {"text": [...], "answer_start": [...]}."""
    q_field, c_field = fields
    out = collections.OrderedDict((k, []) for k in ("id", "question", "context", "answers"))
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f):
            if not line.strip():
                continue
            r = json.loads(line)
            a = r.get(label_field)
            if isinstance(a, dict):
                a = {"text": list(a["text"]), "answer_start": list(a["answer_start"])}
            else:
                a = {"text": [x["text"] for x in a], "answer_start": [x["answer_start"] for x in a]}
            out["id"].append(str(r.get("id", n)))
            out["question"].append(r[q_field])
            out["context"].append(r[c_field])
            out["answers"].append(a)
    return out


def prepare_train_features(examples, tokenizer, max_seq_length, doc_stride):
    questions = [q.lstrip() for q in examples["question"]]
    tok = tokenizer(questions, examples["context"], truncation="only_second", max_length=max_seq_length,
                    stride=doc_stride, return_overflowing_tokens=True, return_offsets_mapping=True,
                    padding="max_length")
    sample_mapping = tok.pop("overflow_to_sample_mapping")
    offset_mapping = tok.pop("offset_mapping")
    tok["start_positions"], tok["end_positions"] = [], []
    for i, offsets in enumerate(offset_mapping):
        input_ids = tok["input_ids"][i]
        cls_index = input_ids.index(tokenizer.cls_token_id) if tokenizer.cls_token_id in input_ids else 0
        sequence_ids = tok.sequence_ids(i)
        answers = examples["answers"][sample_mapping[i]]
        if len(answers["answer_start"]) == 0:
            tok["start_positions"].append(cls_index)
            tok["end_positions"].append(cls_index)
            continue
        start_char = answers["answer_start"][0]
        end_char = start_char + len(answers["text"][0])
        token_start_index = 0
        while sequence_ids[token_start_index] != 1:
            token_start_index += 1
        token_end_index = len(input_ids) - 1
        while sequence_ids[token_end_index] != 1:
            token_end_index -= 1
        if not (offsets[token_start_index][0] <= start_char and offsets[token_end_index][1] >= end_char):
            tok["start_positions"].append(cls_index)
            tok["end_positions"].append(cls_index)
        else:
            while token_start_index < len(offsets) and offsets[token_start_index][0] <= start_char:
                token_start_index += 1
            tok["start_positions"].append(token_start_index - 1)
            while offsets[token_end_index][1] >= end_char:
                token_end_index -= 1
            tok["end_positions"].append(token_end_index + 1)
    return tok


def prepare_validation_features(examples, tokenizer, max_seq_length, doc_stride):
    questions = [q.lstrip() for q in examples["question"]]
    tok = tokenizer(questions, examples["context"], truncation="only_second", max_length=max_seq_length,
                    stride=doc_stride, return_overflowing_tokens=True, return_offsets_mapping=True,
                    padding="max_length")
    sample_mapping = tok.pop("overflow_to_sample_mapping")
    tok["example_id"] = []
    for i in range(len(tok["input_ids"])):
        sequence_ids = tok.sequence_ids(i)
        tok["example_id"].append(examples["id"][sample_mapping[i]])
        tok["offset_mapping"][i] = [(o if sequence_ids[k] == 1 else None)
                                    for k, o in enumerate(tok["offset_mapping"][i])]
    return tok


def postprocess_qa_predictions(examples, features, predictions, n_best_size, max_answer_length,
                               null_score_diff_threshold):
    """utils_qa.postprocess_qa_predictions with version_2_with_negative=True: (answers, null odds)."""
    all_start_logits, all_end_logits = predictions
    example_id_to_index = {k: i for i, k in enumerate(examples["id"])}
    features_per_example = collections.defaultdict(list)
    for i, ex_id in enumerate(features["example_id"]):
        features_per_example[example_id_to_index[ex_id]].append(i)
    all_predictions = collections.OrderedDict()
    scores_diff_json = collections.OrderedDict()
    for example_index, ex_id in enumerate(examples["id"]):
        min_null_prediction = None
        prelim_predictions = []
        for feature_index in features_per_example[example_index]:
            start_logits = all_start_logits[feature_index]
            end_logits = all_end_logits[feature_index]
            offset_mapping = features["offset_mapping"][feature_index]
            feature_null_score = start_logits[0] + end_logits[0]
            if min_null_prediction is None or min_null_prediction["score"] > feature_null_score:
                min_null_prediction = {"offsets": (0, 0), "score": feature_null_score,
                                       "start_logit": start_logits[0], "end_logit": end_logits[0]}
            start_indexes = np.argsort(start_logits)[-1: -n_best_size - 1: -1].tolist()
            end_indexes = np.argsort(end_logits)[-1: -n_best_size - 1: -1].tolist()
            for start_index in start_indexes:
                for end_index in end_indexes:
                    if (start_index >= len(offset_mapping) or end_index >= len(offset_mapping)
                            or offset_mapping[start_index] is None or offset_mapping[end_index] is None):
                        continue
                    if end_index < start_index or end_index - start_index + 1 > max_answer_length:
                        continue
                    prelim_predictions.append({
                        "offsets": (offset_mapping[start_index][0], offset_mapping[end_index][1]),
                        "score": start_logits[start_index] + end_logits[end_index],
                        "start_logit": start_logits[start_index], "end_logit": end_logits[end_index]})
        prelim_predictions.append(min_null_prediction)
        null_score = min_null_prediction["score"]
        predictions_ = sorted(prelim_predictions, key=lambda x: x["score"], reverse=True)[:n_best_size]
        if not any(p["offsets"] == (0, 0) for p in predictions_):
            predictions_.append(min_null_prediction)
        context = examples["context"][example_index]
        for pred in predictions_:
            offsets = pred.pop("offsets")
            pred["text"] = context[offsets[0]: offsets[1]]
        if len(predictions_) == 0 or (len(predictions_) == 1 and predictions_[0]["text"] == ""):
            predictions_.insert(0, {"text": "empty", "start_logit": 0.0, "end_logit": 0.0, "score": 0.0})
        i = 0
        while predictions_[i]["text"] == "":
            i += 1
        best_non_null_pred = predictions_[i]
        score_diff = null_score - best_non_null_pred["start_logit"] - best_non_null_pred["end_logit"]
        scores_diff_json[ex_id] = float(score_diff)
        all_predictions[ex_id] = "" if score_diff > null_score_diff_threshold else best_non_null_pred["text"]
    return all_predictions, scores_diff_json


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def uses_cmrc(metric, contexts):
    if metric in ("squad", "cmrc"):
        return metric == "cmrc"
    return any("\u4e00" <= c <= "\u9fff" for ctx in contexts for c in ctx)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("config")
    ap.add_argument("out_dir")
    ap.add_argument("--set", action="append", default=[], dest="sets", metavar="KEY=VALUE",
                    help="override a config key, as unif train --set does")
    ap.add_argument("--eval-only", metavar="MODEL_DIR", help="no training: evaluate this model directory")
    args = ap.parse_args()
    cfg = load_config(args.config, args.sets)
    model_cfg, data_cfg = cfg.get("model", {}), cfg.get("data", {})
    train_cfg, span_cfg = cfg.get("training", {}), cfg.get("span", {})
    opt_cfg, sched_cfg = train_cfg.get("optimizer", {}), train_cfg.get("schedule", {})
    if cfg.get("task") != "span_extraction":
        sys.exit("error: %s: task is not span_extraction" % args.config)
    if sched_cfg.get("name", "linear") != "linear" or opt_cfg.get("name", "adamw") != "adamw":
        sys.exit("error: run_qa's recipe is AdamW with a linear schedule")
    if span_cfg.get("verifier", False):
        print("note: span.verifier is unif's own; run_qa has none (HF side trains without it)", file=sys.stderr)
    seed = int(cfg.get("seed", 42))
    model_dir = expand(model_cfg["pretrained"])
    fields = data_cfg.get("text_fields", ["question", "context"])
    label_field = data_cfg.get("label_field", "answers")
    batch_size = int(train_cfg.get("batch_size", 32))
    epochs = int(train_cfg.get("epochs", 3))
    lr = float(opt_cfg.get("lr", 5e-5))
    weight_decay = float(opt_cfg.get("weight_decay", 0.01))
    betas = tuple(float(b) for b in opt_cfg.get("betas", [0.9, 0.999]))
    eps = float(opt_cfg.get("eps", 1e-6))
    warmup_ratio = float(sched_cfg.get("warmup_ratio", 0.1))
    max_grad_norm = float(train_cfg.get("max_grad_norm", 1.0))
    doc_stride = int(span_cfg.get("doc_stride", 128))
    n_best_size = int(span_cfg.get("n_best_size", 20))
    max_answer_length = int(span_cfg.get("max_answer_length", 30))
    threshold = float(span_cfg.get("null_score_diff_threshold", 0.0))
    eval_batch_size = int(train_cfg.get("eval_batch_size", 0)) or batch_size
    os.makedirs(args.out_dir, exist_ok=True)

    set_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, use_fast=True)
    if not isinstance(tokenizer, PreTrainedTokenizerFast):
        sys.exit("error: run_qa needs a fast tokenizer")
    if "do_lower_case" in model_cfg and hasattr(tokenizer, "do_lower_case") \
            and bool(model_cfg["do_lower_case"]) != tokenizer.do_lower_case:
        sys.exit("error: model.do_lower_case differs from the tokenizer's")
    model = AutoModelForQuestionAnswering.from_pretrained(args.eval_only or model_dir)
    max_seq_length = min(int(model_cfg.get("max_seq_length", 128)), tokenizer.model_max_length)

    train_ex = read_records(data_cfg["train"], fields, label_field)
    dev_ex = read_records(data_cfg["dev"], fields, label_field)
    train_f = prepare_train_features(train_ex, tokenizer, max_seq_length, doc_stride)
    dev_f = prepare_validation_features(dev_ex, tokenizer, max_seq_length, doc_stride)
    cols = ["input_ids", "token_type_ids", "attention_mask", "start_positions", "end_positions"]
    train_t = {k: torch.tensor(train_f[k], dtype=torch.long) for k in cols}
    n_train = train_t["input_ids"].shape[0]
    n_cls = int(sum(1 for s in train_f["start_positions"] if s == 0))

    decay = [n for n in get_parameter_names(model, [torch.nn.LayerNorm]) if "bias" not in n]
    groups = [
        {"params": [p for n, p in model.named_parameters() if n in decay and p.requires_grad],
         "weight_decay": weight_decay},
        {"params": [p for n, p in model.named_parameters() if n not in decay and p.requires_grad],
         "weight_decay": 0.0},
    ]
    optimizer = AdamW(groups, lr=lr, betas=betas, eps=eps, no_deprecation_warning=True)
    steps_per_epoch = max(1, math.ceil(n_train / batch_size))
    total_steps = 0 if args.eval_only else steps_per_epoch * epochs
    warmup = math.ceil(warmup_ratio * total_steps)
    scheduler = get_linear_schedule_with_warmup(optimizer, warmup, total_steps)
    # Trainer's RandomSampler: a generator seeded from the seeded global RNG.
    generator = torch.Generator()
    generator.manual_seed(int(torch.empty((), dtype=torch.int64).random_().item()))
    print("hf run_qa: %d train questions -> %d windows (%d labelled [CLS]), %d dev questions -> %d windows; "
          "max_seq_length %d, stride (overlap) %d; %d steps, %d warm-up, %d threads"
          % (len(train_ex["id"]), n_train, n_cls, len(dev_ex["id"]), len(dev_f["input_ids"]), max_seq_length,
             doc_stride, total_steps, warmup, torch.get_num_threads()), file=sys.stderr, flush=True)

    model.train()
    step, t0, losses = 0, time.time(), []
    log_every = int(train_cfg.get("log_every", 10)) or 10
    for epoch in range(epochs if total_steps else 0):
        order = torch.randperm(n_train, generator=generator).tolist()
        for b in range(0, n_train, batch_size):
            idx = torch.tensor(order[b: b + batch_size])
            out = model(**{k: v[idx] for k, v in train_t.items()})
            out.loss.backward()
            if max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            step += 1
            losses.append(out.loss.item())
            if step % log_every == 0 or step == total_steps:
                print("step %d/%d epoch %.2f loss %.4f lr %.3g %.0fs" % (
                    step, total_steps, step / steps_per_epoch, float(np.mean(losses[-log_every:])),
                    scheduler.get_last_lr()[0], time.time() - t0), file=sys.stderr, flush=True)
    train_s = time.time() - t0

    t1 = time.time()
    model.eval()
    starts, ends = [], []
    dev_t = {k: torch.tensor(dev_f[k], dtype=torch.long) for k in ("input_ids", "token_type_ids", "attention_mask")}
    with torch.no_grad():
        for b in range(0, dev_t["input_ids"].shape[0], eval_batch_size):
            out = model(**{k: v[b: b + eval_batch_size] for k, v in dev_t.items()})
            starts.append(out.start_logits.numpy())
            ends.append(out.end_logits.numpy())
    preds, odds = postprocess_qa_predictions(dev_ex, dev_f, (np.concatenate(starts), np.concatenate(ends)),
                                             n_best_size, max_answer_length, threshold)
    golds = collections.OrderedDict((i, a["text"]) for i, a in zip(dev_ex["id"], dev_ex["answers"]))
    scorer = "cmrc" if uses_cmrc(span_cfg.get("metric", "auto"), dev_ex["context"]) else "squad"
    metrics = squad_v2_eval.evaluate(golds, preds, odds, scorer)
    eval_s = time.time() - t1
    result = dict(metrics, scorer=scorer, seed=seed, train_windows=n_train, train_windows_cls=n_cls,
                  dev_windows=len(dev_f["input_ids"]), steps=total_steps, train_s=train_s, eval_s=eval_s,
                  final_loss=float(np.mean(losses[-log_every:])) if losses else None)
    if not args.eval_only:
        model.save_pretrained(os.path.join(args.out_dir, "final"))
        tokenizer.save_pretrained(os.path.join(args.out_dir, "final"))
    with open(os.path.join(args.out_dir, "metrics.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(args.out_dir, "predictions.json"), "w", encoding="utf-8") as f:
        json.dump(preds, f, ensure_ascii=False, indent=1)
    with open(os.path.join(args.out_dir, "null_odds.json"), "w") as f:
        json.dump(odds, f, indent=1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
