// Unit tests for unif::metrics classification, multilabel and main-metric table. Every expected
// number is worked out by hand in the comment above it (sklearn semantics, zero_division=0).
#include <catch2/catch.hpp>

#include "framework/common/error.h"
#include "framework/metrics/classification.h"
#include "framework/metrics/multilabel.h"
#include "support/approx.h"

using namespace unif::framework;

#define REQUIRE_USER_ERROR(expr, text)                \
  do {                                                \
    REQUIRE_THROWS_AS(expr, unif::UserError);         \
    REQUIRE_THROWS_WITH(expr, Catch::Contains(text)); \
  } while (0)

using unif::test::exact;

TEST_CASE("macro-F1 with a class that is never predicted", "[metrics]") {
  // y_true 0 0 1 1 2 2 / y_pred 0 0 0 1 0 1; class 2 is never predicted.
  // class 0: tp 2, fp 2 (pos 2, 4), fn 0 -> p 1/2, r 1, f1 2/3
  // class 1: tp 1, fp 1 (pos 5), fn 1 (pos 2) -> p 1/2, r 1/2, f1 1/2
  // class 2: tp 0 -> 0 (support 2)
  // macro = (2/3 + 1/2 + 0) / 3 = 7/18; accuracy = 3/6
  const std::vector<int64_t> t = {0, 0, 1, 1, 2, 2}, p = {0, 0, 0, 1, 0, 1};
  auto m = classification_metrics(t, p, 3);
  REQUIRE(m.size() == 2);
  CHECK(m.at("accuracy") == exact(0.5));
  CHECK(m.at("f1") == exact(7.0 / 18.0));

  auto s = per_class_scores(t, p);
  REQUIRE(s.size() == 3);
  CHECK(s[0].label == 0);
  CHECK(s[0].precision == exact(0.5));
  CHECK(s[0].recall == exact(1.0));
  CHECK(s[0].f1 == exact(2.0 / 3.0));
  CHECK(s[0].support == 2);
  CHECK(s[1].f1 == exact(0.5));
  CHECK(s[2].label == 2);
  CHECK(s[2].precision == exact(0.0));
  CHECK(s[2].recall == exact(0.0));
  CHECK(s[2].f1 == exact(0.0));
  CHECK(s[2].support == 2);
}

TEST_CASE("macro-F1: union of labels vs an explicit label set", "[metrics]") {
  // y_true 0 1 0 1 / y_pred 0 1 1 1; class 2 occurs nowhere.
  // class 0: tp 1, fn 1 -> p 1, r 1/2, f1 2/3;  class 1: tp 2, fp 1 -> p 2/3, r 1, f1 4/5
  // union {0, 1}: (2/3 + 4/5) / 2 = 11/15;  labels {0, 1, 2}: (2/3 + 4/5 + 0) / 3 = 22/45
  const std::vector<int64_t> t = {0, 1, 0, 1}, p = {0, 1, 1, 1};
  CHECK(macro_f1(t, p) == exact(11.0 / 15.0));
  CHECK(classification_metrics(t, p, 3).at("f1") == exact(11.0 / 15.0));
  CHECK(macro_f1(t, p, {0, 1, 2}) == exact(22.0 / 45.0));
  // Labels not listed are ignored: only class 1 -> 4/5.
  CHECK(macro_f1(t, p, {1}) == exact(0.8));
  auto s = per_class_scores(t, p, {2, 0});
  REQUIRE(s.size() == 2);
  CHECK(s[0].label == 2);
  CHECK(s[0].f1 == exact(0.0));
  CHECK(s[1].label == 0);
  CHECK(s[1].f1 == exact(2.0 / 3.0));
  CHECK(accuracy(t, p) == exact(0.75));
}

TEST_CASE("classification metrics reject bad input with a UserError naming the metric", "[metrics]") {
  REQUIRE_USER_ERROR(classification_metrics({0, 1, 1}, {0, 1}, 2),
                     "classification_metrics: y_true has 3 entries but y_pred has 2");
  REQUIRE_USER_ERROR(accuracy({}, {}), "accuracy: no examples");
  REQUIRE_USER_ERROR(classification_metrics({0, 3}, {0, 1}, 3),
                     "classification_metrics: y_true[1] = 3 is not a class id (expected 0..2)");
  REQUIRE_USER_ERROR(classification_metrics({0, 1}, {-1, 1}, 3), "y_pred[0] = -1");
  REQUIRE_USER_ERROR(macro_f1({0}, {0}, {1, 1}), "label 1 is listed twice");
}

