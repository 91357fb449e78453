// Report: see report.h.
#include "framework/metrics/report.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "framework/common/error.h"
#include "framework/metrics/check.h"
#include "framework/metrics/sequence_labeling.h"

namespace unif::framework {
namespace {

double f1_of(double p, double r) { return p + r == 0.0 ? 0.0 : 2.0 * p * r / (p + r); }

ReportRow average(const std::string& name, const std::vector<ReportRow>& rows, bool weighted) {
  ReportRow avg{name};
  double weight_sum = 0.0;
  for (const auto& r : rows) {
    const double w = weighted ? static_cast<double>(r.support) : 1.0;
    avg.precision += w * r.precision;
    avg.recall += w * r.recall;
    avg.f1 += w * r.f1;
    avg.support += r.support;
    weight_sum += w;
  }
  avg.precision = detail::safe_div(avg.precision, weight_sum);
  avg.recall = detail::safe_div(avg.recall, weight_sum);
  avg.f1 = detail::safe_div(avg.f1, weight_sum);
  return avg;
}

ReportRow micro(double tp, double predicted, double truth, int64_t support) {
  ReportRow row{"micro avg", detail::safe_div(tp, predicted), detail::safe_div(tp, truth), 0.0, support};
  row.f1 = f1_of(row.precision, row.recall);
  return row;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

}  // namespace

std::vector<std::vector<int64_t>> confusion_matrix(const std::vector<int64_t>& y_true,
                                                   const std::vector<int64_t>& y_pred, int64_t num_classes) {
  if (y_true.size() != y_pred.size())
    throw UserError("confusion_matrix: " + std::to_string(y_true.size()) + " true labels but " +
                    std::to_string(y_pred.size()) + " predictions");
  std::vector<std::vector<int64_t>> m(static_cast<size_t>(num_classes), std::vector<int64_t>(num_classes, 0));
  for (size_t i = 0; i < y_true.size(); ++i) {
    if (y_true[i] < 0 || y_true[i] >= num_classes || y_pred[i] < 0 || y_pred[i] >= num_classes)
      throw UserError("confusion_matrix: example " + std::to_string(i) + " has a class outside [0, " +
                      std::to_string(num_classes) + ")");
    ++m[y_true[i]][y_pred[i]];
  }
  return m;
}

Report classification_report(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred,
                             const std::vector<std::string>& names) {
  const auto n = static_cast<int64_t>(names.size());
  Report report;
  report.confusion = confusion_matrix(y_true, y_pred, n);
  std::vector<int64_t> labels(n);
  for (int64_t c = 0; c < n; ++c) labels[c] = c;
  const auto scores = y_true.empty() ? std::vector<ClassScore>(n) : per_class_scores(y_true, y_pred, labels);
  for (int64_t c = 0; c < n; ++c)
    report.rows.push_back({names[c], scores[c].precision, scores[c].recall, scores[c].f1, scores[c].support});
  report.examples = static_cast<int64_t>(y_true.size());
  report.accuracy = y_true.empty() ? 0.0 : accuracy(y_true, y_pred);
  report.averages = {average("macro avg", report.rows, false), average("weighted avg", report.rows, true)};
  return report;
}

Report multilabel_report(const LabelMatrix& y_true, const LabelMatrix& y_pred, const std::vector<std::string>& names) {
  Report report;
  const auto scores = multilabel_per_label_scores(y_true, y_pred);
  if (scores.size() != names.size())
    throw UserError("multilabel_report: " + std::to_string(scores.size()) + " label columns but " +
                    std::to_string(names.size()) + " names");
  double tp = 0, predicted = 0, truth = 0;
  int64_t exact = 0;
  for (size_t i = 0; i < y_true.size(); ++i) {
    exact += y_true[i] == y_pred[i];
    for (size_t c = 0; c < y_true[i].size(); ++c) {
      tp += y_true[i][c] && y_pred[i][c];
      predicted += y_pred[i][c] != 0;
      truth += y_true[i][c] != 0;
    }
  }
  for (size_t c = 0; c < names.size(); ++c)
    report.rows.push_back({names[c], scores[c].precision, scores[c].recall, scores[c].f1, scores[c].support});
  report.examples = static_cast<int64_t>(y_true.size());
  report.accuracy = y_true.empty() ? 0.0 : static_cast<double>(exact) / static_cast<double>(y_true.size());
  report.averages = {micro(tp, predicted, truth, static_cast<int64_t>(truth)), average("macro avg", report.rows, false),
                     average("weighted avg", report.rows, true)};
  return report;
}

Report entity_report(const std::vector<std::vector<std::string>>& true_tags,
                     const std::vector<std::vector<std::string>>& pred_tags) {
  Report report;
  const auto per_type = token_type_scores(true_tags, pred_tags);  // checks the shapes
  for (const auto& [type, s] : per_type) report.rows.push_back({type, s.precision, s.recall, s.f1, s.support});
  const auto truth = get_entities(true_tags), pred = get_entities(pred_tags);
  const std::set<Entity> true_set(truth.begin(), truth.end());
  double tp = 0;
  for (const auto& e : std::set<Entity>(pred.begin(), pred.end())) tp += true_set.count(e);
  report.examples = static_cast<int64_t>(true_tags.size());
  report.averages = {micro(tp, static_cast<double>(pred.size()), static_cast<double>(truth.size()),
                           static_cast<int64_t>(truth.size())),
                     average("macro avg", report.rows, false), average("weighted avg", report.rows, true)};
  return report;
}

std::string Report::text() const {
  size_t width = std::string("weighted avg").size();
  for (const auto& r : rows) width = std::max(width, r.name.size());
  const std::string accuracy_name = confusion.empty() ? "subset accuracy" : "accuracy";
  if (accuracy >= 0.0) width = std::max(width, accuracy_name.size());
  const size_t col = 10;
  // scikit-learn's layout: the name right-aligned, one space, then columns of 10.
  std::string out = std::string(width + 1, ' ') + pad_left("precision", col) + pad_left("recall", col) +
                    pad_left("f1-score", col) + pad_left("support", col) + "\n\n";
  auto line = [&](const ReportRow& r) {
    out += pad_left(r.name, width) + " " + pad_left(num(r.precision), col) + pad_left(num(r.recall), col) +
           pad_left(num(r.f1), col) + pad_left(std::to_string(r.support), col) + "\n";
  };
  for (const auto& r : rows) line(r);
  out += "\n";
  if (accuracy >= 0.0)
    out += pad_left(accuracy_name, width) + " " + std::string(2 * col, ' ') + pad_left(num(accuracy), col) +
           pad_left(std::to_string(examples), col) + "\n";
  for (const auto& r : averages) line(r);
  if (!confusion.empty()) {
    out += "\nconfusion matrix (rows: true class, columns: predicted class)\n";
    size_t cell = 6;
    for (const auto& row : confusion)
      for (auto v : row) cell = std::max(cell, std::to_string(v).size() + 1);
    for (size_t c = 0; c < rows.size(); ++c) cell = std::max(cell, std::min<size_t>(rows[c].name.size(), 12) + 1);
    out += std::string(width + 1, ' ');
    for (const auto& r : rows) out += pad_left(r.name.substr(0, 12), cell);
    out += "\n";
    for (size_t t = 0; t < confusion.size(); ++t) {
      out += pad_left(rows[t].name, width) + " ";
      for (auto v : confusion[t]) out += pad_left(std::to_string(v), cell);
      out += "\n";
    }
  }
  return out;
}

nlohmann::json Report::json() const {
  auto row_json = [](const ReportRow& r) {
    return nlohmann::json{
        {"name", r.name}, {"precision", r.precision}, {"recall", r.recall}, {"f1", r.f1}, {"support", r.support}};
  };
  nlohmann::json j;
  j["rows"] = nlohmann::json::array();
  for (const auto& r : rows) j["rows"].push_back(row_json(r));
  j["averages"] = nlohmann::json::array();
  for (const auto& r : averages) j["averages"].push_back(row_json(r));
  if (accuracy >= 0.0) j[confusion.empty() ? "subset_accuracy" : "accuracy"] = accuracy;
  j["examples"] = examples;
  if (!confusion.empty()) j["confusion_matrix"] = confusion;
  return j;
}

}  // namespace unif::framework
