// Test helper: the reference training configs shipped with the tiny-bert-zh fixture
// (tests/fixtures/tiny-bert-zh/reference/train/<case>/<method>/<file>.yaml) hold the placeholders
// @CKPT_DIR@, @CASE_DIR@ and @OUTPUT_DIR@; this reads one with them filled in.
#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace unif::test {

inline const std::filesystem::path kTinyBertZh = std::filesystem::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";
/// Every family's tiny checkpoints and HF references (tests/fixtures/families).
inline const std::filesystem::path kFamilies = std::filesystem::path(UNIF_TEST_FIXTURES) / "families";

/// The fixture case directory, e.g. fixture_case("cls_pair").
inline std::filesystem::path fixture_case(const std::string& name) {
  return kTinyBertZh / "reference" / "train" / name;
}

/// Text of fixture_case(kase)/method/file with the placeholders replaced; output_dir = `out`.
inline std::string fixture_config(const std::string& kase, const std::string& method, const std::string& file,
                                  const std::filesystem::path& out) {
  const auto case_dir = fixture_case(kase);
  std::ifstream in(case_dir / method / file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::pair<std::string, std::string> fills[] = {
      {"@CKPT_DIR@", kTinyBertZh.string()}, {"@CASE_DIR@", case_dir.string()}, {"@OUTPUT_DIR@", out.string()}};
  for (const auto& [from, to] : fills)
    for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + to.size()))
      text.replace(p, from.size(), to);
  return text;
}

}  // namespace unif::test