TEST_CASE("multilabel micro vs macro F1 and subset accuracy", "[metrics]") {
  // rows:   true      pred
  //   0    1 1 0     1 0 0
  //   1    0 1 0     0 1 1
  //   2    1 0 0     1 0 0
  // col 0: tp 2 -> f1 1;  col 1: tp 1, fn 1 -> 2/(2+1) = 2/3;  col 2: fp 1 -> 0
  // micro: TP 3, FP 1, FN 1 -> 6/8 = 0.75;  macro: (1 + 2/3 + 0)/3 = 5/9;  subset: row 2 -> 1/3
  const LabelMatrix t = {{1, 1, 0}, {0, 1, 0}, {1, 0, 0}};
  const LabelMatrix p = {{1, 0, 0}, {0, 1, 1}, {1, 0, 0}};
  auto m = multilabel_metrics(t, p);
  REQUIRE(m.size() == 3);
  CHECK(m.at("micro_f1") == exact(0.75));
  CHECK(m.at("macro_f1") == exact(5.0 / 9.0));
  CHECK(m.at("subset_accuracy") == exact(1.0 / 3.0));

  auto s = multilabel_per_label_scores(t, p);
  REQUIRE(s.size() == 3);
  CHECK(s[1].precision == exact(1.0));
  CHECK(s[1].recall == exact(0.5));
  CHECK(s[1].support == 2);
  CHECK(s[2].precision == exact(0.0));

  // The same as label-index sets. With a 4th, never used label the macro mean gains a 0 column:
  // (1 + 2/3 + 0 + 0)/4 = 5/12; micro is unchanged.
  const std::vector<std::vector<int64_t>> ts = {{0, 1}, {1}, {0}}, ps = {{0}, {2, 1}, {0, 0}};
  CHECK(multilabel_metrics_from_sets(ts, ps, 3) == m);
  auto m4 = multilabel_metrics_from_sets(ts, ps, 4);
  CHECK(m4.at("macro_f1") == exact(5.0 / 12.0));
  CHECK(m4.at("micro_f1") == exact(0.75));
  CHECK(indicator_matrix({{2, 0}}, 3) == LabelMatrix{{1, 0, 1}});
}

TEST_CASE("multilabel metrics reject bad input", "[metrics]") {
  REQUIRE_USER_ERROR(multilabel_metrics({{1, 0}}, {{1, 0}, {0, 1}}),
                     "multilabel_metrics: y_true has 1 entries but y_pred has 2");
  REQUIRE_USER_ERROR(multilabel_metrics({{1, 0}, {1}}, {{1, 0}, {0, 1}}), "y_true[1] has 1 columns (expected 2");
  REQUIRE_USER_ERROR(multilabel_metrics({{1, 0}}, {{2, 0}}), "y_pred[0][0] = 2 (expected 0 or 1)");
  REQUIRE_USER_ERROR(multilabel_metrics({}, {}), "multilabel_metrics: no examples");
  REQUIRE_USER_ERROR(multilabel_metrics_from_sets({{0}}, {{3}}, 3), "example 0 has label 3 (expected 0..2)");
}

TEST_CASE("main metric per task", "[metrics]") {
  CHECK(main_metric(MetricKind::classification) == "accuracy");
  CHECK(main_metric(MetricKind::multilabel) == "micro_f1");
  CHECK(main_metric(MetricKind::regression) == "pearson");
  CHECK(main_metric(MetricKind::token) == "f1");
  CHECK(main_metric(MetricKind::span) == "f1");
  CHECK(main_metric(metric_kind_for_task("token_classification")) == "f1");
  CHECK(metric_kind_for_task("span_extraction") == MetricKind::span);
  CHECK(metric_kind_for_task("regression") == MetricKind::regression);
  REQUIRE_USER_ERROR(metric_kind_for_task("ner"), "unknown task 'ner'");
}
