// Single-label classification metrics (accuracy, per-class P/R/F1, macro-F1), sklearn semantics.
#include "framework/metrics/classification.h"

#include <map>
#include <set>

#include "framework/metrics/check.h"

namespace unif::framework {
namespace {

void check_inputs(const std::string& metric, const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred) {
  detail::check_same_length(metric, y_true.size(), y_pred.size());
  detail::check_not_empty(metric, y_true.size());
}

using detail::Counts;

ClassScore score_of(int64_t label, const Counts& c) {
  ClassScore s;
  s.label = label;
  s.precision = detail::safe_div(c.tp, c.tp + c.fp);
  s.recall = detail::safe_div(c.tp, c.tp + c.fn);
  s.f1 = s.precision + s.recall > 0.0 ? 2.0 * s.precision * s.recall / (s.precision + s.recall) : 0.0;
  s.support = c.tp + c.fn;
  return s;
}

std::map<int64_t, Counts> count(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred) {
  std::map<int64_t, Counts> counts;
  for (std::size_t i = 0; i < y_true.size(); ++i) {
    if (y_true[i] == y_pred[i]) {
      ++counts[y_true[i]].tp;
    } else {
      ++counts[y_true[i]].fn;
      ++counts[y_pred[i]].fp;
    }
  }
  return counts;
}

double mean_f1(const std::vector<ClassScore>& scores) {
  if (scores.empty()) return 0.0;
  double sum = 0.0;
  for (const auto& s : scores) sum += s.f1;
  return sum / static_cast<double>(scores.size());
}

}  // namespace

double accuracy(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred) {
  check_inputs("accuracy", y_true, y_pred);
  int64_t correct = 0;
  for (std::size_t i = 0; i < y_true.size(); ++i) correct += y_true[i] == y_pred[i];
  return static_cast<double>(correct) / static_cast<double>(y_true.size());
}

std::vector<ClassScore> per_class_scores(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred) {
  check_inputs("per_class_scores", y_true, y_pred);
  std::vector<ClassScore> out;
  for (const auto& [label, c] : count(y_true, y_pred)) out.push_back(score_of(label, c));
  return out;
}

std::vector<ClassScore> per_class_scores(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred,
                                         const std::vector<int64_t>& labels) {
  check_inputs("per_class_scores", y_true, y_pred);
  std::set<int64_t> seen;
  for (int64_t l : labels) {
    if (!seen.insert(l).second) {
      throw UserError("per_class_scores: label " + std::to_string(l) +
                      " is listed twice in labels (expected distinct labels)");
    }
  }
  if (labels.empty()) throw UserError("per_class_scores: labels is empty (expected at least one)");
  const auto counts = count(y_true, y_pred);
  std::vector<ClassScore> out;
  for (int64_t l : labels) {
    auto it = counts.find(l);
    out.push_back(score_of(l, it == counts.end() ? Counts{} : it->second));
  }
  return out;
}

double macro_f1(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred) {
  return mean_f1(per_class_scores(y_true, y_pred));
}

double macro_f1(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred,
                const std::vector<int64_t>& labels) {
  return mean_f1(per_class_scores(y_true, y_pred, labels));
}

MetricSet classification_metrics(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred,
                                 int64_t num_classes) {
  const std::string metric = "classification_metrics";
  check_inputs(metric, y_true, y_pred);
  if (num_classes < 1) {
    throw UserError(metric + ": num_classes is " + std::to_string(num_classes) + " (expected at least 1)");
  }
  auto check_range = [&](const std::vector<int64_t>& v, const char* name) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] < 0 || v[i] >= num_classes) {
        throw UserError(metric + ": " + name + "[" + std::to_string(i) + "] = " + std::to_string(v[i]) +
                        " is not a class id (expected 0.." + std::to_string(num_classes - 1) + ")");
      }
    }
  };
  check_range(y_true, "y_true");
  check_range(y_pred, "y_pred");
  return {{"accuracy", accuracy(y_true, y_pred)}, {"f1", macro_f1(y_true, y_pred)}};
}

}  // namespace unif::framework
