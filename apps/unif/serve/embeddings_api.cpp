// The TEI and OpenAI embedding routes' requests and answers: see embeddings_api.h.
#include "apps/unif/serve/embeddings_api.h"

#include <cmath>
#include <cstring>

#include "apps/unif/serve/request.h"

namespace unif::app::serve {

namespace {

EmbedRequest refuse(int status, std::string error, std::string param = "") {
  EmbedRequest r;
  r.status = status;
  r.error = std::move(error);
  r.param = std::move(param);
  return r;
}

}  // namespace

EmbedRequest decode_embed_request(EmbeddingApi api, std::string_view body, std::string_view content_type,
                                  size_t max_inputs) {
  const bool tei = api == EmbeddingApi::Tei;
  // TEI answers what it cannot read with 422 (axum's JSON rejection), OpenAI with 400.
  const int invalid = tei ? 422 : 400;
  JsonBody decoded = decode_json_body(body, content_type);
  if (decoded.status != 200) return refuse(decoded.status == 400 ? invalid : decoded.status, decoded.error);
  const nlohmann::json& j = decoded.value;
  const char* input_key = tei ? "inputs" : "input";
  if (!j.is_object() || !j.contains(input_key))
    return refuse(invalid,
                  std::string("expected a JSON object with \"") + input_key + "\": a string or a list of strings",
                  input_key);
  EmbedRequest r;
  const auto& input = j.at(input_key);
  if (input.is_string()) {
    r.texts.push_back(input.get<std::string>());
  } else if (input.is_array()) {
    for (const auto& t : input) {
      if (!t.is_string())
        return refuse(invalid,
                      std::string("\"") + input_key +
                          "\" must be a string or a list of strings (token ids are not taken: send the text)",
                      input_key);
      r.texts.push_back(t.get<std::string>());
    }
  } else {
    return refuse(invalid, std::string("\"") + input_key + "\" must be a string or a list of strings", input_key);
  }
  if (r.texts.empty()) return refuse(invalid, std::string("\"") + input_key + "\" cannot be empty", input_key);
  if (r.texts.size() > max_inputs)
    return refuse(
        tei ? 413 : 400,
        "batch size " + std::to_string(r.texts.size()) + " > maximum allowed batch size " + std::to_string(max_inputs),
        input_key);
  const auto flag = [&](const char* key, bool& out) -> bool {
    if (!j.contains(key) || j.at(key).is_null()) return true;
    if (!j.at(key).is_boolean()) return false;
    out = j.at(key).get<bool>();
    return true;
  };
  if (j.contains("dimensions") && !j.at("dimensions").is_null()) {
    const auto& d = j.at("dimensions");
    if (!d.is_number_integer() || d.get<int64_t>() < 1)
      return refuse(invalid, "\"dimensions\" must be a positive integer", "dimensions");
    r.dimensions = d.get<int64_t>();
  }
  if (tei) {
    bool truncate = false;
    if (!flag("normalize", r.normalize)) return refuse(invalid, "\"normalize\" must be true or false", "normalize");
    if (!flag("truncate", truncate)) return refuse(invalid, "\"truncate\" must be true or false", "truncate");
    if (j.contains("truncation_direction") && !j.at("truncation_direction").is_null()) {
      const auto& d = j.at("truncation_direction");
      if (!d.is_string() || (d != "right" && d != "Right"))
        return refuse(invalid, "\"truncation_direction\": only \"right\" is supported", "truncation_direction");
    }
    if (j.contains("prompt_name") && !j.at("prompt_name").is_null())
      return refuse(invalid, "\"prompt_name\": this model has no prompts", "prompt_name");
  } else {
    r.normalize = true;
    if (j.contains("model") && !j.at("model").is_null()) {
      if (!j.at("model").is_string()) return refuse(invalid, "\"model\" must be a string", "model");
      r.model = j.at("model").get<std::string>();
    }
    if (j.contains("encoding_format") && !j.at("encoding_format").is_null()) {
      const auto& f = j.at("encoding_format");
      if (f == "base64")
        r.base64 = true;
      else if (f != "float")
        return refuse(invalid, "\"encoding_format\" must be \"float\" or \"base64\"", "encoding_format");
    }
  }
  return r;
}

std::vector<float> shape_embedding(const std::vector<double>& embedding, int64_t dimensions, bool normalize) {
  size_t n = embedding.size();
  if (dimensions > 0 && static_cast<size_t>(dimensions) < n) n = static_cast<size_t>(dimensions);
  double norm = 0.0;
  for (size_t i = 0; i < n; ++i) norm += embedding[i] * embedding[i];
  norm = std::sqrt(norm);
  const double scale = normalize && norm > 0.0 ? 1.0 / std::max(norm, 1e-12) : 1.0;
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(embedding[i] * scale);
  return out;
}

std::string base64_encode(std::string_view bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    for (int s : {18, 12, 6, 0}) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  if (i < bytes.size()) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

nlohmann::json embed_answer(EmbeddingApi api, const EmbedRequest& request,
                            const std::vector<std::vector<float>>& embeddings, int64_t tokens) {
  if (api == EmbeddingApi::Tei) return embeddings;
  nlohmann::json data = nlohmann::json::array();
  for (size_t i = 0; i < embeddings.size(); ++i) {
    nlohmann::json e{{"object", "embedding"}, {"index", i}};
    if (request.base64) {
      // Little-endian float32, as OpenAI's clients decode it (numpy frombuffer, dtype float32).
      std::string raw(embeddings[i].size() * sizeof(float), '\0');
      for (size_t k = 0; k < embeddings[i].size(); ++k) {
        uint32_t bits = 0;
        std::memcpy(&bits, &embeddings[i][k], sizeof bits);
        for (int b = 0; b < 4; ++b) raw[k * 4 + static_cast<size_t>(b)] = static_cast<char>((bits >> (8 * b)) & 0xFF);
      }
      e["embedding"] = base64_encode(raw);
    } else {
      e["embedding"] = embeddings[i];
    }
    data.push_back(std::move(e));
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", request.model},
          {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
}

nlohmann::json embed_error(EmbeddingApi api, const std::string& message, const std::string& param) {
  if (api == EmbeddingApi::Tei) return {{"error", message}, {"error_type", "Validation"}};
  return {{"error",
           {{"message", message},
            {"type", "invalid_request_error"},
            {"param", param.empty() ? nlohmann::json() : nlohmann::json(param)},
            {"code", nullptr}}}};
}

}  // namespace unif::app::serve
