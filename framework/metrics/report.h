// Report: the per-class (or per-entity-type) table `unif eval --report` prints, in the layout of
// scikit-learn's classification_report (precision, recall, f1-score, support per row; then the
// averages), plus the confusion matrix for single-label classification. Pure C++, no Torch.
//
//   auto r = classification_report({0, 1, 1}, {0, 1, 0}, {"neg", "pos"});
//   std::cout << r.text();           // the table, then the confusion matrix
//   nlohmann::json j = r.json();     // the same numbers for programs
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/metrics/classification.h"
#include "framework/metrics/multilabel.h"

namespace unif::framework {

struct ReportRow {
  std::string name;
  double precision = 0.0;
  double recall = 0.0;
  double f1 = 0.0;
  int64_t support = 0;
};

struct Report {
  std::vector<ReportRow> rows;      // one per class, label or entity type
  std::vector<ReportRow> averages;  // "micro avg", "macro avg", "weighted avg" as the task has them
  double accuracy = -1.0;           // single-label classification only (< 0: none)
  int64_t examples = 0;
  /// Single-label classification: confusion[t][p] = examples of true class t predicted as p, in
  /// the order of `rows` (sklearn's confusion_matrix, rows true, columns predicted). Else empty.
  std::vector<std::vector<int64_t>> confusion;

  /// The table (4 decimals) and, when there is one, the confusion matrix.
  std::string text() const;
  nlohmann::json json() const;
};

/// True x predicted class ids in [0, names.size()) -> confusion matrix (rows true, columns predicted).
/// UserError on different lengths or an id out of range.
std::vector<std::vector<int64_t>> confusion_matrix(const std::vector<int64_t>& y_true,
                                                   const std::vector<int64_t>& y_pred, int64_t num_classes);

/// Every class of `names` (a class with no example gets zeros), accuracy, macro and weighted
/// averages (weights = support), the confusion matrix.
Report classification_report(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred,
                             const std::vector<std::string>& names);

/// Every label column, micro / macro / weighted averages and the examples whose whole set is right
/// (sklearn's classification_report on indicator matrices; accuracy = subset accuracy).
Report multilabel_report(const LabelMatrix& y_true, const LabelMatrix& y_pred, const std::vector<std::string>& names);

/// seqeval's classification_report: one row per entity type that has a true entity, then micro,
/// macro and weighted averages over those types (micro counts every predicted entity).
Report entity_report(const std::vector<std::vector<std::string>>& true_tags,
                     const std::vector<std::vector<std::string>>& pred_tags);

}  // namespace unif::framework
