// Docs that must not drift from the code: docs/spec.md §8's key table against the keys the config
// parser accepts, docs/cpp-api.md's example against the compiled program it shows, and README.md and
// docs/*.md free of references to the project's development history (work periods, issue numbers, a
// contract document that is not in the repository).
#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "framework/config/config_keys.h"

namespace {

std::string read_text(const std::string& rel) {
  std::ifstream in(std::string(UNIF_SOURCE_DIR) + "/" + rel, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The first-column keys of docs/spec.md's "## 8." table: rows "| `a.b` | ... |".
std::vector<std::string> documented_keys() {
  const std::string spec = read_text("docs/spec.md");
  const auto start = spec.find("\n## 8. ");
  REQUIRE(start != std::string::npos);
  const auto end = spec.find("\n## ", start + 1);
  std::istringstream lines(spec.substr(start, end == std::string::npos ? std::string::npos : end - start));
  const std::regex row(R"(^\|\s*`([A-Za-z0-9_.]+)`\s*\|)");
  std::vector<std::string> keys;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) keys.push_back(m[1]);
  }
  return keys;
}

}  // namespace

TEST_CASE("docs/spec.md section 8 lists exactly the keys the config parser accepts", "[unit][docs]") {
  const auto parsed = unif::framework::config_keys();
  const auto documented = documented_keys();
  REQUIRE(parsed.size() > 40);  // the parser's schema was read (not an empty list)
  const std::set<std::string> in_parser(parsed.begin(), parsed.end()), in_doc(documented.begin(), documented.end());
  std::string problems;
  for (const auto& k : parsed)
    if (!in_doc.count(k))
      problems += "\n  key '" + k +
                  "' is accepted by the config parser but missing from docs/spec.md section 8: "
                  "add a row | `" +
                  k + "` | default | meaning |";
  for (const auto& k : documented)
    if (!in_parser.count(k))
      problems += "\n  key '" + k +
                  "' is listed in docs/spec.md section 8 but the config parser does not accept it: "
                  "remove the row or add the key to framework/config/run_config.cpp";
  std::set<std::string> seen;
  for (const auto& k : documented)
    if (!seen.insert(k).second) problems += "\n  key '" + k + "' has two rows in docs/spec.md section 8";
  INFO("docs/spec.md section 8 vs the parser:" << problems);
  CHECK(problems.empty());
}

// docs/cpp-api.md shows `file` (a path from the source root) verbatim between its BEGIN / END markers.
static void check_shown_verbatim(const std::string& path) {
  const std::string doc = read_text("docs/cpp-api.md");
  const std::string file = read_text(path);
  const std::string begin = "<!-- BEGIN " + path + " -->\n```cpp\n";
  const std::string end = "```\n<!-- END " + path + " -->";
  const auto b = doc.find(begin);
  REQUIRE(b != std::string::npos);
  const auto e = doc.find(end, b);
  REQUIRE(e != std::string::npos);
  const std::string shown = doc.substr(b + begin.size(), e - b - begin.size());
  // On a difference, the first line that differs.
  std::istringstream a(shown), f(file);
  std::string la, lf;
  int line = 0;
  while (true) {
    const bool more_a = static_cast<bool>(std::getline(a, la)), more_f = static_cast<bool>(std::getline(f, lf));
    ++line;
    if (!more_a && !more_f) break;
    INFO("line " << line << " of " << path << ": the doc shows '" << (more_a ? la : "(end)") << "', the file has '"
                 << (more_f ? lf : "(end)") << "' (copy the file into the doc's block)");
    REQUIRE((more_a == more_f && la == lf));
  }
  CHECK(shown == file);
}

TEST_CASE("docs/cpp-api.md shows tests/install/consumer/train_api.cpp verbatim", "[unit][docs]") {
  check_shown_verbatim("tests/install/consumer/train_api.cpp");
}

TEST_CASE("docs/cpp-api.md shows tests/install/consumer/predict_api.cpp verbatim", "[unit][docs]") {
  check_shown_verbatim("tests/install/consumer/predict_api.cpp");
}

