// Regression metrics: Pearson, Spearman (average ranks), MSE. Constant input -> 0.0, not NaN.
#include "framework/metrics/regression.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "framework/metrics/check.h"

namespace unif::framework {
namespace {

void check_inputs(const std::string& metric, const std::vector<double>& a, const std::vector<double>& b,
                  const char* a_name, const char* b_name) {
  detail::check_same_length(metric, a.size(), b.size(), a_name, b_name);
  detail::check_not_empty(metric, a.size());
  auto finite = [&](const std::vector<double>& v, const char* name) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!std::isfinite(v[i])) {
        throw UserError(metric + ": " + name + "[" + std::to_string(i) +
                        "] is not a finite number (expected a finite value)");
      }
    }
  };
  finite(a, a_name);
  finite(b, b_name);
}

// Pearson without input checks. Centered two-pass sums for accuracy.
double pearson_unchecked(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0.0, sxx = 0.0, syy = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double dx = x[i] - mx, dy = y[i] - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (sxx == 0.0 || syy == 0.0) return 0.0;  // constant input: scipy gives NaN, we give 0
  const double r = sxy / std::sqrt(sxx * syy);
  return std::clamp(r, -1.0, 1.0);  // as scipy, clip rounding overshoot
}

}  // namespace

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  check_inputs("pearson", x, y, "x", "y");
  return pearson_unchecked(x, y);
}

std::vector<double> average_ranks(const std::vector<double>& values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    // positions i..j (0-based) hold one tied value: ranks i+1..j+1, mean (i+j)/2 + 1
    const double rank = 0.5 * static_cast<double>(i + j) + 1.0;
    for (std::size_t k = i; k <= j; ++k) ranks[order[k]] = rank;
    i = j + 1;
  }
  return ranks;
}

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  check_inputs("spearman", x, y, "x", "y");
  return pearson_unchecked(average_ranks(x), average_ranks(y));
}

double mse(const std::vector<double>& y_true, const std::vector<double>& y_pred) {
  check_inputs("mse", y_true, y_pred, "y_true", "y_pred");
  double sum = 0.0;
  for (std::size_t i = 0; i < y_true.size(); ++i) {
    const double d = y_pred[i] - y_true[i];
    sum += d * d;
  }
  return sum / static_cast<double>(y_true.size());
}

MetricSet regression_metrics(const std::vector<double>& y_true, const std::vector<double>& y_pred) {
  check_inputs("regression_metrics", y_true, y_pred, "y_true", "y_pred");
  return {{"pearson", pearson_unchecked(y_true, y_pred)},
          {"spearman", pearson_unchecked(average_ranks(y_true), average_ranks(y_pred))},
          {"mse", mse(y_true, y_pred)}};
}

}  // namespace unif::framework
