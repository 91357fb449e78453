"""The official SQuAD 2.0 evaluation (evaluate-v2.0.py) as functions, standard library only, plus
the CMRC 2018 per-question scorer that unif uses for Chinese contexts (span.metric cmrc).

- normalize_answer, compute_exact, compute_f1, get_raw_scores, apply_no_ans_threshold,
  make_eval_dict, find_best_thresh: the script's logic. A gold answer that normalizes to nothing
  is dropped (none left: the gold is ''), F1 against an empty side is 1 when both are empty, and
  has_ans is whether the record's answer list is non-empty.
- evaluate(records, predictions, na_probs, scorer): the script's numbers, as unif reports them
  (framework/metrics/squad_v2.cpp): exact, f1, HasAns_*, NoAns_* from the predictions as they are
  (the null decision is already in them: threshold +inf), and best_exact/best_f1 with their
  thresholds from na_probs (the null odds, in logits).
- scorer "cmrc": an answerable question scores CMRC 2018's EM / F1 against all golds
  (cmrc2018_evaluate.py: lower-case, mixed segmentation, longest common run; nltk.word_tokenize
  approximated as unif's framework/metrics/span.cpp does), an unanswerable one 1 exactly when the
  prediction is empty.
"""
import collections
import re
import string

ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(s):
    """Lower text and remove punctuation, articles and extra whitespace."""
    def remove_articles(text):
        return ARTICLES.sub(" ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def get_tokens(s):
    if not s:
        return []
    return normalize_answer(s).split()


def compute_exact(a_gold, a_pred):
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold, a_pred):
    gold_toks = get_tokens(a_gold)
    pred_toks = get_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        # If either is no-answer, then F1 is 1 if they agree, 0 otherwise
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


# ---- CMRC 2018 (cmrc2018_evaluate.py) ----

CMRC_PUNCT = set("-:_*^/\\~`+=，。：？！“”；’《》·、「」（）－～『』")
TREEBANK_SPLIT = set(";@#$%&?!()[]{}<>\"")


def _word_tokenize(run, out):
    """nltk.word_tokenize approximated as framework/metrics/span.cpp does."""
    first = len(out)
    for piece in run.split():
        cur = ""
        for i, c in enumerate(piece):
            comma = c == "," and not (i + 1 < len(piece) and piece[i + 1] in "0123456789")
            if c in TREEBANK_SPLIT or comma:
                if cur:
                    out.append(cur)
                cur = ""
                out.append(c)
            else:
                cur += c
        if cur:
            out.append(cur)
    if len(out) > first:
        last = out[-1]
        if len(last) > 1 and last[-1] == "." and last[-2] != ".":
            out[-1] = last[:-1]
            out.append(".")


def mixed_segmentation(s, rm_punc=False):
    s = s.lower().strip()
    segs, run = [], ""
    for c in s:
        punc = c in CMRC_PUNCT
        if rm_punc and punc:
            continue
        if "\u4e00" <= c <= "\u9fa5" or punc:
            if run:
                _word_tokenize(run, segs)
            run = ""
            segs.append(c)
        else:
            run += c
    if run:
        _word_tokenize(run, segs)
    return segs


def remove_punctuation(s):
    return "".join(c for c in s.lower().strip() if c not in CMRC_PUNCT)


def _lcs(a, b):
    best = 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b):
            if x == y:
                cur[j + 1] = prev[j] + 1
                best = max(best, cur[j + 1])
        prev = cur
    return best


def cmrc_f1(golds, pred):
    p = mixed_segmentation(pred, rm_punc=True)
    best = 0.0
    for g in golds:
        a = mixed_segmentation(g, rm_punc=True)
        lcs = _lcs(a, p)
        if lcs == 0:
            continue
        precision, recall = lcs / len(p), lcs / len(a)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


def cmrc_em(golds, pred):
    p = remove_punctuation(pred)
    return float(any(remove_punctuation(g) == p for g in golds))


# ---- the SQuAD 2.0 evaluation ----

