"""The HuggingFace side of bench/hf_compare: one unif run config (the fully resolved config.yaml a
`unif train` run wrote) trained with HF transformers on PyTorch, as unif trains it:

- model: BertForSequenceClassification (classification, regression) / BertForTokenClassification /
  BertForQuestionAnswering (span_extraction) from model.pretrained (another family's directory: its
  AutoModelFor... class and AutoTokenizer), the new head initialised by HF
  after torch.manual_seed(seed); without model.pretrained, a random-init BertConfig(**model.bert)
  (vocab_size from model.vocab) initialised by HF after torch.manual_seed(seed);
- span_extraction: unif's windows (framework/data/span_dataset.cpp, ported below: the question cut
  to span.max_query_length pieces, context windows doc_stride pieces apart, the label the first
  answer's pieces or [CLS]) and decoding (framework/data/span_decoding.cpp: n_best start/end pairs
  in the context, at most max_answer_length pieces, ranked over windows), SQuAD v1.1 EM / F1;
- data: BertTokenizerFast from the same directory (do_lower_case from the config), the same
  max_seq_length and truncation, dynamic padding to the longest example of each batch, and the same
  example order (unif's epoch_order / length_grouped_order, framework/data/batching.cpp, ported
  below: SplitMix64 streams of (seed, epoch));
- optimizer: torch.optim.AdamW with unif's parameter groups (no weight decay for names holding
  "bias" or "LayerNorm.weight", framework/train/optimizer.cpp), lr, betas, eps; the linear / cosine /
  constant schedule with warm-up of framework/train/schedule.cpp as a LambdaLR; global-norm
  clipping at training.max_grad_norm;
- evaluation once, after the last step, on data.dev (main metric as unif: accuracy / pearson / f1).

HF_SAVE_INIT=DIR saves the initial weights (pretrained encoder + the new head) to DIR and stops
(bench/hf_compare/same_init.sh). The result JSON holds every step's loss.

Training time counts collation, forward, backward, clipping and the optimizer step of every step
(not the evaluation, loading or tokenization), as unif's train_s does.

  python hf_train.py RESOLVED_CONFIG.yaml OUT.json
"""
import collections
import json
import math
import os
import re
import string
import sys
import time
import unicodedata

import numpy as np
import torch

# Debian's Torch 1.13 starts with 1 intra-op thread on some VMs (its cpuinfo sees no cores): HF gets
# every core this process may use, as unif does (HF_THREADS overrides).
torch.set_num_threads(int(os.environ.get("HF_THREADS", "0")) or len(os.sched_getaffinity(0)))
import yaml
from transformers import (AutoModelForQuestionAnswering, AutoModelForSequenceClassification,
                          AutoModelForTokenClassification, AutoTokenizer, BertConfig, BertForQuestionAnswering,
                          BertForSequenceClassification, BertForTokenClassification, BertTokenizerFast)

MASK64 = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def epoch_order(n, seed, epoch, shuffle):
    order = list(range(n))
    if not shuffle:
        return order
    state = ((seed * 0x9E3779B97F4A7C15) & MASK64) ^ ((epoch + 0x632BE59BD9B4E019) & MASK64)
    for i in range(n - 1, 0, -1):
        state, r = splitmix64(state)
        j = r % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def length_grouped_order(lengths, batch_size, seed, epoch):
    n = len(lengths)
    order = epoch_order(n, seed, epoch, True)
    if n == 0 or batch_size <= 0:
        return order
    mega = 50 * batch_size
    for start in range(0, n, mega):
        order[start:start + mega] = sorted(order[start:start + mega], key=lambda i: -lengths[i])  # stable
    full = n // batch_size
    batches = list(range(full))
    state = (((seed + 0xD1B54A32D192ED03) & MASK64) * 0x9E3779B97F4A7C15 & MASK64) ^ ((epoch * 0xBF58476D1CE4E5B9) & MASK64)
    for i in range(full - 1, 0, -1):
        state, r = splitmix64(state)
        j = r % (i + 1)
        batches[i], batches[j] = batches[j], batches[i]
    longest = 0
    for k in range(1, full):
        if lengths[order[batches[k] * batch_size]] > lengths[order[batches[longest] * batch_size]]:
            longest = k
    if full > 0:
        batches[0], batches[longest] = batches[longest], batches[0]
    out = []
    for b in batches:
        out.extend(order[b * batch_size:(b + 1) * batch_size])
    out.extend(order[full * batch_size:])
    return out


