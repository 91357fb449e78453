// Span-extraction (reading comprehension) metrics, as the official evaluation scripts compute them:
// SQuAD v1.1 (`evaluate-v1.1.py`) and CMRC 2018 (`cmrc2018_evaluate.py`). Each example has one
// predicted answer string and one or more gold answers; an example's score is the max over its
// golds, and the set's score the mean over examples. Scores are fractions in [0, 1] (the official
// scripts print ×100). Strings are UTF-8 and handled per code point (utf8proc), never per byte.
// An example with an empty gold list is a UserError (the scripts' max() over nothing would raise).
#pragma once
#include <string>
#include <vector>

#include "framework/metrics/metric_set.h"

namespace unif::framework {

// ---- SQuAD v1.1 ----

/// normalize_answer: lower-case (per code point), drop ASCII punctuation (Python's
/// string.punctuation), replace the whole words a|an|the by a space (word boundaries as Python's
/// Unicode `\b`), then collapse whitespace runs to one space and strip.
/// "The  Cat!" -> "cat".
std::string squad_normalize_answer(const std::string& s);

/// 1.0 if the normalized strings are equal, else 0.0.
double squad_exact_match(const std::string& prediction, const std::string& gold);

/// Token F1 over whitespace tokens of the normalized strings, overlap counted as a multiset
/// intersection (Python's Counter &); 0 when there is no overlap (so also when either is empty).
double squad_f1(const std::string& prediction, const std::string& gold);

/// {"exact_match", "f1"}: mean over examples of the max over that example's golds.
/// UserError on different lengths, no examples, or an example without gold answers.
MetricSet squad_metrics(const std::vector<std::string>& predictions,
                        const std::vector<std::vector<std::string>>& gold_answers);

// ---- CMRC 2018 ----

/// The script's punctuation list `sp_char` (one code point each; its "……" entry is two
/// characters, so it can never match a single character and U+2026 '…' is kept, as there).
bool cmrc_is_punctuation(char32_t c);

/// remove_punctuation: lower-case, strip surrounding whitespace, drop every sp_char character.
/// Other whitespace and ASCII punctuation such as '.' or ',' are kept.
std::string cmrc_remove_punctuation(const std::string& s);

/// mixed_segmentation: lower-case and strip; every character in U+4E00..U+9FA5 and every sp_char
/// character is its own segment (sp_char is dropped instead when remove_punc); runs of other
/// characters are tokenized as words. The script uses nltk.word_tokenize for those runs; this
/// follows its Treebank rules approximately: split on whitespace, split off ; @ # $ % & ? ! ( ) [ ]
/// { } < > " as tokens, ',' unless a digit follows, and a '.' ending the run. English
/// contractions ("don't") and abbreviations are not split as nltk would.
std::vector<std::string> cmrc_mixed_segmentation(const std::string& s, bool remove_punc);

/// EM: 1.0 if cmrc_remove_punctuation(prediction) equals that of any gold, else 0.0.
double cmrc_exact_match(const std::string& prediction, const std::vector<std::string>& golds);

/// F1: max over golds of the F1 of the longest common *substring* (contiguous run of segments)
/// between the punctuation-free segmentations: p = lcs / |pred segs|, r = lcs / |gold segs|;
/// 0 when lcs = 0 (so also when the prediction is empty).
double cmrc_f1(const std::string& prediction, const std::vector<std::string>& golds);

/// {"exact_match", "f1"}: means over examples. UserError on different lengths, no examples, an
/// example without gold answers, or invalid UTF-8.
MetricSet cmrc_metrics(const std::vector<std::string>& predictions,
                       const std::vector<std::vector<std::string>>& gold_answers);

}  // namespace unif::framework
