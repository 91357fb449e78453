// Unit tests for unif::metrics regression metrics, expected values worked out by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "framework/common/error.h"
#include "framework/metrics/regression.h"
#include "support/approx.h"

using namespace unif::framework;

#define REQUIRE_USER_ERROR(expr, text)                \
  do {                                                \
    REQUIRE_THROWS_AS(expr, unif::UserError);         \
    REQUIRE_THROWS_WITH(expr, Catch::Contains(text)); \
  } while (0)

using unif::test::exact;

TEST_CASE("Pearson and MSE on a hand-worked example", "[metrics]") {
  // x 1 2 3 4 (mean 2.5), y 2 4 5 9 (mean 5): dx -1.5 -.5 .5 1.5, dy -3 -1 0 4
  // Σdxdy = 4.5 + .5 + 0 + 6 = 11, Σdx² = 5, Σdy² = 26 -> r = 11 / sqrt(130)
  // MSE: diffs 1 2 2 5 -> (1 + 4 + 4 + 25) / 4 = 8.5; ranks are equal -> Spearman 1
  const std::vector<double> t = {1, 2, 3, 4}, p = {2, 4, 5, 9};
  auto m = regression_metrics(t, p);
  REQUIRE(m.size() == 3);
  CHECK(m.at("pearson") == exact(11.0 / std::sqrt(130.0)));
  CHECK(m.at("spearman") == exact(1.0));
  CHECK(m.at("mse") == exact(8.5));
  CHECK(pearson(t, p) == exact(11.0 / std::sqrt(130.0)));
  CHECK(pearson({1, 2, 3}, {3, 2, 1}) == exact(-1.0));
}

TEST_CASE("Spearman with ties uses average ranks", "[metrics]") {
  CHECK(average_ranks({10, 20, 20, 30}) == std::vector<double>{1, 2.5, 2.5, 4});
  CHECK(average_ranks({3, 1, 3, 3}) == std::vector<double>{3, 1, 3, 3});  // 3s span ranks 2..4
  // x 1 2 2 3 -> ranks 1 2.5 2.5 4; y 1 3 2 4 -> ranks 1 3 2 4 (both mean 2.5)
  // d_x -1.5 0 0 1.5, d_y -1.5 .5 -.5 1.5: Σ = 4.5, Σd_x² = 4.5, Σd_y² = 5
  // rho = 4.5 / sqrt(22.5) = sqrt(0.9)
  CHECK(spearman({1, 2, 2, 3}, {1, 3, 2, 4}) == exact(std::sqrt(0.9)));
}

TEST_CASE("Constant inputs give correlation 0, not NaN", "[metrics]") {
  CHECK(pearson({1, 1, 1}, {1, 2, 3}) == 0.0);
  CHECK(spearman({1, 2, 3}, {5, 5, 5}) == 0.0);
  auto one = regression_metrics({2.0}, {3.0});  // a single example is constant
  CHECK(one.at("pearson") == 0.0);
  CHECK(one.at("spearman") == 0.0);
  CHECK(one.at("mse") == exact(1.0));
}

TEST_CASE("Regression metrics reject bad input", "[metrics]") {
  REQUIRE_USER_ERROR(regression_metrics({1, 2}, {1}), "regression_metrics: y_true has 2 entries but y_pred has 1");
  REQUIRE_USER_ERROR(mse({}, {}), "mse: no examples");
  REQUIRE_USER_ERROR(regression_metrics({1, std::numeric_limits<double>::quiet_NaN()}, {1, 2}),
                     "y_true[1] is not a finite number");
  REQUIRE_USER_ERROR(spearman({1, 2}, {1, 2, 3}), "spearman: x has 2 entries but y has 3");
}