def multiplier(name, warmup, total, step):
    if step < warmup:
        return step / max(1, warmup)
    if name == "constant":
        return 1.0
    progress = (step - warmup) / max(1, total - warmup)
    if name == "linear":
        return max(0.0, 1.0 - progress)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))


def param_groups(model, weight_decay):
    """unif's AdamW groups (framework/train/optimizer.h): no decay for biases and LayerNorm weights."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if "bias" in name or "LayerNorm.weight" in name else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def rankdata(x):
    """Average ranks (ties share the mean rank), as scipy.stats.rankdata."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and x[order[j + 1]] == x[order[i]]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1
        i = j + 1
    return ranks


def pearson(x, y):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    x, y = x - x.mean(), y - y.mean()
    d = math.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / d) if d > 0 else 0.0


def entities(tags):
    """BIO chunks (type, start, end) as seqeval's default (conlleval) mode reads them."""
    out, start, kind = [], None, None
    for i, t in enumerate(list(tags) + ["O"]):
        prefix, _, k = t.partition("-") if t != "O" else ("O", "", "")
        ends = start is not None and (prefix in ("B", "O") or (prefix == "I" and k != kind))
        if ends:
            out.append((kind, start, i))
            start, kind = None, None
        if prefix == "B" or (prefix == "I" and start is None):
            start, kind = i, k
    return out


def entity_f1(gold, pred):
    tp = n_pred = n_gold = 0
    for g, p in zip(gold, pred):
        ge, pe = set(entities(g)), set(entities(p))
        tp += len(ge & pe)
        n_pred += len(pe)
        n_gold += len(ge)
    prec = tp / n_pred if n_pred else 0.0
    rec = tp / n_gold if n_gold else 0.0
    return 2 * prec * rec / (prec + rec) if prec + rec else 0.0


def pad_inputs(data, idx):
    """input_ids, token_type_ids, attention_mask of examples idx, padded to the longest (dynamic padding)."""
    L = max(len(data.ids[i]) for i in idx)
    ids = torch.full((len(idx), L), getattr(data, "pad_id", 0), dtype=torch.long)
    types = torch.zeros(len(idx), L, dtype=torch.long)
    mask = torch.zeros(len(idx), L, dtype=torch.long)
    for b, i in enumerate(idx):
        n = len(data.ids[i])
        ids[b, :n] = torch.tensor(data.ids[i])
        types[b, :n] = torch.tensor(data.types[i])
        mask[b, :n] = 1
    return ids, types, mask


