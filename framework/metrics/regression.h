// Regression metrics: Pearson and Spearman correlation (scipy.stats semantics, average ranks
// for ties) and mean squared error. Pure C++, no Torch.
//
// Constant inputs: scipy returns NaN for a correlation with a constant vector (zero variance).
// Here pearson() and spearman() return 0.0 instead, so a metrics line is always valid JSON and
// "best checkpoint" comparisons stay well defined. A single example is constant by definition.
#pragma once
#include <vector>

#include "framework/metrics/metric_set.h"

namespace unif::framework {

/// r = Σ(x-x̄)(y-ȳ) / sqrt(Σ(x-x̄)² · Σ(y-ȳ)²); 0.0 when either input is constant.
double pearson(const std::vector<double>& x, const std::vector<double>& y);

/// 1-based ranks, ties get the mean of the ranks they span (scipy.stats.rankdata "average"):
/// {10, 20, 20, 30} -> {1, 2.5, 2.5, 4}.
std::vector<double> average_ranks(const std::vector<double>& values);

/// Pearson correlation of the average ranks (scipy.stats.spearmanr); 0.0 when either input is
/// constant.
double spearman(const std::vector<double>& x, const std::vector<double>& y);

/// Mean of (y_pred - y_true)².
double mse(const std::vector<double>& y_true, const std::vector<double>& y_pred);

/// {"pearson", "spearman", "mse"}. UserError on different lengths, empty input, or a
/// non-finite value (named by position).
MetricSet regression_metrics(const std::vector<double>& y_true, const std::vector<double>& y_pred);

}  // namespace unif::framework
