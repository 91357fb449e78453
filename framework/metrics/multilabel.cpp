// Multilabel metrics on (N, C) indicator matrices: micro-F1, macro-F1, subset accuracy (sklearn).
#include "framework/metrics/multilabel.h"

#include "framework/metrics/check.h"

namespace unif::framework {
namespace {

// Same shape, not empty, rectangular, 0/1 only. Returns C.
std::size_t check_matrices(const std::string& metric, const LabelMatrix& y_true, const LabelMatrix& y_pred) {
  detail::check_same_length(metric, y_true.size(), y_pred.size());
  detail::check_not_empty(metric, y_true.size());
  const std::size_t c = y_true[0].size();
  if (c == 0) throw UserError(metric + ": y_true[0] has no label columns (expected at least one)");
  auto check = [&](const LabelMatrix& m, const char* name) {
    for (std::size_t n = 0; n < m.size(); ++n) {
      if (m[n].size() != c) {
        throw UserError(metric + ": " + name + "[" + std::to_string(n) + "] has " + std::to_string(m[n].size()) +
                        " columns (expected " + std::to_string(c) + ", like y_true[0])");
      }
      for (std::size_t j = 0; j < c; ++j) {
        if (m[n][j] != 0 && m[n][j] != 1) {
          throw UserError(metric + ": " + name + "[" + std::to_string(n) + "][" + std::to_string(j) +
                          "] = " + std::to_string(m[n][j]) + " (expected 0 or 1)");
        }
      }
    }
  };
  check(y_true, "y_true");
  check(y_pred, "y_pred");
  return c;
}

using detail::Counts;

std::vector<Counts> column_counts(const LabelMatrix& y_true, const LabelMatrix& y_pred, std::size_t c) {
  std::vector<Counts> counts(c);
  for (std::size_t n = 0; n < y_true.size(); ++n) {
    for (std::size_t j = 0; j < c; ++j) {
      const int t = y_true[n][j], p = y_pred[n][j];
      counts[j].tp += t & p;
      counts[j].fp += (1 - t) & p;
      counts[j].fn += t & (1 - p);
    }
  }
  return counts;
}

std::vector<ClassScore> scores(const std::vector<Counts>& counts) {
  std::vector<ClassScore> out;
  for (std::size_t j = 0; j < counts.size(); ++j) {
    const Counts& k = counts[j];
    ClassScore s;
    s.label = static_cast<int64_t>(j);
    s.precision = detail::safe_div(k.tp, k.tp + k.fp);
    s.recall = detail::safe_div(k.tp, k.tp + k.fn);
    s.f1 = detail::safe_div(2.0 * k.tp, 2.0 * k.tp + k.fp + k.fn);  // = 2pr/(p+r), 0 when tp = 0
    s.support = k.tp + k.fn;
    out.push_back(s);
  }
  return out;
}

double micro(const std::vector<Counts>& counts) {
  Counts all;
  for (const auto& k : counts) {
    all.tp += k.tp;
    all.fp += k.fp;
    all.fn += k.fn;
  }
  return detail::safe_div(2.0 * all.tp, 2.0 * all.tp + all.fp + all.fn);
}

double macro(const std::vector<Counts>& counts) {
  double sum = 0.0;
  for (const auto& s : scores(counts)) sum += s.f1;
  return sum / static_cast<double>(counts.size());
}

double subset(const LabelMatrix& y_true, const LabelMatrix& y_pred) {
  int64_t exact = 0;
  for (std::size_t n = 0; n < y_true.size(); ++n) exact += y_true[n] == y_pred[n];
  return static_cast<double>(exact) / static_cast<double>(y_true.size());
}

}  // namespace

LabelMatrix indicator_matrix(const std::vector<std::vector<int64_t>>& label_sets, int64_t num_labels) {
  if (num_labels < 1) {
    throw UserError("indicator_matrix: num_labels is " + std::to_string(num_labels) + " (expected at least 1)");
  }
  LabelMatrix m(label_sets.size(), std::vector<int>(static_cast<std::size_t>(num_labels), 0));
  for (std::size_t n = 0; n < label_sets.size(); ++n) {
    for (int64_t l : label_sets[n]) {
      if (l < 0 || l >= num_labels) {
        throw UserError("indicator_matrix: example " + std::to_string(n) + " has label " + std::to_string(l) +
                        " (expected 0.." + std::to_string(num_labels - 1) + ")");
      }
      m[n][static_cast<std::size_t>(l)] = 1;
    }
  }
  return m;
}

std::vector<ClassScore> multilabel_per_label_scores(const LabelMatrix& y_true, const LabelMatrix& y_pred) {
  const std::size_t c = check_matrices("multilabel_per_label_scores", y_true, y_pred);
  return scores(column_counts(y_true, y_pred, c));
}

double multilabel_micro_f1(const LabelMatrix& y_true, const LabelMatrix& y_pred) {
  const std::size_t c = check_matrices("multilabel_micro_f1", y_true, y_pred);
  return micro(column_counts(y_true, y_pred, c));
}

double multilabel_macro_f1(const LabelMatrix& y_true, const LabelMatrix& y_pred) {
  const std::size_t c = check_matrices("multilabel_macro_f1", y_true, y_pred);
  return macro(column_counts(y_true, y_pred, c));
}

double subset_accuracy(const LabelMatrix& y_true, const LabelMatrix& y_pred) {
  check_matrices("subset_accuracy", y_true, y_pred);
  return subset(y_true, y_pred);
}

MetricSet multilabel_metrics(const LabelMatrix& y_true, const LabelMatrix& y_pred) {
  const std::size_t c = check_matrices("multilabel_metrics", y_true, y_pred);
  const auto counts = column_counts(y_true, y_pred, c);
  return {{"micro_f1", micro(counts)}, {"macro_f1", macro(counts)}, {"subset_accuracy", subset(y_true, y_pred)}};
}

MetricSet multilabel_metrics_from_sets(const std::vector<std::vector<int64_t>>& true_sets,
                                       const std::vector<std::vector<int64_t>>& pred_sets, int64_t num_labels) {
  detail::check_same_length("multilabel_metrics", true_sets.size(), pred_sets.size(), "true_sets", "pred_sets");
  return multilabel_metrics(indicator_matrix(true_sets, num_labels), indicator_matrix(pred_sets, num_labels));
}

}  // namespace unif::framework