TEST_CASE("docs/spec.md's Resume section says of every config key whether it may change on resume", "[unit][docs]") {
  const std::string spec = read_text("docs/spec.md");
  const auto start = spec.find("\n### Resume\n");
  REQUIRE(start != std::string::npos);
  const auto end = spec.find("\n### ", start + 1);
  const std::string section = spec.substr(start, end == std::string::npos ? std::string::npos : end - start);
  std::string missing;
  for (const auto& key : unif::framework::config_keys()) {
    bool named = section.find("`" + key + "`") != std::string::npos;
    // `a.b.*` names every key under a.b.
    for (auto dot = key.rfind('.'); !named && dot != std::string::npos;
         dot = dot ? key.rfind('.', dot - 1) : std::string::npos) {
      named = section.find("`" + key.substr(0, dot) + ".*`") != std::string::npos;
      if (dot == 0) break;
    }
    if (!named) missing += " " + key;
  }
  INFO("keys the Resume section does not place (identity, or may change):" << missing);
  CHECK(missing.empty());
}

namespace {

/// README.md and every docs/*.md, sorted.
std::vector<std::string> user_docs() {
  std::vector<std::string> files{"README.md"};
  DIR* dir = opendir((std::string(UNIF_SOURCE_DIR) + "/docs").c_str());
  REQUIRE(dir != nullptr);
  std::vector<std::string> pages;
  while (const dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".md") == 0) pages.push_back("docs/" + name);
  }
  closedir(dir);
  std::sort(pages.begin(), pages.end());
  files.insert(files.end(), pages.begin(), pages.end());
  return files;
}

/// `line` with its inline code spans (`...`) blanked out.
std::string without_code_spans(const std::string& line) {
  std::string out = line;
  for (auto open = out.find('`'); open != std::string::npos;) {
    const auto close = out.find('`', open + 1);
    if (close == std::string::npos) break;
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(open), out.begin() + static_cast<std::ptrdiff_t>(close) + 1,
              ' ');
    open = out.find('`', close + 1);
  }
  return out;
}

}  // namespace

TEST_CASE("README.md and docs/*.md speak to users, not of the project's development history", "[unit][docs]") {
  const auto icase = std::regex::ECMAScript | std::regex::icase;
  // Checked on every line, code blocks included.
  const std::vector<std::pair<std::regex, std::string>> anywhere{
      {std::regex(R"(\bsessions? [0-9])", icase), "a numbered work period (\"session N\")"},
      {std::regex(R"(\bstops? [0-9])", icase), "a numbered work period (\"stop N\")"},
      {std::regex(R"(\bissues? #?[0-9])", icase), "an issue number"},
      {std::regex(R"(SPEC §)"), "a section of SPEC.md, which is not in the repository"},
  };
  // Checked outside code blocks and code spans: "#12" is an issue number there (not "&#12;").
  const std::regex hash_number(R"((^|[^&\w])#[0-9]{1,3}\b)");
  std::string problems;
  for (const auto& file : user_docs()) {
    std::istringstream lines(read_text(file));
    bool in_fence = false;
    int number = 0;
    for (std::string line; std::getline(lines, line);) {
      ++number;
      const auto first = line.find_first_not_of(" \t");
      const bool fence = first != std::string::npos && line.compare(first, 3, "```") == 0;
      for (const auto& [re, what] : anywhere)
        if (std::regex_search(line, re))
          problems += "\n  " + file + ":" + std::to_string(number) + ": " + what + ": " + line;
      if (fence) in_fence = !in_fence;
      if (!fence && !in_fence && std::regex_search(without_code_spans(line), hash_number))
        problems += "\n  " + file + ":" + std::to_string(number) + ": an issue number (\"#N\"): " + line;
    }
  }
  INFO("say what is true of the program today, with dates for measurements, instead of:" << problems);
  CHECK(problems.empty());
}
