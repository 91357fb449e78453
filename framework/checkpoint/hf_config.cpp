// hf_config: HF config.json <-> HfConfig. Reading checks the type of every key it uses and names
// the key on error; writing overlays the typed fields on `raw` and sorts keys with 2-space
// indentation, which is what HF's `to_json_file` (json.dumps(indent=2, sort_keys=True)) produces.
#include "framework/checkpoint/hf_config.h"

#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "framework/checkpoint/atomic_file.h"
#include "framework/common/error.h"
#include "framework/common/json_input.h"

namespace unif::framework {
namespace {

using nlohmann::json;

class ConfigReader {
 public:
  ConfigReader(const std::filesystem::path& file, const json& j) : file_(file), j_(j) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw UserError(file_.string() + ": key '" + key + "': " + what);
  }

  const json* find(const std::string& key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }

  template <typename Set>
  void integer(const std::string& key, Set set) const {
    if (const json* v = find(key)) {
      if (!v->is_number_integer()) fail(key, std::string("expected an integer, got ") + json_excerpt(*v));
      set(v->get<int64_t>());
    }
  }
  template <typename Set>
  void number(const std::string& key, Set set, bool nullable = false, double null_value = 0) const {
    if (const json* v = find(key)) {
      if (nullable && v->is_null()) return set(null_value);
      if (!v->is_number()) fail(key, std::string("expected a number, got ") + json_excerpt(*v));
      set(v->get<double>());
    }
  }
  template <typename Set>
  void string(const std::string& key, Set set, bool nullable = false) const {
    if (const json* v = find(key)) {
      if (nullable && v->is_null()) return set(std::string());
      if (!v->is_string()) fail(key, std::string("expected a string, got ") + json_excerpt(*v));
      set(v->get<std::string>());
    }
  }

