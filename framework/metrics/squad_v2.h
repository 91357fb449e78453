// Span-extraction metrics with unanswerable questions, as the official SQuAD 2.0 evaluation
// (`evaluate-v2.0.py`) computes them. A question with no gold answer is unanswerable: a prediction
// scores 1 on it when empty, else 0. Gold answers that normalize to nothing are dropped (none left:
// the gold is ""), and F1 against an empty side is 1 when both are empty, else 0 (where SQuAD
// v1.1's F1 gives 0). Scores are the script's: percentages (× 100), summed in question order.
//
//   SquadV2Input in{predictions, golds, na_probs};   // one entry per question, in dataset order
//   MetricSet m = squad_v2_evaluation(in, 1.0);      // "exact", "f1", "total", "HasAns_*", ...
//
// na_probs are the script's --na-prob-file values (a question is predicted unanswerable when its
// na_prob exceeds the threshold; unif passes each question's null-score difference, the logit
// margin of "no answer" over the best span); `best_exact` and `best_f1` are the scores at the best
// such threshold, found as the script's find_best_thresh walks the questions by na_prob.
#pragma once
#include <string>
#include <vector>

#include "framework/metrics/metric_set.h"

namespace unif::framework {

/// How one question's prediction is compared with its golds.
enum class SpanScorer { Squad, Cmrc };

struct SquadV2Input {
  std::vector<std::string> predictions;         // "" = predicted unanswerable
  std::vector<std::vector<std::string>> golds;  // empty = unanswerable
  std::vector<double> na_probs;                 // empty = no na-prob file (all 0, no best_* keys)
  SpanScorer scorer = SpanScorer::Squad;        // Cmrc: CMRC 2018's EM and F1 on answerable ones
};

/// The script's get_tokens + compute_f1: token F1 of the normalized strings; 1 when both have no
/// token, 0 when only one has none.
double squad_v2_f1(const std::string& gold, const std::string& prediction);

/// Per question (exact, f1) as get_raw_scores (fractions in [0, 1]).
std::vector<std::pair<double, double>> squad_v2_raw_scores(const SquadV2Input& in);

/// The script's output dict for `in` at --na-prob-thresh `threshold`: exact, f1, total;
/// HasAns_exact, HasAns_f1, HasAns_total when a question has golds; NoAns_* when one has none;
/// best_exact, best_exact_thresh, best_f1, best_f1_thresh when na_probs are given. UserError on
/// inputs of different lengths or none.
MetricSet squad_v2_evaluation(const SquadV2Input& in, double threshold);

}  // namespace unif::framework
