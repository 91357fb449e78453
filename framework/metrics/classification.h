// Single-label classification metrics with scikit-learn semantics: accuracy, per-class
// precision/recall/F1 and macro-F1 (`sklearn.metrics.f1_score(average="macro", zero_division=0)`).
// Labels are class ids (int64). Pure C++, no Torch.
//
//   auto m = classification_metrics({0, 1, 2, 2}, {0, 2, 2, 2}, /*num_classes=*/3);
//   // m == {{"accuracy", 0.75}, {"f1", 0.6}}
#pragma once
#include <cstdint>
#include <vector>

#include "framework/metrics/metric_set.h"

namespace unif::framework {

/// One class's scores. precision = tp / (tp + fp), recall = tp / (tp + fn),
/// f1 = 2·p·r / (p + r); each is 0 when its denominator is 0 (sklearn zero_division=0).
/// support = number of true examples of the class.
struct ClassScore {
  int64_t label = 0;
  double precision = 0.0;
  double recall = 0.0;
  double f1 = 0.0;
  int64_t support = 0;
};

/// Fraction of positions where y_pred == y_true, in [0, 1].
/// UserError on different lengths or empty input.
double accuracy(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred);

/// Scores of every class in the union of labels seen in y_true and y_pred, sorted ascending
/// (sklearn's `unique_labels`): a class neither true nor predicted anywhere is left out.
std::vector<ClassScore> per_class_scores(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred);

/// Scores of exactly `labels`, in that order (sklearn's `labels=`): a listed class that never
/// occurs gets all zeros and still counts; labels not listed are ignored. UserError on duplicates.
std::vector<ClassScore> per_class_scores(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred,
                                         const std::vector<int64_t>& labels);

/// Unweighted mean of per-class F1 over the union of labels (sklearn average="macro").
double macro_f1(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred);

/// Unweighted mean of per-class F1 over exactly `labels` (sklearn average="macro", labels=...).
double macro_f1(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred,
                const std::vector<int64_t>& labels);

/// {"accuracy", "f1"} where f1 = macro_f1 over the union of labels (sklearn's default, so a class
/// absent from both y_true and y_pred does not drag the mean down). num_classes only validates:
/// every label must lie in [0, num_classes), else UserError naming the offending position.
MetricSet classification_metrics(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred,
                                 int64_t num_classes);

}  // namespace unif::framework
