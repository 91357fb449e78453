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
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
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

// Length of the UTF-8 sequence a lead byte starts (0: not a lead byte).
std::size_t sequence_length(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

// nlohmann's message quotes the bytes it read up to the error ("last read: '...'"). At a
// multi-byte character it stops after the lead byte, so the message would end in a stray byte
// that is not UTF-8 (shown as garbage). The character is completed from `text` (the parser read
// up to byte `read`); any byte still not UTF-8 becomes U+FFFD.
std::string clean_message(const std::string& msg, std::string_view text, std::size_t read) {
  std::string out;
  for (std::size_t i = 0; i < msg.size();) {
    const auto c = static_cast<unsigned char>(msg[i]);
    const std::size_t len = sequence_length(c);
    std::size_t have = len == 0 ? 0 : 1;
    while (have > 0 && have < len && i + have < msg.size() &&
           (static_cast<unsigned char>(msg[i + have]) & 0xC0) == 0x80)
      ++have;
    if (len > 0 && have == len) {
      out.append(msg, i, len);
      i += len;
      continue;
    }
    // An incomplete sequence: complete it from the text when it continues there.
    std::size_t extra = 0;
    if (len > 1) {
      const std::size_t need = len - have;
      while (extra < need && read + extra < text.size() &&
             (static_cast<unsigned char>(text[read + extra]) & 0xC0) == 0x80)
        ++extra;
      if (extra != need) extra = 0;
    }
    if (extra > 0) {
      out.append(msg, i, have);
      out.append(text.substr(read, extra));
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
    }
    i += have == 0 ? 1 : have;
  }
  return out;
}

}  // namespace

nlohmann::json parse_json(std::string_view text) {
  if (const auto at = too_deep_at(text, kMaxJsonDepth); at != std::string_view::npos)
    throw JsonInputError("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels at byte " +
                         std::to_string(at));
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw JsonInputError(clean_message(e.what(), text, e.byte));
  } catch (const nlohmann::json::exception& e) { throw JsonInputError(clean_message(e.what(), text, 0)); }
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
