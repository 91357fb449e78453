// unif::parse_json (the nesting guard every reader of user JSON goes through) and json_excerpt.
#include <catch2/catch.hpp>

#include <string>

#include "framework/common/json_input.h"

using Catch::Matchers::Contains;

namespace {

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string parse_error(const std::string& text) {
  try {
    unif::parse_json(text);
  } catch (const unif::JsonInputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("parse_json accepts nesting up to kMaxJsonDepth and refuses deeper", "[unit]") {
  CHECK(unif::parse_json(nested(unif::kMaxJsonDepth)).is_array());
  CHECK_THAT(parse_error("{\"a\": " + nested(unif::kMaxJsonDepth) + "}"),
             Contains("nested deeper than 256 levels at byte 261"));
  // Brackets inside strings, escaped quotes included, are text.
  const auto j = unif::parse_json("{\"s\": \"\\\"" + std::string(1000, '[') + "\"}");
  CHECK(j["s"].get<std::string>().size() == 1001);
  CHECK_THAT(parse_error("{\"a\": nope}"), Contains("parse_error"));
}

TEST_CASE("json_excerpt cuts long values and never throws on bad UTF-8", "[unit]") {
  CHECK(unif::json_excerpt(nlohmann::json::array({1, 2})) == "[1,2]");
  const auto cut = unif::json_excerpt(nlohmann::json(std::vector<int>(1000, 7)), 10);
  CHECK(cut == "[7,7,7,7,7...");
  CHECK(unif::json_excerpt(nlohmann::json("a\xff")) == "\"a\xEF\xBF\xBD\"");
}
