// Test helper: a Catch2 Approx that only forgives double rounding (metrics computed two ways).
#pragma once
#include <catch2/catch.hpp>

namespace unif::test {

inline Catch::Detail::Approx exact(double v) { return Catch::Detail::Approx(v).epsilon(1e-12).margin(1e-12); }

}  // namespace unif::test
