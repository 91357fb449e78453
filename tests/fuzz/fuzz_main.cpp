// One libFuzzer binary per target of tests/fuzz/targets.h: built with -DUNIF_FUZZ_TARGET="<name>"
// by tests/fuzz/CMakeLists.txt (scripts/fuzz.sh). A UserError is the parser's normal answer to bad
// input; any other exception escapes and libFuzzer reports it (std::terminate -> abort).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "framework/common/error.h"
#include "tests/fuzz/targets.h"

#ifndef UNIF_FUZZ_TARGET
#error "define UNIF_FUZZ_TARGET to a target name of tests/fuzz/targets.cpp"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const unif::fuzz::Target* target = [] {
    const auto* t = unif::fuzz::find_target(UNIF_FUZZ_TARGET);
    if (t == nullptr) {
      std::fprintf(stderr, "no fuzz target '%s'\n", UNIF_FUZZ_TARGET);
      std::abort();
    }
    return t;
  }();
  try {
    target->run({reinterpret_cast<const char*>(data), size});
  } catch (const unif::UserError&) {}
  return 0;
}
