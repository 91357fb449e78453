// Internal to unif::metrics: the input checks every metric shares, each throwing a UserError
// that names the metric and what was expected. Not installed API; include only from .cpp files.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "framework/common/error.h"

namespace unif::framework::detail {

/// Throws UserError("<metric>: <a_name> has N entries but <b_name> has M (expected equal lengths)").
inline void check_same_length(const std::string& metric, std::size_t a, std::size_t b,
                              const std::string& a_name = "y_true", const std::string& b_name = "y_pred") {
  if (a != b) {
    throw UserError(metric + ": " + a_name + " has " + std::to_string(a) + " entries but " + b_name + " has " +
                    std::to_string(b) + " (expected equal lengths)");
  }
}

/// True positives, false positives and false negatives of one label.
struct Counts {
  int64_t tp = 0, fp = 0, fn = 0;
};

/// num / den, 0 when den is 0 (precision, recall or F1 with nothing to count).
inline double safe_div(double num, double den) { return den > 0.0 ? num / den : 0.0; }

/// Throws UserError("<metric>: no examples (expected at least one)") when n == 0.
inline void check_not_empty(const std::string& metric, std::size_t n) {
  if (n == 0) throw UserError(metric + ": no examples (expected at least one)");
}

}  // namespace unif::framework::detail