class Data:
    """Encoded examples of one split: input_ids / token_type_ids lists, labels per task."""

    def __init__(self, cfg, tokenizer, path, labels):
        task, d = cfg["task"], cfg["data"]
        fields = d["text_fields"]
        rows = read_jsonl(path)
        max_len = int(cfg["model"]["max_seq_length"])
        self.ids, self.types, self.labels, self.gold_tags = [], [], [], []
        self.pad_id = tokenizer.pad_token_id or 0
        # Families whose tokenizer gives no token types (RoBERTa, DistilBERT, ...) get none.
        self.has_types = "token_type_ids" in tokenizer.model_input_names
        if task == "token_classification":
            words = [r[fields[0]] for r in rows]
            enc = tokenizer(words, is_split_into_words=True, truncation=True, max_length=max_len)
            for k, r in enumerate(rows):
                tags = r[d["label_field"]]
                self.gold_tags.append(tags)
                wid = enc.word_ids(k)
                lab, prev = [], None
                for w in wid:
                    lab.append(-100 if w is None or w == prev else labels.index(tags[w]))
                    prev = w
                self.labels.append(lab)
                self.ids.append(enc["input_ids"][k])
                self.types.append(enc["token_type_ids"][k] if self.has_types else [0] * len(enc["input_ids"][k]))
            self.word_ids = [enc.word_ids(k) for k in range(len(rows))]
            return
        a = [str(r[fields[0]]) for r in rows]
        if len(fields) > 1:
            enc = tokenizer(a, [str(r[fields[1]]) for r in rows], truncation="longest_first", max_length=max_len)
        else:
            enc = tokenizer(a, truncation=True, max_length=max_len)
        self.ids = enc["input_ids"]
        self.types = enc["token_type_ids"] if self.has_types else [[0] * len(x) for x in self.ids]
        for r in rows:
            v = r[d["label_field"]]
            self.labels.append(float(v) if task == "regression" else labels.index(str(v)))

    def __len__(self):
        return len(self.ids)

    def batch(self, idx, task):
        ids, types, mask = pad_inputs(self, idx)
        L = ids.size(1)
        if task == "token_classification":
            labels = torch.full((len(idx), L), -100, dtype=torch.long)
            for b, i in enumerate(idx):
                labels[b, :len(self.labels[i])] = torch.tensor(self.labels[i])
        elif task == "regression":
            labels = torch.tensor([self.labels[i] for i in idx], dtype=torch.float32)
        else:
            labels = torch.tensor([self.labels[i] for i in idx], dtype=torch.long)
        if not self.has_types:
            return dict(input_ids=ids, attention_mask=mask, labels=labels)
        return dict(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=labels)


class SpanData:
    """span_extraction windows of one split, as framework/data/span_dataset.cpp builds them."""

    def __init__(self, cfg, tokenizer, path):
        d, sp = cfg["data"], cfg.get("span", {})
        qf, cf = d["text_fields"][0], d["text_fields"][1]
        max_len = int(cfg["model"]["max_seq_length"])
        max_q, stride = int(sp.get("max_query_length", 64)), int(sp.get("doc_stride", 128))
        cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
        self.contexts, self.golds = [], []
        self.ids, self.types, self.starts, self.ends, self.spans, self.example = [], [], [], [], [], []
        for i, r in enumerate(read_jsonl(path)):
            ctx = str(r[cf])
            answers = r.get(d["label_field"]) or []
            if isinstance(answers, dict):  # HF datasets' column form
                answers = [{"text": t, "answer_start": s} for t, s in zip(answers["text"], answers["answer_start"])]
            self.contexts.append(ctx)
            self.golds.append([a["text"] for a in answers])
            q = tokenizer(str(r[qf]), add_special_tokens=False)["input_ids"]
            c = tokenizer(ctx, add_special_tokens=False, return_offsets_mapping=True)
            c_ids, offs = c["input_ids"], [list(o) for o in c["offset_mapping"]]
            for j in range(len(offs)):  # a piece's span runs over the combining marks after it
                nxt = offs[j + 1][0] if j + 1 < len(offs) else len(ctx)
                while offs[j][1] < nxt and unicodedata.category(ctx[offs[j][1]]) == "Mn":
                    offs[j][1] += 1
            q_len = min(len(q), max_q, max_len - 4)
            room, n = max_len - q_len - 3, len(c_ids)
            ts = te = -1
            if answers:
                s0 = int(answers[0]["answer_start"])
                e0 = s0 + len(answers[0]["text"])
                for j in range(n):
                    if ts < 0 and offs[j][1] > s0:
                        ts = j
                    if offs[j][0] < e0:
                        te = j
                if ts < 0 or te < ts:
                    ts = te = -1
            w = 0
            while True:
                ln = min(room, n - w)
                ids = [cls] + q[:q_len] + [sep]
                first = len(ids)
                ids += c_ids[w:w + ln] + [sep]
                self.ids.append(ids)
                self.types.append([0] * first + [1] * (ln + 1))
                self.spans.append([None] * first + [tuple(o) for o in offs[w:w + ln]] + [None])
                inside = ts >= w and te < w + ln
                self.starts.append(first + ts - w if inside else 0)
                self.ends.append(first + te - w if inside else 0)
                self.example.append(i)
                if w + ln >= n:
                    break
                w += min(ln, stride)

    def __len__(self):
        return len(self.ids)

    def batch(self, idx, task):
        ids, types, mask = pad_inputs(self, idx)
        return dict(input_ids=ids, token_type_ids=types, attention_mask=mask,
                    start_positions=torch.tensor([self.starts[i] for i in idx]),
                    end_positions=torch.tensor([self.ends[i] for i in idx]))


