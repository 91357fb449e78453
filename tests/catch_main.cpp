// The Catch2 main of every test executable: same thread set-up as the `unif` binary.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "framework/common/runtime.h"

int main(int argc, char** argv) {
  unif::init_runtime(argc, argv);
  return Catch::Session().run(argc, argv);
}
