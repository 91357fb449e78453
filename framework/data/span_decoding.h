// Span decoding: from the start/end logits of an example's windows to its answer, as HF run_qa's
// postprocess_qa_predictions does for SQuAD v1.1: in every window take the n_best_size highest
// start and end positions, keep the pairs that lie in the context with start <= end and at most
// max_answer_length pieces, score them start_logit + end_logit, and rank all windows' candidates
// together. The answer is the context's exact substring from the start piece's first code point
// to the end piece's last (so original spacing, case and accents are kept).
#pragma once
#include <string>
#include <vector>

#include <torch/types.h>

#include "framework/data/dataset.h"

namespace unif::framework {

struct SpanCandidate {
  std::string text;   // the context's substring
  int64_t start = 0;  // [start, end) in the context, code points
  int64_t end = 0;
  double score = 0.0;      // start_logit + end_logit (a null answer: the null score)
  double probability = 0;  // softmax of the scores over the returned candidates
  bool no_answer = false;  // the question is judged unanswerable (text "", start = end = 0)
};

/// The n-best answers of `example` (best first; at most n_best_size), given its windows and their
/// logits (L, 2) (start, end) in the same order. Empty when no window has a valid span.
std::vector<SpanCandidate> decode_spans(const Example& example, const std::vector<const EncodedExample*>& windows,
                                        const std::vector<torch::Tensor>& logits, int64_t max_answer_length,
                                        int64_t n_best_size);

/// The null score of an example's windows (unanswerable questions): the least over its windows of
/// [CLS]'s start + end logits (position 0), as HF run_qa's version_2_with_negative.
double null_score(const std::vector<torch::Tensor>& logits);

/// The null odds of an example: null_score(logits) - the best candidate's score (+infinity without
/// one); with a verifier's third channel, (1 - verifier_weight) · that + verifier_weight · the
/// verifier's least logit over the windows.
double null_odds(const std::vector<SpanCandidate>& candidates, const std::vector<torch::Tensor>& logits,
                 double verifier_weight);

/// The answer of an unanswerable-aware model (span.unanswerable): "no answer" (score: the null
/// score) when no window has a valid span or `odds` > threshold; else the best candidate.
SpanCandidate decide_null(const std::vector<SpanCandidate>& candidates, const std::vector<torch::Tensor>& logits,
                          double odds, double threshold);

/// The "first sentence of the context" baseline answer: the context up to and including the first
/// sentence end (。！？!? anywhere, '.' followed by a space or the end), or the whole context.
std::string first_sentence(const std::string& context);

}  // namespace unif::framework
