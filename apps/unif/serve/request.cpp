// `unif serve`'s request decoding: see request.h.
#include "apps/unif/serve/request.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "framework/common/json_input.h"

namespace unif::app::serve {

namespace {

// The media type of a Content-Type value, lower-cased, without parameters and spaces.
std::string media_type(std::string_view content_type) {
  content_type = content_type.substr(0, content_type.find(';'));
  std::string t;
  for (char c : content_type)
    if (c != ' ' && c != '\t') t.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return t;
}

bool is_json_type(const std::string& t) {
  return t == "application/json" || (t.size() > 5 && t.compare(t.size() - 5, 5, "+json") == 0);
}

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A decimal number of at most 18 digits (nothing else); nullopt otherwise.
std::optional<size_t> decimal(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  size_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<size_t>(c - '0');
  }
  return v;
}

// The body of a chunked request starting at `at`: Complete with the request's size, Incomplete,
// or Unframed. Chunk sizes are hex digits (an extension after them is ignored); the last chunk
// (size 0) is followed by an empty line.
RequestFrame::State frame_chunks(std::string_view bytes, size_t at, size_t max_body, size_t& size) {
  using State = RequestFrame::State;
  constexpr size_t kMaxChunkLine = 1024;
  size_t body = 0;
  for (;;) {
    const size_t eol = bytes.find("\r\n", at);
    if (eol == std::string_view::npos) return bytes.size() - at > kMaxChunkLine ? State::Unframed : State::Incomplete;
    if (eol - at > kMaxChunkLine) return State::Unframed;
    size_t chunk = 0, digits = 0;
    for (size_t i = at; i < eol && std::isxdigit(static_cast<unsigned char>(bytes[i])); ++i, ++digits) {
      const char c = lower(bytes[i]);
      chunk = chunk * 16 + static_cast<size_t>(c <= '9' ? c - '0' : c - 'a' + 10);
      if (chunk > max_body) return State::Unframed;
    }
    if (digits == 0) return State::Unframed;
    at = eol + 2;
    if (chunk == 0) {  // the last chunk, then an empty line (no trailer fields)
      const std::string_view end = bytes.substr(at, 2);
      if (end != std::string_view("\r\n").substr(0, end.size())) return State::Unframed;
      if (end.size() < 2) return State::Incomplete;
      size = at + 2;
      return State::Complete;
    }
    body += chunk;
    if (body > max_body) return State::Unframed;
    if (bytes.size() < at + chunk + 2) return State::Incomplete;
    if (bytes.substr(at + chunk, 2) != "\r\n") return State::Unframed;
    at += chunk + 2;
  }
}

// A header value for a message: printable ASCII kept, any other byte (a header may hold anything,
// invalid UTF-8 too, which a JSON answer cannot carry) as '?', at most 100 bytes.
std::string printable(std::string_view value) {
  std::string out(value.substr(0, 100));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7E) c = '?';
  return out;
}

}  // namespace

JsonBody decode_json_body(std::string_view body, std::string_view content_type) {
  JsonBody r;
  const auto type = media_type(content_type);
  if (!type.empty() && !is_json_type(type)) {
    r.status = 415;
    r.error = "Content-Type must be application/json, not '" + printable(content_type) + "'";
    return r;
  }
  try {
    r.value = parse_json(body);
  } catch (const JsonInputError& e) {
    r.status = 400;
    r.error = std::string("invalid JSON: ") + e.what();
  } catch (const std::exception& e) {  // nlohmann's own errors, should parse_json let one through
    r.status = 400;
    r.error = std::string("invalid JSON: ") + e.what();
  }
  return r;
}

PredictRequest decode_predict_request(std::string_view body, std::string_view content_type) {
  PredictRequest r;
  JsonBody decoded = decode_json_body(body, content_type);
  if (decoded.status != 200) {
    r.status = decoded.status;
    r.error = std::move(decoded.error);
    return r;
  }
  nlohmann::json& j = decoded.value;
  if (!j.is_object() || !j.contains("inputs") || !j.at("inputs").is_array()) {
    r.status = 400;
    r.error = "expected a JSON object {\"inputs\": [record, ...]}";
    return r;
  }
  auto& inputs = j.at("inputs");
  r.inputs.reserve(inputs.size());
  for (auto& record : inputs) r.inputs.push_back(std::move(record));
  return r;
}

RequestFrame frame_request(std::string_view bytes, size_t max_body) {
  using State = RequestFrame::State;
  RequestFrame f;
  const size_t line_end = bytes.find("\r\n");
  if (line_end != std::string_view::npos && line_end <= kMaxRequestHead) {
    const std::string_view line = bytes.substr(0, line_end);
    const size_t sp = line.find(' ');
    f.method = std::string(line.substr(0, sp));
    if (sp != std::string_view::npos) {
      const size_t sp2 = line.find(' ', sp + 1);
      f.target = std::string(line.substr(sp + 1, sp2 == std::string_view::npos ? sp2 : sp2 - sp - 1));
    }
  }
  const size_t head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string_view::npos || head_end + 4 > kMaxRequestHead) {
    f.state = bytes.size() > kMaxRequestHead ? State::Unframed : State::Incomplete;
    return f;
  }
  const size_t body_start = head_end + 4;
  const auto unframed = [&f] {
    f.state = State::Unframed;
    return f;
  };
  // The header fields that frame the body.
  std::optional<size_t> length;
  bool chunked = false, transfer_encoding = false, expect_continue = false;
  for (size_t at = line_end + 2; at < head_end + 2;) {
    const size_t eol = bytes.find("\r\n", at);
    const std::string_view field = bytes.substr(at, eol - at);
    at = eol + 2;
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = trim(field.substr(0, colon)), value = trim(field.substr(colon + 1));
    if (iequals(name, "Content-Length")) {
      const auto n = decimal(value);
      if (!n || (length && *length != *n)) return unframed();
      length = n;
    } else if (iequals(name, "Transfer-Encoding")) {
      if (!transfer_encoding)
        chunked = iequals(value, "chunked");  // the first such field, as the HTTP library reads it
      transfer_encoding = true;
    } else if (iequals(name, "Expect")) {
      expect_continue = iequals(value, "100-continue");
    }
  }
  if (transfer_encoding && !chunked) return unframed();
  if (chunked) {
    f.state = frame_chunks(bytes, body_start, max_body, f.size);
  } else if (length) {
    if (*length > max_body) return unframed();
    f.state = bytes.size() - body_start >= *length ? State::Complete : State::Incomplete;
    f.size = body_start + *length;
  } else {
    f.state = State::Complete;
    f.size = body_start;
  }
  if (f.state != State::Complete) f.size = 0;
  f.expects_continue = expect_continue && f.state == State::Incomplete;
  return f;
}

}  // namespace unif::app::serve