def top_positions(v, k):
    return sorted(range(len(v)), key=lambda a: (-v[a], a))[:k]


def decode_span(data, windows, logits, max_answer_length, n_best):
    """The best answer of one example (framework/data/span_decoding.cpp)."""
    raw = []
    for w, (sl, el) in zip(windows, logits):
        spans = data.spans[w]
        sl, el = sl[:len(spans)], el[:len(spans)]
        for s in top_positions(sl, n_best):
            if spans[s] is None:
                continue
            for e in top_positions(el, n_best):
                if spans[e] is None or e < s or e - s + 1 > max_answer_length:
                    continue
                raw.append((float(sl[s]) + float(el[e]), spans[s][0], spans[e][1]))
    if not raw:
        return ""
    best = max(raw, key=lambda x: x[0])  # the first of the highest (stable order)
    for x in raw:
        if x[0] == best[0]:
            best = x
            break
    return data.contexts[data.example[windows[0]]][best[1]:best[2]]


def squad_normalize(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return s.split()


def squad_f1(pred, gold):
    p, g = squad_normalize(pred), squad_normalize(gold)
    common = sum((collections.Counter(p) & collections.Counter(g)).values())
    if common == 0:
        return 0.0
    prec, rec = common / len(p), common / len(g)
    return 2 * prec * rec / (prec + rec)


def squad_metrics(preds, golds):
    em = f1 = 0.0
    for p, gs in zip(preds, golds):
        em += max([float(squad_normalize(p) == squad_normalize(g)) for g in gs] or [0.0])
        f1 += max([squad_f1(p, g) for g in gs] or [0.0])
    return {"exact_match": em / len(preds), "f1": f1 / len(preds)}


def evaluate_span(model, data, cfg):
    sp = cfg.get("span", {})
    model.eval()
    bs = int(cfg["training"]["batch_size"])
    logits = []
    with torch.inference_mode():
        for s in range(0, len(data), bs):
            idx = list(range(s, min(len(data), s + bs)))
            b = data.batch(idx, "span_extraction")
            b.pop("start_positions")
            b.pop("end_positions")
            out = model(**b)
            for k in range(len(idx)):
                logits.append((out.start_logits[k].tolist(), out.end_logits[k].tolist()))
    model.train()
    by_example = collections.defaultdict(list)
    for w, ex in enumerate(data.example):
        by_example[ex].append(w)
    preds = []
    for ex in range(len(data.contexts)):
        ws = by_example[ex]
        preds.append(decode_span(data, ws, [logits[w] for w in ws], int(sp.get("max_answer_length", 30)),
                                 int(sp.get("n_best_size", 20))))
    return squad_metrics(preds, data.golds)


def label_set(cfg, rows):
    if cfg["data"].get("labels"):
        return [str(x) for x in cfg["data"]["labels"]]
    if cfg["task"] == "regression":
        return []
    if cfg["task"] == "token_classification":
        return sorted({t for r in rows for t in r[cfg["data"]["label_field"]]})
    return sorted({str(r[cfg["data"]["label_field"]]) for r in rows})


def evaluate(model, data, cfg, labels):
    task = cfg["task"]
    model.eval()
    preds = []
    bs = int(cfg["training"]["batch_size"])
    with torch.inference_mode():
        for s in range(0, len(data), bs):
            idx = list(range(s, min(len(data), s + bs)))
            b = data.batch(idx, task)
            b.pop("labels")
            logits = model(**b).logits
            if task == "regression":
                preds.extend(logits[:, 0].tolist())
            elif task == "token_classification":
                am = logits.argmax(-1)
                for k, i in enumerate(idx):
                    tags, prev = [], None
                    for pos, w in enumerate(data.word_ids[i]):
                        if w is not None and w != prev:
                            tags.append(labels[int(am[k, pos])])
                        prev = w
                    gold = data.gold_tags[i]
                    preds.append(tags + ["O"] * (len(gold) - len(tags)))  # words cut by truncation: O
            else:
                preds.extend(logits.argmax(-1).tolist())
    model.train()
    if task == "regression":
        return {"pearson": pearson(data.labels, preds), "spearmanr": pearson(rankdata(data.labels), rankdata(preds))}
    if task == "token_classification":
        return {"f1": entity_f1(data.gold_tags, preds)}
    return {"accuracy": float(np.mean(np.asarray(preds) == np.asarray(data.labels)))}


def main():
    cfg_path, out_path = sys.argv[1], sys.argv[2]
    with open(cfg_path) as f:
        cfg = yaml.safe_load(f)
    t0 = time.monotonic()
    task, t, m = cfg["task"], cfg["training"], cfg["model"]
    if task not in ("classification", "regression", "token_classification", "span_extraction"):
        raise SystemExit("error: hf_train.py: task %s is not compared yet" % task)
    if int(t.get("grad_accum_steps", 1)) != 1:
        raise SystemExit("error: hf_train.py: grad_accum_steps must be 1")
    seed = int(cfg["seed"])
    pretrained = os.path.expandvars(m["pretrained"]) if m.get("pretrained") else None
    if pretrained and os.path.isfile(os.path.join(pretrained, "modules.json")) and \
            os.path.isdir(os.path.join(pretrained, "0_Transformer")):
        pretrained = os.path.join(pretrained, "0_Transformer")
    lower = bool(m.get("do_lower_case", True))
    model_type = "bert"
    if pretrained and os.path.isfile(os.path.join(pretrained, "config.json")):
        model_type = json.load(open(os.path.join(pretrained, "config.json"))).get("model_type", "bert")
    if pretrained and model_type != "bert":
        # Another family: its own tokenizer and classes (bench/families); a SentencePiece one without
        # a tokenizer.json is the slow tokenizer (training time leaves tokenization out anyway).
        spm = any(os.path.isfile(os.path.join(pretrained, f)) for f in ("sentencepiece.bpe.model", "spiece.model"))
        tokenizer = AutoTokenizer.from_pretrained(pretrained, use_fast=not spm)
    elif pretrained:
        tokenizer = BertTokenizerFast.from_pretrained(pretrained, do_lower_case=lower)
    else:
        tokenizer = BertTokenizerFast(vocab_file=m["vocab"], do_lower_case=lower)
    train_rows = read_jsonl(cfg["data"]["train"])
    labels = [] if task == "span_extraction" else label_set(cfg, train_rows)
    if task == "span_extraction":
        train, dev = SpanData(cfg, tokenizer, cfg["data"]["train"]), SpanData(cfg, tokenizer, cfg["data"]["dev"])
    else:
        train, dev = Data(cfg, tokenizer, cfg["data"]["train"], labels), Data(cfg, tokenizer, cfg["data"]["dev"], labels)

    torch.manual_seed(seed)
    if task == "span_extraction":
        kind, extra = BertForQuestionAnswering, {}
    elif task == "token_classification":
        kind, extra = BertForTokenClassification, {"num_labels": len(labels)}
    elif task == "regression":
        kind, extra = BertForSequenceClassification, {"num_labels": 1, "problem_type": "regression"}
    else:
        kind, extra = BertForSequenceClassification, {"num_labels": len(labels),
                                                      "problem_type": "single_label_classification"}
    overrides = dict(m.get("bert") or {})
    if pretrained and model_type != "bert":
        auto = {BertForQuestionAnswering: AutoModelForQuestionAnswering,
                BertForTokenClassification: AutoModelForTokenClassification,
                BertForSequenceClassification: AutoModelForSequenceClassification}[kind]
        model = auto.from_pretrained(pretrained, ignore_mismatched_sizes=True, **overrides, **extra)
    elif pretrained:
        # A directory saved with a head of another size (bench/families' bert) gets a new head, as unif.
        model = kind.from_pretrained(pretrained, ignore_mismatched_sizes=True, **overrides, **extra)
    else:
        with open(m["vocab"], encoding="utf-8") as f:
            overrides.setdefault("vocab_size", sum(1 for _ in f))
        model = kind(BertConfig(**overrides, **extra))
    if os.environ.get("HF_SAVE_INIT"):
        # bench/hf_compare/same_init.sh: save the weights training would start from (the new head as
        # HF initialises it) with the label names in config.json, and stop.
        if labels:
            model.config.id2label = dict(enumerate(labels))
            model.config.label2id = {l: i for i, l in enumerate(labels)}
        model.save_pretrained(os.environ["HF_SAVE_INIT"], safe_serialization=True)
        tokenizer.save_pretrained(os.environ["HF_SAVE_INIT"])
        return
    model.train()
    o = t["optimizer"]
    betas = tuple(o.get("betas", [0.9, 0.999]))
    optimizer = torch.optim.AdamW(param_groups(model, float(o.get("weight_decay", 0.01))),
                                  lr=float(o["lr"]), betas=betas, eps=float(o.get("eps", 1e-6)))
    bs = int(t["batch_size"])
    n = len(train)
    batches_per_epoch = (n + bs - 1) // bs
    total = int(t["max_steps"]) if int(t.get("max_steps", 0)) > 0 else int(t["epochs"]) * batches_per_epoch
    sch = t["schedule"]
    warmup = int(sch.get("warmup_steps", 0)) or int(math.ceil(float(sch.get("warmup_ratio", 0.0)) * total))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: multiplier(sch["name"], warmup, total, s))
    max_norm = float(t.get("max_grad_norm", 1.0))
    lengths = [len(x) for x in train.ids]
    grouped = bool(t.get("group_by_length", False))

    def order_of(epoch):
        return length_grouped_order(lengths, bs, seed, epoch) if grouped else epoch_order(n, seed, epoch, bool(t.get("shuffle", True)))

    setup_s = time.monotonic() - t0
    train_s, samples, step, epoch, pos = 0.0, 0, 0, 0, 0
    order = order_of(0)
    losses = []
    while step < total:
        s0 = time.perf_counter()
        idx = order[pos * bs:min(n, (pos + 1) * bs)]
        batch = train.batch(idx, task)
        loss = model(**batch).loss
        loss.backward()
        if max_norm > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        train_s += time.perf_counter() - s0
        losses.append(float(loss))
        samples += len(idx)
        step += 1
        pos += 1
        if pos >= batches_per_epoch:
            epoch, pos = epoch + 1, 0
            order = order_of(epoch)
    e0 = time.monotonic()
    metrics = evaluate_span(model, dev, cfg) if task == "span_extraction" else evaluate(model, dev, cfg, labels)
    eval_s = time.monotonic() - e0
    result = {"metrics": metrics, "train_s": train_s, "samples": samples, "steps": step, "setup_s": setup_s,
              "eval_s": eval_s, "last_loss": float(np.mean(losses[-10:])), "losses": losses,
              "threads": torch.get_num_threads(),
              "torch": torch.__version__, "transformers": __import__("transformers").__version__}
    with open(out_path, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
