// Test helpers: a file's bytes as a string, and a string written as a file's bytes.
#pragma once
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace unif::test {

/// The bytes of `file` ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Writes `bytes` as the whole of `file`.
inline void spit(const std::filesystem::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Writes `text` as the whole of `file` (a config, a JSON line).
inline void write_text(const std::filesystem::path& file, const std::string& text) { spit(file, text); }

}  // namespace unif::test
