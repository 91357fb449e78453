// Test helper: the crafted inputs of tests/fuzz/corpus/<parser>/ (written by make_crafted.py there).
#pragma once
#include <filesystem>
#include <string>

namespace unif::test {

/// tests/fuzz/corpus/<parser>/<name>, e.g. corpus_file("torch_bin", "many_keys.bin").
inline std::filesystem::path corpus_file(const std::string& parser, const std::string& name) {
  return std::filesystem::path(UNIF_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / parser / name;
}

}  // namespace unif::test
