// hf_config: HF config.json <-> HfConfig. Reading checks the type of every key it uses and names
// the key on error; writing overlays the typed fields on `raw` and sorts keys with 2-space
// indentation, which is what HF's `to_json_file` (json.dumps(indent=2, sort_keys=True)) produces.
#include "framework/checkpoint/hf_config.h"

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "framework/checkpoint/atomic_file.h"
#include "framework/common/error.h"
#include "framework/config/did_you_mean.h"
#include "framework/common/json_input.h"
#include "models/architectures.h"
#include "models/hf_json.h"

namespace unif::framework {
namespace {

using nlohmann::json;

bool all_digits(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

namespace {

json read_config_object(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::error_code ec;
  if (!in || std::filesystem::is_directory(file, ec))
    throw UserError(file.string() + ": cannot read model config (expected a HF config.json)");
  json raw;
  try {
    std::stringstream text;
    text << in.rdbuf();
    raw = parse_json(text.str());
  } catch (const JsonInputError& e) { throw UserError(file.string() + ": invalid JSON: " + e.what()); }
  if (!raw.is_object()) throw UserError(file.string() + ": expected a JSON object at the top level");
  return raw;
}

/// The family of a config object (BERT without model_type); UserError naming the supported types.
const models::Architecture& family_of(const json& raw, const std::string& source) {
  const auto it = raw.find("model_type");
  if (it == raw.end()) return models::architecture("bert");
  const models::Architecture* arch = it->is_string() ? models::find_architecture(it->get<std::string>()) : nullptr;
  if (arch == nullptr)
    throw UserError(source + ": model_type is " + json_excerpt(*it) + ", expected " + models::supported_model_types() +
                    " (the supported model types)");
  return *arch;
}

// Keys of the task and its labels: set from the run's task and data, never by model.config.
const std::vector<std::string> kTaskKeys{"architectures", "id2label", "label2id", "num_labels", "problem_type"};

}  // namespace

HfConfig read_hf_config(const std::filesystem::path& file) {
  return hf_config_from_json(read_config_object(file), file.string());
}

namespace {

// Sets each field of `fields` over `raw` after the family (model_type of `fields`, else of `raw`)
// has read and type-checked it; `key` names the fields in messages ("model.config").
void set_config_fields(json& raw, const json& fields, const std::string& key) {
  for (const auto& k : kTaskKeys)
    if (fields.contains(k))
      throw UserError(key + "." + k +
                      ": the head and its labels come from `task` and the data (data.labels), not from " + key);
  const models::Architecture& arch = family_of(fields.contains("model_type") ? fields : raw, key);
  // The fields alone, read by the family: each value's type is checked and the family's fields collected.
  std::set<std::string> known{"model_type"};
  try {
    models::EncoderConfig scratch;
    arch.read_config(models::HfJson(fields, &known), scratch);
  } catch (const std::invalid_argument& e) { throw UserError(key + ": " + e.what()); }
  const std::vector<std::string> names(known.begin(), known.end());
  for (const auto& [name, value] : fields.items()) {
    if (known.count(name) == 0) {
      std::string list;
      for (const auto& f : names) list += (list.empty() ? "" : ", ") + f;
      throw UserError(key + "." + name + ": not a field unif reads from a " + arch.model_type + " config.json" +
                      did_you_mean(name, names) + "; its fields: " + list);
    }
    raw[name] = value;
  }
}

}  // namespace

HfConfig read_hf_config(const std::filesystem::path& file, const json& overrides) {
  if (!overrides.is_object() || overrides.empty()) return file.empty() ? HfConfig{} : read_hf_config(file);
  json raw = file.empty() ? json::object() : read_config_object(file);
  if (!file.empty() && overrides.contains("model_type"))
    throw UserError("model.config.model_type: the family is " + file.string() +
                    "'s; model.config overrides that model's fields (drop model_type)");
  set_config_fields(raw, overrides, "model.config");
  return hf_config_from_json(
      std::move(raw), file.empty() ? std::string("model.config") : file.string() + " with model.config's fields");
}

HfConfig with_config_fields(const HfConfig& base, const json& fields, const std::string& key) {
  json raw = hf_config_json(base);
  if (fields.is_object() && !fields.empty()) {
    if (fields.contains("model_type") && fields.at("model_type") != raw.at("model_type"))
      throw UserError(key + ".model_type: the family is " + raw.at("model_type").dump() + " (drop model_type)");
    set_config_fields(raw, fields, key);
  }
  return hf_config_from_json(std::move(raw), key);
}

HfConfig hf_config_from_json(json raw, const std::string& source) {
  if (!raw.is_object()) throw UserError(source + ": expected a JSON object at the top level");
  HfConfig cfg;
  cfg.raw = std::move(raw);
  const models::HfJson r(cfg.raw);
  // The family's row reads its keys (a config.json without model_type is BERT's).
  const models::Architecture* arch = &family_of(cfg.raw, source);
  auto& b = cfg.bert;
  b.model_type(arch->model_type);
  try {
    arch->read_config(r, b);
    arch->check_config(r, b);
    b.validate();
  } catch (const std::invalid_argument& e) { throw UserError(source + ": " + e.what()); }

  try {
    if (const json* v = r.find("architectures"); v && !v->is_null()) {
      if (!v->is_array()) r.fail("architectures", "expected a list of strings, got " + json_excerpt(*v));
      for (const auto& a : *v) {
        if (!a.is_string()) r.fail("architectures", "expected a list of strings, got " + json_excerpt(*v));
        cfg.architectures.push_back(a.get<std::string>());
      }
    }
    r.string(
        "problem_type", [&](const std::string& v) { cfg.problem_type = v; }, /*nullable=*/true);
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
        if (!label.is_string())
          r.fail("id2label", "label of id " + id + " must be a string, got " + json_excerpt(label));
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
        r.fail("num_labels",
               std::to_string(v) + " disagrees with the " + std::to_string(cfg.num_labels) + " labels of id2label");
      cfg.num_labels = v;
    });
  } catch (const std::invalid_argument& e) { throw UserError(source + ": " + e.what()); }
  return cfg;
}

json hf_config_json(const HfConfig& cfg) {
  json j = cfg.raw.is_object() ? cfg.raw : json::object();
  const auto& arch = models::architecture(cfg.bert.model_type());
  j["model_type"] = arch.model_type;
  arch.write_config(cfg.bert, j);

  if (cfg.architectures.empty())
    j.erase("architectures");
  else
    j["architectures"] = cfg.architectures;
  if (cfg.problem_type.empty())
    j.erase("problem_type");
  else
    j["problem_type"] = cfg.problem_type;
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
  return j;
}

void write_hf_config(const std::filesystem::path& file, const HfConfig& cfg) {
  const json j = hf_config_json(cfg);
  std::string text;
  try {
    text = j.dump(2) + "\n";
  } catch (const json::exception& e) { throw UserError("cannot write " + file.string() + ": " + e.what()); }
  detail::write_file_atomic(file, [&](std::ostream& out) { out << text; });
}

}  // namespace unif::framework
