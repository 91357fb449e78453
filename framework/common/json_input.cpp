#include "framework/common/json_input.h"

namespace unif {

namespace {

// Offset of the bracket that first opens level `limit + 1`, or npos. Brackets inside strings do
// not count. Only exact for valid JSON, which is all that matters: anything else fails to parse.
std::size_t too_deep_at(std::string_view text, std::size_t limit) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

}  // namespace

nlohmann::json parse_json(std::string_view text) {
  if (const auto at = too_deep_at(text, kMaxJsonDepth); at != std::string_view::npos)
    throw JsonInputError("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels at byte " +
                         std::to_string(at));
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw JsonInputError(e.what());
  }
}

std::string json_excerpt(const nlohmann::json& value, std::size_t max_chars) {
  std::string s = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > max_chars) {
    std::size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
    s = s.substr(0, cut) + "...";
  }
  return s;
}

}  // namespace unif
