// JSON from user files (data lines, config.json, safetensors headers). nlohmann's parser and
// destructor are iterative, but copying, dump() and comparing a json recurse once per nesting
// level: ~100k levels (a 200 KB line of '[') overflow the stack. parse_json refuses text nested
// deeper than kMaxJsonDepth before building anything, so every json it returns is safe to copy
// and print; json_excerpt quotes a value in an error message without printing megabytes of it.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace unif {

/// Deepest nesting of arrays/objects parse_json accepts (real configs and data use a handful).
constexpr std::size_t kMaxJsonDepth = 256;

/// Thrown by parse_json. what() says what is wrong but names no file: the caller adds that.
struct JsonInputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Parses `text` as one JSON value. Throws JsonInputError with nlohmann's message for invalid
/// JSON, or "nested deeper than N levels at byte B" for nesting beyond kMaxJsonDepth.
nlohmann::json parse_json(std::string_view text);

/// `value` as compact JSON, cut to about `max_chars` characters ("..." marks the cut); invalid
/// UTF-8 in strings is shown as U+FFFD instead of throwing.
std::string json_excerpt(const nlohmann::json& value, std::size_t max_chars = 80);

}  // namespace unif