 private:
  const std::filesystem::path& file_;
  const json& j_;
};

bool all_digits(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

HfConfig read_hf_config(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::error_code ec;
  if (!in || std::filesystem::is_directory(file, ec))
    throw UserError(file.string() + ": cannot read model config (expected a HF config.json)");
  HfConfig cfg;
  try {
    std::stringstream text;
    text << in.rdbuf();
    cfg.raw = parse_json(text.str());
  } catch (const JsonInputError& e) {
    throw UserError(file.string() + ": invalid JSON: " + e.what());
  }
  if (!cfg.raw.is_object()) throw UserError(file.string() + ": expected a JSON object at the top level");

  ConfigReader r(file, cfg.raw);
  auto& b = cfg.bert;
  r.integer("vocab_size", [&](int64_t v) { b.vocab_size(v); });
  r.integer("hidden_size", [&](int64_t v) { b.hidden_size(v); });
  r.integer("num_hidden_layers", [&](int64_t v) { b.num_hidden_layers(v); });
  r.integer("num_attention_heads", [&](int64_t v) { b.num_attention_heads(v); });
  r.integer("intermediate_size", [&](int64_t v) { b.intermediate_size(v); });
  r.string("hidden_act", [&](const std::string& v) { b.hidden_act(v); });
  r.number("hidden_dropout_prob", [&](double v) { b.hidden_dropout_prob(v); });
  r.number("attention_probs_dropout_prob", [&](double v) { b.attention_probs_dropout_prob(v); });
  r.integer("max_position_embeddings", [&](int64_t v) { b.max_position_embeddings(v); });
  r.integer("type_vocab_size", [&](int64_t v) { b.type_vocab_size(v); });
  r.number("initializer_range", [&](double v) { b.initializer_range(v); });
  r.number("layer_norm_eps", [&](double v) { b.layer_norm_eps(v); });
  if (const json* v = r.find("pad_token_id"); v == nullptr || !v->is_null())
    r.integer("pad_token_id", [&](int64_t x) { b.pad_token_id(x); });
  r.number("classifier_dropout", [&](double v) { b.classifier_dropout(v); }, /*nullable=*/true, -1.0);
  r.string("position_embedding_type", [&](const std::string& v) {
    if (v != "absolute") r.fail("position_embedding_type", "only \"absolute\" is supported, got \"" + v + "\"");
  });
  try {
    b.validate();
  } catch (const std::invalid_argument& e) {
    throw UserError(file.string() + ": " + e.what());
  }

  if (const json* v = r.find("architectures"); v && !v->is_null()) {
    if (!v->is_array()) r.fail("architectures", "expected a list of strings, got " + json_excerpt(*v));
    for (const auto& a : *v) {
      if (!a.is_string()) r.fail("architectures", "expected a list of strings, got " + json_excerpt(*v));
      cfg.architectures.push_back(a.get<std::string>());
    }
  }
  r.string("problem_type", [&](const std::string& v) { cfg.problem_type = v; }, /*nullable=*/true);
  if (!cfg.problem_type.empty() && cfg.problem_type != "single_label_classification" &&
      cfg.problem_type != "multi_label_classification" && cfg.problem_type != "regression")
    r.fail("problem_type", "expected single_label_classification, multi_label_classification or regression, got \"" +
                               cfg.problem_type + "\"");

  if (const json* v = r.find("id2label"); v && !v->is_null()) {
    if (!v->is_object()) r.fail("id2label", "expected an object {\"0\": \"label\", ...}, got " + json_excerpt(*v));
    cfg.id2label.assign(v->size(), std::string());
    std::vector<bool> seen(v->size(), false);
    for (const auto& [id, label] : v->items()) {
      if (!all_digits(id) || std::stoul(id) >= v->size())
        r.fail("id2label", "ids must be 0.." + std::to_string(v->size() - 1) + ", got \"" + id + "\"");
      if (!label.is_string()) r.fail("id2label", "label of id " + id + " must be a string, got " + json_excerpt(label));
      const size_t k = std::stoul(id);
      if (seen[k]) r.fail("id2label", "id " + std::to_string(k) + " appears twice");
      seen[k] = true;
      cfg.id2label[k] = label.get<std::string>();
    }
    cfg.num_labels = static_cast<int64_t>(cfg.id2label.size());
  }
  r.integer("num_labels", [&](int64_t v) {
    if (v <= 0) r.fail("num_labels", "must be > 0, got " + std::to_string(v));
    if (!cfg.id2label.empty() && v != cfg.num_labels)
      r.fail("num_labels", std::to_string(v) + " disagrees with the " + std::to_string(cfg.num_labels) +
                               " labels of id2label");
    cfg.num_labels = v;
  });
  return cfg;
}

void write_hf_config(const std::filesystem::path& file, const HfConfig& cfg) {
  json j = cfg.raw.is_object() ? cfg.raw : json::object();
  const auto& b = cfg.bert;
  j["model_type"] = "bert";
  j["vocab_size"] = b.vocab_size();
  j["hidden_size"] = b.hidden_size();
  j["num_hidden_layers"] = b.num_hidden_layers();
  j["num_attention_heads"] = b.num_attention_heads();
  j["intermediate_size"] = b.intermediate_size();
  j["hidden_act"] = b.hidden_act();
  j["hidden_dropout_prob"] = b.hidden_dropout_prob();
  j["attention_probs_dropout_prob"] = b.attention_probs_dropout_prob();
  j["max_position_embeddings"] = b.max_position_embeddings();
  j["type_vocab_size"] = b.type_vocab_size();
  j["initializer_range"] = b.initializer_range();
  j["layer_norm_eps"] = b.layer_norm_eps();
  j["pad_token_id"] = b.pad_token_id();
  j["classifier_dropout"] = b.classifier_dropout() < 0 ? json(nullptr) : json(b.classifier_dropout());
  if (!j.contains("position_embedding_type")) j["position_embedding_type"] = "absolute";

  if (cfg.architectures.empty()) j.erase("architectures");
  else j["architectures"] = cfg.architectures;
  if (cfg.problem_type.empty()) j.erase("problem_type");
  else j["problem_type"] = cfg.problem_type;
  if (cfg.id2label.empty()) {
    // HF derives default labels LABEL_0.. from num_labels.
    j.erase("id2label");
    j.erase("label2id");
  } else {
    json id2label = json::object(), label2id = json::object();
    for (size_t k = 0; k < cfg.id2label.size(); ++k) {
      id2label[std::to_string(k)] = cfg.id2label[k];
      label2id[cfg.id2label[k]] = k;
    }
    j["id2label"] = id2label;
    j["label2id"] = label2id;
  }
  j["num_labels"] = cfg.id2label.empty() ? cfg.num_labels : static_cast<int64_t>(cfg.id2label.size());
  std::string text;
  try {
    text = j.dump(2) + "\n";
  } catch (const json::exception& e) {
    throw UserError("cannot write " + file.string() + ": " + e.what());
  }
  detail::write_file_atomic(file, [&](std::ostream& out) { out << text; });
}

}  // namespace unif::framework
