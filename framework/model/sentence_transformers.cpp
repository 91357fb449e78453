#include "framework/model/sentence_transformers.h"

#include <array>
#include <utility>

#include <nlohmann/json.hpp>

#include "framework/checkpoint/atomic_file.h"
#include "framework/common/error.h"
#include "framework/common/json_input.h"
#include "framework/common/strings.h"

namespace unif::framework {

namespace fs = std::filesystem;

namespace {

// Pooling/config.json's flag of each of unif's pooling modes.
constexpr std::array<std::pair<const char*, const char*>, 4> kPoolingFlags{{{"mean", "pooling_mode_mean_tokens"},
                                                                            {"cls", "pooling_mode_cls_token"},
                                                                            {"max", "pooling_mode_max_tokens"},
                                                                            {"lasttoken", "pooling_mode_lasttoken"}}};
// Modes sentence-transformers has and unif does not.
constexpr std::array<const char*, 2> kOtherPoolingFlags{"pooling_mode_mean_sqrt_len_tokens",
                                                        "pooling_mode_weightedmean_tokens"};

bool ends_with_type(const nlohmann::json& module, const std::string& suffix) {
  if (!module.is_object() || !module.contains("type") || !module["type"].is_string()) return false;
  const std::string t = module["type"].get<std::string>();
  return t.size() >= suffix.size() && t.compare(t.size() - suffix.size(), suffix.size(), suffix) == 0;
}

nlohmann::json read_st_json(const fs::path& file) {
  try {
    return parse_json(read_file(file.string()));
  } catch (const JsonInputError& e) { throw UserError(file.string() + ": invalid JSON: " + e.what()); }
}

}  // namespace

std::optional<SentenceTransformersModules> read_sentence_transformers(const fs::path& dir) {
  std::error_code ec;
  const fs::path modules_file = dir / "modules.json";
  if (!fs::is_regular_file(modules_file, ec)) return std::nullopt;
  const nlohmann::json modules = read_st_json(modules_file);
  if (!modules.is_array())
    throw UserError(modules_file.string() + ": expected a list of sentence-transformers modules");
  SentenceTransformersModules out;
  for (const auto& m : modules) {
    if (ends_with_type(m, "models.Normalize")) out.normalize = true;
    if (!ends_with_type(m, "models.Pooling")) continue;
    const fs::path file = dir / m.value("path", std::string()) / "config.json";
    const nlohmann::json pooling = read_st_json(file);
    if (!pooling.is_object()) throw UserError(file.string() + ": expected a JSON object");
    std::vector<std::string> modes;
    for (const auto& [name, flag] : kPoolingFlags)
      if (pooling.value(flag, false)) modes.emplace_back(name);
    for (const char* flag : kOtherPoolingFlags)
      if (pooling.value(flag, false))
        throw UserError(file.string() + ": " + flag +
                        " is a pooling unif does not have (mean, cls, max, lasttoken): set model.pooling");
    if (modes.size() != 1)
      throw UserError(file.string() + ": expected one pooling mode, got " + std::to_string(modes.size()) +
                      " (unif pools one way: set model.pooling)");
    out.pooling = modes.front();
  }
  if (fs::is_regular_file(dir / "sentence_bert_config.json", ec)) {
    const nlohmann::json j = read_st_json(dir / "sentence_bert_config.json");
    if (j.is_object() && j.contains("max_seq_length") && j["max_seq_length"].is_number_integer())
      out.max_seq_length = j["max_seq_length"].get<int64_t>();
  }
  if (fs::is_regular_file(dir / "config_sentence_transformers.json", ec)) {
    const nlohmann::json j = read_st_json(dir / "config_sentence_transformers.json");
    if (j.is_object() && j.contains("similarity_fn_name") && j["similarity_fn_name"].is_string())
      out.similarity = j["similarity_fn_name"].get<std::string>();
  }
  return out;
}

void write_sentence_transformers(const fs::path& dir, const SentenceTransformersModules& m, int64_t dimension) {
  nlohmann::json modules = nlohmann::json::array();
  modules.push_back({{"idx", 0}, {"name", "0"}, {"path", ""}, {"type", "sentence_transformers.models.Transformer"}});
  modules.push_back(
      {{"idx", 1}, {"name", "1"}, {"path", "1_Pooling"}, {"type", "sentence_transformers.models.Pooling"}});
  if (m.normalize)
    modules.push_back(
        {{"idx", 2}, {"name", "2"}, {"path", "2_Normalize"}, {"type", "sentence_transformers.models.Normalize"}});
  detail::write_text_file_atomic(dir / "modules.json", modules.dump(2) + "\n");

  nlohmann::json pooling = {{"word_embedding_dimension", dimension}};
  const std::string mode = m.pooling.value_or("mean");
  for (const auto& [name, flag] : kPoolingFlags) pooling[flag] = mode == name;
  for (const char* flag : kOtherPoolingFlags) pooling[flag] = false;
  pooling["include_prompt"] = true;
  fs::create_directories(dir / "1_Pooling");
  detail::write_text_file_atomic(dir / "1_Pooling" / "config.json", pooling.dump(2) + "\n");
  if (m.normalize) fs::create_directories(dir / "2_Normalize");

  // do_lower_case false: the tokenizer lower-cases (tokenizer_config.json); sentence-transformers must not again.
  nlohmann::json bert = {{"max_seq_length", m.max_seq_length.value_or(128)}, {"do_lower_case", false}};
  detail::write_text_file_atomic(dir / "sentence_bert_config.json", bert.dump(2) + "\n");
  nlohmann::json config = {{"prompts", nlohmann::json::object()},
                           {"default_prompt_name", nullptr},
                           {"similarity_fn_name", m.similarity.empty() ? "cosine" : m.similarity}};
  detail::write_text_file_atomic(dir / "config_sentence_transformers.json", config.dump(2) + "\n");
}

}  // namespace unif::framework
