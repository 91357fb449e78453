#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "framework/common/runtime.h"

TEST_CASE("init_runtime makes OpenMP threads wait passively", "[unit][runtime]") {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  REQUIRE(policy != nullptr);
  // Either the user's own choice or ours; ours is PASSIVE.
  if (std::getenv("UNIF_NO_REEXEC") != nullptr) REQUIRE(std::string(policy) == "PASSIVE");
  REQUIRE(unif::available_cores() >= 1);
}
