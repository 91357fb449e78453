// `unif serve`'s request decoding: see request.h.
#include "apps/unif/serve/request.h"

#include <algorithm>
#include <cctype>

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

}  // namespace

PredictRequest decode_predict_request(std::string_view body, std::string_view content_type) {
  PredictRequest r;
  const auto type = media_type(content_type);
  if (!type.empty() && !is_json_type(type)) {
    r.status = 415;
    r.error = "Content-Type must be application/json, not '" + std::string(content_type.substr(0, 100)) + "'";
    return r;
  }
  nlohmann::json j;
  try {
    j = parse_json(body);
  } catch (const JsonInputError& e) {
    r.status = 400;
    r.error = std::string("invalid JSON: ") + e.what();
    return r;
  } catch (const std::exception& e) {  // nlohmann's own errors, should parse_json let one through
    r.status = 400;
    r.error = std::string("invalid JSON: ") + e.what();
    return r;
  }
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

}  // namespace unif::app::serve
