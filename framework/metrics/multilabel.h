// Multilabel classification metrics with scikit-learn semantics for indicator matrices
// (zero_division=0): micro-F1, macro-F1 over every label column, and subset accuracy
// (an example counts only if its whole label set is right). Pure C++, no Torch.
//
//   LabelMatrix t = {{1, 0, 1}, {0, 1, 0}}, p = {{1, 0, 0}, {0, 1, 0}};
//   multilabel_metrics(t, p);  // {"macro_f1": 2/3, "micro_f1": 0.8, "subset_accuracy": 0.5}
#pragma once
#include <cstdint>
#include <vector>

#include "framework/metrics/classification.h"
#include "framework/metrics/metric_set.h"

namespace unif::framework {

/// (N, C) indicator matrix: row n, column c is 1 when example n has label c, else 0.
using LabelMatrix = std::vector<std::vector<int>>;

/// Turns label-index sets (one per example, any order, duplicates ignored) into an (N, C)
/// indicator matrix with C = num_labels. UserError for an index outside [0, num_labels).
LabelMatrix indicator_matrix(const std::vector<std::vector<int64_t>>& label_sets, int64_t num_labels);

/// Per label column c: tp, fp, fn summed over examples; precision/recall/F1 as in ClassScore
/// (0 on a zero denominator); support = number of examples with label c.
std::vector<ClassScore> multilabel_per_label_scores(const LabelMatrix& y_true, const LabelMatrix& y_pred);

/// Micro-F1 = 2·TP / (2·TP + FP + FN) with counts summed over all examples and labels; 0 if
/// the denominator is 0.
double multilabel_micro_f1(const LabelMatrix& y_true, const LabelMatrix& y_pred);

/// Macro-F1 = mean over all C label columns of the per-label F1 (a column with no true and no
/// predicted example contributes 0, as sklearn does for indicator input).
double multilabel_macro_f1(const LabelMatrix& y_true, const LabelMatrix& y_pred);

/// Fraction of examples whose predicted row equals the true row exactly.
double subset_accuracy(const LabelMatrix& y_true, const LabelMatrix& y_pred);

/// {"micro_f1", "macro_f1", "subset_accuracy"}. UserError when the matrices differ in shape, are
/// empty, have ragged rows or hold a value other than 0/1.
MetricSet multilabel_metrics(const LabelMatrix& y_true, const LabelMatrix& y_pred);

/// Same, from label-index sets (converted with indicator_matrix).
MetricSet multilabel_metrics_from_sets(const std::vector<std::vector<int64_t>>& true_sets,
                                       const std::vector<std::vector<int64_t>>& pred_sets, int64_t num_labels);

}  // namespace unif::framework
