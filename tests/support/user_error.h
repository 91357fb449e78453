// Test helper: the message of the unif::UserError that `f` throws, or "" when it throws none (so a
// Catch::Contains check on it fails with the message shown, and `.empty()` asserts success).
#pragma once
#include <functional>
#include <string>

#include "framework/common/error.h"

namespace unif::test {

inline std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const unif::UserError& e) { return e.what(); }
  return "";
}

}  // namespace unif::test
