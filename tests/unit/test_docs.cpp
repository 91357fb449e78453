// Docs that must not drift from the code: docs/spec.md §8's key table against the keys the config
// parser accepts, and docs/cpp-api.md's example against the compiled program it shows.
#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

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
      problems += "\n  key '" + k + "' is accepted by the config parser but missing from docs/spec.md section 8: "
                  "add a row | `" + k + "` | default | meaning |";
  for (const auto& k : documented)
    if (!in_parser.count(k))
      problems += "\n  key '" + k + "' is listed in docs/spec.md section 8 but the config parser does not accept it: "
                  "remove the row or add the key to framework/config/run_config.cpp";
  std::set<std::string> seen;
  for (const auto& k : documented)
    if (!seen.insert(k).second) problems += "\n  key '" + k + "' has two rows in docs/spec.md section 8";
  INFO("docs/spec.md section 8 vs the parser:" << problems);
  CHECK(problems.empty());
}

TEST_CASE("docs/cpp-api.md shows tests/install/consumer/train_api.cpp verbatim", "[unit][docs]") {
  const std::string doc = read_text("docs/cpp-api.md");
  const std::string file = read_text("tests/install/consumer/train_api.cpp");
  const std::string begin = "<!-- BEGIN tests/install/consumer/train_api.cpp -->\n```cpp\n";
  const std::string end = "```\n<!-- END tests/install/consumer/train_api.cpp -->";
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
    INFO("line " << line << " of train_api.cpp: the doc shows '" << (more_a ? la : "(end)") << "', the file has '"
                  << (more_f ? lf : "(end)") << "' (copy the file into the doc's block)");
    REQUIRE((more_a == more_f && la == lf));
  }
  CHECK(shown == file);
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
    for (auto dot = key.rfind('.'); !named && dot != std::string::npos; dot = dot ? key.rfind('.', dot - 1) : std::string::npos) {
      named = section.find("`" + key.substr(0, dot) + ".*`") != std::string::npos;
      if (dot == 0) break;
    }
    if (!named) missing += " " + key;
  }
  INFO("keys the Resume section does not place (identity, or may change):" << missing);
  CHECK(missing.empty());
}
