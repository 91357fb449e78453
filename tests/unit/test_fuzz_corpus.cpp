// Replays the fuzz corpus: every file of every target's folders under
// tests/fuzz/corpus/ goes through the same function as the libFuzzer binary (tests/fuzz/targets.h),
// each in a child process. Seeds must be accepted or refused with a UserError; so must every input
// a fuzzer found (crash-, leak-, timeout- or check-failing before its fix), which is how each
// finding stays fixed. A crash, an abort (a broken invariant), or another exception fails the case
// and names the file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/child_process.h"
#include "support/fuzz_corpus.h"
#include "tests/fuzz/targets.h"

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<fs::path> corpus_files(const std::string& folder) {
  std::vector<fs::path> files;
  const auto dir = unif::test::corpus_file(folder, "");
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() != ".py") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("fuzz corpus: every seed and finding is accepted or refused with an error", "[unit][fuzz]") {
  int files = 0;
  for (const auto& target : unif::fuzz::targets()) {
    int accepted = 0, refused = 0;
    for (const auto& folder : target.corpus) {
      for (const auto& file : corpus_files(folder)) {
        const std::string input = read_file(file);
        const auto r = unif::test::run_in_child([&] {
          const bool ok = target.run(input);
          unif::fuzz::remove_scratch();
          return std::string(ok ? "accepted" : "refused");
        });
        INFO("target " << target.name << ", " << file.string() << ": " << r.describe());
        CHECK(r.signal == 0);
        CHECK((r.result == "ok: accepted" || r.result == "ok: refused"));
        accepted += r.result == "ok: accepted";
        refused += r.result == "ok: refused";
        ++files;
      }
    }
    // Each target has seeds it accepts, so the replay reaches past the first check.
    INFO("target " << target.name << ": " << accepted << " accepted, " << refused << " refused");
    CHECK(accepted > 0);
  }
  CHECK(files > 30);
}
