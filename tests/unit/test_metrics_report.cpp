// unif eval --report's tables (framework/metrics/report): every number and the layout against
// scikit-learn 1.x classification_report / confusion_matrix and seqeval's classification_report
// (digits=4, zero_division=0), computed in Python on the same inputs.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "framework/common/error.h"
#include "framework/metrics/report.h"

using namespace unif::framework;

namespace {
void check_row(const ReportRow& r, const std::string& name, double p, double rc, double f1, int64_t support) {
  INFO(r.name);
  CHECK(r.name == name);
  CHECK(r.precision == Approx(p).margin(5e-5));
  CHECK(r.recall == Approx(rc).margin(5e-5));
  CHECK(r.f1 == Approx(f1).margin(5e-5));
  CHECK(r.support == support);
}
}  // namespace

TEST_CASE("report: single-label classification as sklearn (labels=all classes)", "[unit][metrics][report]") {
  const std::vector<int64_t> yt{0, 1, 2, 2, 1, 0, 2, 3, 1, 2}, yp{0, 2, 2, 2, 1, 1, 0, 3, 1, 2};
  const auto r = classification_report(yt, yp, {"a", "b", "c", "d", "e"});
  // sklearn: classification_report(yt, yp, labels=[0..4], target_names=..., digits=4, zero_division=0)
  const std::string sklearn =
      "              precision    recall  f1-score   support\n"
      "\n"
      "           a     0.5000    0.5000    0.5000         2\n"
      "           b     0.6667    0.6667    0.6667         3\n"
      "           c     0.7500    0.7500    0.7500         4\n"
      "           d     1.0000    1.0000    1.0000         1\n"
      "           e     0.0000    0.0000    0.0000         0\n"
      "\n"
      "    accuracy                         0.7000        10\n"
      "   macro avg     0.5833    0.5833    0.5833        10\n"
      "weighted avg     0.7000    0.7000    0.7000        10\n";
  const std::string text = r.text();
  CHECK(text.substr(0, sklearn.size()) == sklearn);
  // sklearn confusion_matrix(yt, yp, labels=[0..4])
  CHECK(r.confusion == std::vector<std::vector<int64_t>>{
                           {1, 1, 0, 0, 0}, {0, 2, 1, 0, 0}, {1, 0, 3, 0, 0}, {0, 0, 0, 1, 0}, {0, 0, 0, 0, 0}});
  CHECK(text.find("confusion matrix (rows: true class, columns: predicted class)") != std::string::npos);
  const auto j = r.json();
  CHECK(j.at("accuracy").get<double>() == Approx(0.7));
  CHECK(j.at("rows").size() == 5);
  CHECK(j.at("confusion_matrix")[2][0] == 1);
}

TEST_CASE("report: multilabel as sklearn on indicator matrices", "[unit][metrics][report]") {
  const LabelMatrix t{{1, 0, 1}, {0, 1, 0}, {1, 1, 0}, {0, 0, 1}}, p{{1, 0, 0}, {0, 1, 0}, {1, 1, 1}, {0, 0, 0}};
  const auto r = multilabel_report(t, p, {"x", "y", "z"});
  REQUIRE(r.rows.size() == 3);
  check_row(r.rows[0], "x", 1, 1, 1, 2);
  check_row(r.rows[2], "z", 0, 0, 0, 2);
  REQUIRE(r.averages.size() == 3);
  check_row(r.averages[0], "micro avg", 0.8, 0.6667, 0.7273, 6);
  check_row(r.averages[1], "macro avg", 0.6667, 0.6667, 0.6667, 6);
  check_row(r.averages[2], "weighted avg", 0.6667, 0.6667, 0.6667, 6);
  CHECK(r.accuracy == Approx(0.25));  // one example of four has its whole set right
  CHECK(r.confusion.empty());
  CHECK(r.text().find("subset accuracy") != std::string::npos);
}

TEST_CASE("report: entity types as seqeval", "[unit][metrics][report]") {
  const std::vector<std::vector<std::string>> t{{"B-PER", "I-PER", "O", "B-LOC"},
                                                {"O", "B-ORG", "I-ORG", "O", "B-PER"}};
  const std::vector<std::vector<std::string>> p{{"B-PER", "I-PER", "O", "B-ORG"}, {"O", "B-ORG", "I-ORG", "O", "O"}};
  const auto r = entity_report(t, p);
  REQUIRE(r.rows.size() == 3);
  check_row(r.rows[0], "LOC", 0, 0, 0, 1);
  check_row(r.rows[1], "ORG", 0.5, 1, 0.6667, 1);
  check_row(r.rows[2], "PER", 1, 0.5, 0.6667, 2);
  check_row(r.averages[0], "micro avg", 0.6667, 0.5, 0.5714, 4);
  check_row(r.averages[1], "macro avg", 0.5, 0.5, 0.4444, 4);
  check_row(r.averages[2], "weighted avg", 0.625, 0.5, 0.5, 4);
  CHECK(r.accuracy < 0);
}

TEST_CASE("report: bad input", "[unit][metrics][report][bad-input]") {
  CHECK_THROWS_AS(confusion_matrix({0, 1}, {0}, 2), unif::UserError);
  CHECK_THROWS_AS(confusion_matrix({0, 2}, {0, 1}, 2), unif::UserError);
  CHECK_THROWS_AS(multilabel_report({{1, 0}}, {{1, 0}}, {"only one name"}), unif::UserError);
  CHECK_THROWS_AS(entity_report({{"O"}}, {{"O", "O"}}), unif::UserError);
}