def get_raw_scores(golds_by_qid, preds, scorer="squad"):
    exact_scores, f1_scores = {}, {}
    for qid, golds in golds_by_qid.items():
        if qid not in preds:
            continue
        a_pred = preds[qid]
        if scorer == "cmrc":
            if not golds:
                exact_scores[qid] = f1_scores[qid] = float(not a_pred)
            else:
                exact_scores[qid] = cmrc_em(golds, a_pred)
                f1_scores[qid] = cmrc_f1(golds, a_pred)
            continue
        gold_answers = [a for a in golds if normalize_answer(a)]
        if not gold_answers:
            # For unanswerable questions, only correct answer is empty string
            gold_answers = [""]
        exact_scores[qid] = max(compute_exact(a, a_pred) for a in gold_answers)
        f1_scores[qid] = max(compute_f1(a, a_pred) for a in gold_answers)
    return exact_scores, f1_scores


def apply_no_ans_threshold(scores, na_probs, qid_to_has_ans, na_prob_thresh):
    new_scores = {}
    for qid, s in scores.items():
        pred_na = na_probs[qid] > na_prob_thresh
        new_scores[qid] = float(not qid_to_has_ans[qid]) if pred_na else s
    return new_scores


def make_eval_dict(exact_scores, f1_scores, qid_list=None):
    if not qid_list:
        total = len(exact_scores)
        return collections.OrderedDict([
            ("exact", 100.0 * sum(exact_scores.values()) / total),
            ("f1", 100.0 * sum(f1_scores.values()) / total),
            ("total", total),
        ])
    total = len(qid_list)
    return collections.OrderedDict([
        ("exact", 100.0 * sum(exact_scores[k] for k in qid_list) / total),
        ("f1", 100.0 * sum(f1_scores[k] for k in qid_list) / total),
        ("total", total),
    ])


def merge_eval(main_eval, new_eval, prefix):
    for k in new_eval:
        main_eval["%s_%s" % (prefix, k)] = new_eval[k]


def find_best_thresh(preds, scores, na_probs, qid_to_has_ans):
    num_no_ans = sum(1 for k in qid_to_has_ans if not qid_to_has_ans[k])
    cur_score = num_no_ans
    best_score = cur_score
    best_thresh = 0.0
    qid_list = sorted(na_probs, key=lambda k: na_probs[k])
    for qid in qid_list:
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1 if preds[qid] else 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def evaluate(golds_by_qid, preds, na_probs=None, scorer="squad", na_prob_thresh=float("inf")):
    """golds_by_qid: {id: [gold answer texts]} ([] = unanswerable), in file order; preds: {id: text}
    ('' = no answer); na_probs: {id: null odds} or None. Percentages, as the official script. The
    default threshold (+inf) scores the predictions as they are, as unif does."""
    qid_to_has_ans = {k: bool(v) for k, v in golds_by_qid.items()}
    has_ans_qids = [k for k, v in qid_to_has_ans.items() if v]
    no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v]
    exact_raw, f1_raw = get_raw_scores(golds_by_qid, preds, scorer)
    na = na_probs if na_probs is not None else {k: 0.0 for k in preds}
    exact_thresh = apply_no_ans_threshold(exact_raw, na, qid_to_has_ans, na_prob_thresh)
    f1_thresh = apply_no_ans_threshold(f1_raw, na, qid_to_has_ans, na_prob_thresh)
    out = make_eval_dict(exact_thresh, f1_thresh)
    if has_ans_qids:
        merge_eval(out, make_eval_dict(exact_thresh, f1_thresh, qid_list=has_ans_qids), "HasAns")
    if no_ans_qids:
        merge_eval(out, make_eval_dict(exact_thresh, f1_thresh, qid_list=no_ans_qids), "NoAns")
    if na_probs is not None:
        best_exact, exact_t = find_best_thresh(preds, exact_raw, na_probs, qid_to_has_ans)
        best_f1, f1_t = find_best_thresh(preds, f1_raw, na_probs, qid_to_has_ans)
        out["best_exact"], out["best_exact_thresh"] = best_exact, exact_t
        out["best_f1"], out["best_f1_thresh"] = best_f1, f1_t
    return dict(out)
