// `unif help keys` reads docs/spec.md's section 8 table (framework/config/key_docs): every key the
// parser accepts has a row with a default, markdown is removed, the text is one aligned line a key.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "framework/config/config_keys.h"
#include "framework/config/key_docs.h"

using namespace unif::framework;

namespace {

std::string spec_md() {
  std::ifstream in(std::string(UNIF_SOURCE_DIR) + "/docs/spec.md", std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("the key table of docs/spec.md gives a row with a default for every key the parser accepts",
          "[unit][config][docs]") {
  const auto rows = parse_key_docs(spec_md());
  std::set<std::string> documented;
  for (const auto& r : rows) {
    INFO(r.key);
    CHECK(!r.default_value.empty());
    CHECK(r.key.find('`') == std::string::npos);
    documented.insert(r.key);
  }
  for (const auto& k : config_keys()) {
    INFO("key " << k << " has no row in docs/spec.md section 8");
    CHECK(documented.count(k) == 1);
  }
}

TEST_CASE("key docs: markdown removed, escaped bars, one line a key, sections apart", "[unit][config][docs]") {
  const std::string md =
      "# t\n\n## 8. Every config key\n\n| key | default | meaning |\n| --- | --- | --- |\n"
      "| `task` | classification | classification \\| regression |\n"
      "| `seed` | 42 | top-level keys stay together |\n"
      "| `model.vocab` | `<pretrained>/vocab.txt` | filled in by the loader; required without `model.pretrained` |\n"
      "| `model.x` | 1 | in (0, 1]; see a (b; c). More, e.g. this |\n"
      "\n### Resume\n| `not.a.row` | 1 | a later table of section 8 |\n"
      "\n## 9. Next\n| `other` | 2 | not section 8 |\n";
  const auto rows = parse_key_docs(md);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].key == "task");
  CHECK(rows[0].meaning == "classification | regression");
  CHECK(rows[2].default_value == "<pretrained>/vocab.txt");
  const std::string text = format_key_docs(rows);
  CHECK_THAT(text, Catch::StartsWith("task         classification    classification | regression\n"
                                     "seed         42                top-level keys stay together\n\nmodel.vocab  "));
  CHECK_THAT(text, Catch::Contains("model.vocab  <pretrained>/vocab.txt  filled in by the loader\n"));
  CHECK_THAT(text, Catch::Contains("model.x      1                 in (0, 1]\n"));
  CHECK(parse_key_docs("no table").empty());
}
