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
  } catch (const unif::JsonInputError& e) { return e.what(); }
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

// nlohmann quotes the bytes read before the error and stops after the lead
// byte of a multi-byte character; the message ended in a stray byte that is not UTF-8. Checked to
// fail before the fix: "last read: '\xE4'" (no 你, and the valid() check fails).
TEST_CASE("parse_json error messages are valid UTF-8 at a multi-byte character", "[unit]") {
  // A UTF-8 validity check by the standard decoding rules (shortest forms, no surrogates).
  const auto valid = [](const std::string& s) {
    for (size_t i = 0; i < s.size();) {
      const auto c = static_cast<unsigned char>(s[i]);
      size_t len = c < 0x80                   ? 1
                   : (c >= 0xC2 && c <= 0xDF) ? 2
                   : (c >= 0xE0 && c <= 0xEF) ? 3
                   : (c >= 0xF0 && c <= 0xF4) ? 4
                                              : 0;
      if (len == 0 || i + len > s.size()) return false;
      for (size_t k = 1; k < len; ++k)
        if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
      i += len;
    }
    return true;
  };
  const auto a = parse_error("你好");
  CHECK(valid(a));
  CHECK_THAT(a, Contains("last read: '你'"));
  const auto b = parse_error(R"({"text": 北京})");
  CHECK(valid(b));
  CHECK_THAT(b, Contains("北"));
  const auto c = parse_error("é");
  CHECK(valid(c));
  CHECK_THAT(c, Contains("'é'"));
  // A lead byte the text does not continue (invalid UTF-8 in the input itself) becomes U+FFFD.
  const auto d = parse_error("\xE4x");
  CHECK(valid(d));
  CHECK_FALSE(d.empty());
}
